package dev.sparkprof.agent;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import jdk.jfr.Recording;

/**
 * Records with the JDK's Flight Recorder in windows: each window is its own recording, written to its
 * own file when stopped, so that every upload holds only new data. The next window starts right after
 * the previous one stops (the recorder is off for about a millisecond every upload interval). Windows
 * are also written at JVM exit by the recorder's own shutdown hook, which may run before the agent's.
 */
final class Profiler {
  private final Config cfg;
  private final Path dir;
  private Recording current;
  private Path currentFile;
  private long currentStartMs;
  private int seq;
  private boolean closed;

  /** A finished window: its JFR file and time range. */
  static final class Window {
    final Path file;
    final long fromMs, untilMs;

    Window(Path file, long fromMs, long untilMs) {
      this.file = file;
      this.fromMs = fromMs;
      this.untilMs = untilMs;
    }
  }

  Profiler(Config cfg, Path dir) {
    this.cfg = cfg;
    this.dir = dir;
  }

  /** Starts the first window, unless stop came first. */
  synchronized void start() throws IOException {
    if (closed) {
      return;
    }
    currentFile = nextFile();
    current = newRecording(currentFile);
    current.start();
    currentStartMs = System.currentTimeMillis();
  }

  private Path nextFile() {
    return dir.resolve(String.format("window-%06d.jfr", seq++));
  }

  /**
   * Ends the current window and, unless last, starts the next one. Returns the ended window, or null when
   * nothing was recording.
   */
  synchronized Window rotate(boolean last) throws IOException {
    Recording ended = current;
    Path file = currentFile;
    long from = currentStartMs;
    if (ended == null) {
      return null;
    }
    Path nextFile = last ? null : nextFile();
    Recording next = last ? null : newRecording(nextFile);
    long now = System.currentTimeMillis();
    try {
      // Stopping writes the window to its destination file.
      ended.stop();
    } catch (IllegalStateException e) {
      // At JVM exit the recorder's own shutdown hook may have stopped the
      // recording first; it writes the destination file itself.
      awaitFile(file, 3_000);
    } finally {
      ended.close();
    }
    if (next != null) {
      next.start();
    }
    current = next;
    currentFile = nextFile;
    currentStartMs = now;
    if (!Files.exists(file)) {
      throw new IOException("the recorder wrote no data for " + file);
    }
    return new Window(file, from, now);
  }

  /** Waits until file exists and stops growing, at most timeoutMs. */
  private static void awaitFile(Path file, long timeoutMs) {
    long deadline = System.currentTimeMillis() + timeoutMs;
    long last = -1;
    try {
      while (System.currentTimeMillis() < deadline) {
        long size = Files.exists(file) ? Files.size(file) : -1;
        if (size > 0 && size == last) {
          return;
        }
        last = size;
        Thread.sleep(50);
      }
    } catch (IOException | InterruptedException e) {
      Log.once("waiting for the last window failed", e);
    }
  }

  synchronized void stop() {
    closed = true;
    if (current != null) {
      current.close();
      current = null;
    }
  }

  private Recording newRecording(Path file) throws IOException {
    Recording r = new Recording();
    r.setName("sparkprof");
    r.setToDisk(true);
    r.setDestination(file);
    r.setDumpOnExit(true);
    long interval = Math.max(1, cfg.millis("interval", 10));
    long lock = cfg.millis("lockThreshold", 10);
    if (cfg.hasEvent("cpu")) {
      r.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(interval));
      // Threads in native code (I/O, sockets): the wall time CPU samples miss.
      r.enable("jdk.NativeMethodSample").withPeriod(Duration.ofMillis(Math.max(20, 2 * interval)));
    }
    if (cfg.hasEvent("alloc")) {
      if (Runtime.version().feature() >= 16) {
        r.enable("jdk.ObjectAllocationSample").with("throttle", "150/s");
      } else {
        r.enable("jdk.ObjectAllocationOutsideTLAB");
        r.enable("jdk.ObjectAllocationInNewTLAB");
      }
    }
    if (cfg.hasEvent("lock")) {
      r.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ofMillis(lock));
      r.enable("jdk.ThreadPark").withThreshold(Duration.ofMillis(lock));
    }
    if (cfg.hasEvent("gc")) {
      r.enable("jdk.GarbageCollection");
      r.enable("jdk.GCHeapSummary");
      r.enable("jdk.CPULoad").withPeriod(Duration.ofSeconds(1));
    }
    return r;
  }

  /** Deletes a window's file. */
  static void delete(Window w) {
    try {
      Files.deleteIfExists(w.file);
    } catch (IOException e) {
      Log.once("cannot delete " + w.file, e);
    }
  }
}
