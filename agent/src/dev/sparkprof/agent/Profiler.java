package dev.sparkprof.agent;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import jdk.jfr.Recording;

/**
 * Records with the JDK's Flight Recorder in windows: each window is its own recording, stopped and
 * dumped to a file when the next one starts, so that every upload holds only new data. Between two
 * windows the recorder is off for the time a recording takes to stop and start (about a millisecond
 * every upload interval).
 */
final class Profiler {
  private final Config cfg;
  private final Path dir;
  private Recording current;
  private long currentStartMs;
  private int seq;

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

  synchronized void start() {
    current = newRecording();
    current.start();
    currentStartMs = System.currentTimeMillis();
  }

  /**
   * Ends the current window and, unless last, starts the next one. Returns the ended window, or null when
   * nothing was recording.
   */
  synchronized Window rotate(boolean last) throws IOException {
    Recording ended = current;
    long from = currentStartMs;
    if (ended == null) {
      return null;
    }
    Recording next = last ? null : newRecording();
    long now = System.currentTimeMillis();
    ended.stop();
    if (next != null) {
      next.start();
    }
    current = next;
    currentStartMs = now;
    Path file = dir.resolve(String.format("window-%06d.jfr", seq++));
    try {
      ended.dump(file);
    } finally {
      ended.close();
    }
    return new Window(file, from, now);
  }

  synchronized void stop() {
    if (current != null) {
      current.close();
      current = null;
    }
  }

  private Recording newRecording() {
    Recording r = new Recording();
    r.setName("sparkprof");
    r.setToDisk(true);
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
