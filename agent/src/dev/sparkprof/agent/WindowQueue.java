package dev.sparkprof.agent;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The recorded windows the agent holds on to: those waiting to be sent to the server and those kept for the
 * output file, each oldest first. Each list is bounded by {@code maxQueuedBytes}: beyond it the oldest windows
 * are dropped and counted, so that a dead server or a long run costs the job a bounded amount of disk. A
 * window's file is deleted once neither list holds it. Callers hold one lock around every call.
 */
final class WindowQueue {
  private final long maxBytes;
  private final Deque<Profiler.Window> pending = new ArrayDeque<>();
  private final Deque<Profiler.Window> kept = new ArrayDeque<>();
  /** Windows dropped so far: beyond the bound, or not whole recordings; read by other threads. */
  final AtomicLong dropped = new AtomicLong();

  WindowQueue(long maxBytes) {
    this.maxBytes = maxBytes;
  }

  /**
   * Adds w to the windows waiting to be sent (send) and to those kept for the output file (keep), then drops the
   * oldest windows of each list while it holds more than the bound; the newest window always stays.
   */
  void add(Profiler.Window w, boolean send, boolean keep) {
    if (send) {
      pending.add(w);
    }
    if (keep) {
      kept.add(w);
    }
    bound();
    release(w);
  }

  /** Counts w as dropped and deletes its file: a window that is not queued at all. */
  void discard(Profiler.Window w) {
    dropped.incrementAndGet();
    Profiler.delete(w);
  }

  /** The oldest window waiting to be sent, or null when none waits. */
  Profiler.Window next() {
    return pending.peek();
  }

  /** Removes w, the oldest window waiting to be sent, once the server took it (or refused it for good). */
  void sent(Profiler.Window w) {
    pending.remove(w);
    release(w);
  }

  /** The windows kept for the output file, oldest first. */
  List<Profiler.Window> kept() {
    return List.copyOf(kept);
  }

  /** Drops the oldest windows of each list while it holds more than maxBytes. */
  private void bound() {
    for (Deque<Profiler.Window> q : List.of(pending, kept)) {
      long size = 0;
      for (Profiler.Window w : q) {
        size += w.file.toFile().length();
      }
      while (size > maxBytes && q.size() > 1) {
        Profiler.Window old = q.poll();
        size -= old.file.toFile().length();
        dropped.incrementAndGet();
        Log.once("dropping the oldest profile windows: more than " + maxBytes
            + " bytes wait (server down or output too big)", null);
        release(old);
      }
    }
  }

  /** Deletes w's file unless a list still holds it. */
  private void release(Profiler.Window w) {
    if (!pending.contains(w) && !kept.contains(w)) {
      Profiler.delete(w);
    }
  }
}
