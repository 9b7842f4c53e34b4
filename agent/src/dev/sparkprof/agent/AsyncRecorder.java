package dev.sparkprof.agent;

import java.nio.file.Path;

/**
 * async-profiler, used instead of the Flight Recorder for CPU, allocation and lock samples when its
 * library is configured ({@code asyncProfiler=/path/to/libasyncProfiler.so}): it samples with signals
 * instead of suspending threads, and writes each window as a JFR file the server reads like any other.
 *
 * <p>No async-profiler class is needed: the library binds its commands to the native methods of the class
 * that loads it (as it does for its own, shaded, API class), so this class loads it and declares the one
 * native method it uses.
 */
final class AsyncRecorder {
  private final String settings;

  private AsyncRecorder(String settings) {
    this.settings = settings;
  }

  /** The library runs a command of its agent syntax and returns what it printed. */
  private native String execute0(String command);

  /**
   * Loads the library at path and checks that it answers, for windows written under dir. Throws when it
   * cannot be loaded (missing, built for another platform, already loaded by another class loader) or
   * predates binding to its loader, or when dir's path has a comma, which its commands cannot hold.
   */
  static AsyncRecorder load(String path, Config cfg, Path dir) {
    if (dir.toString().indexOf(',') >= 0) {
      throw new IllegalArgumentException("the agent's directory " + dir + " has a comma");
    }
    System.load(path);
    AsyncRecorder r = new AsyncRecorder(settings(cfg));
    r.execute0("status");
    return r;
  }

  /** Whether the configured events include one async-profiler records: cpu, wall, alloc or lock. */
  static boolean hasSampleEvents(Config cfg) {
    return cfg.hasEvent("cpu") || cfg.hasEvent("wall") || cfg.hasEvent("alloc") || cfg.hasEvent("lock");
  }

  /**
   * The profiling part of a start command for the configured events: {@code cpu} and {@code wall} at the
   * sampling interval, {@code alloc} every 512 KiB allocated, {@code lock} above the lock threshold. Its JFR
   * output also has heap after GC and CPU load (since async-profiler 2.10), unless {@code jfropts} 8 and 16
   * turn them off: they are the {@code gc} event's.
   */
  private static String settings(Config cfg) {
    long interval = Math.max(1, cfg.millis("interval", 10));
    StringBuilder b = new StringBuilder();
    if (cfg.hasEvent("cpu")) {
      b.append(",event=cpu,interval=").append(interval).append("ms");
    }
    if (cfg.hasEvent("wall")) {
      b.append(",wall=").append(Math.max(interval, 20)).append("ms");
    }
    if (cfg.hasEvent("alloc")) {
      b.append(",alloc=512k");
    }
    if (cfg.hasEvent("lock")) {
      b.append(",lock=").append(cfg.millis("lockThreshold", 10)).append("ms");
    }
    if (!cfg.hasEvent("gc")) {
      b.append(",jfropts=24");
    }
    return b.toString();
  }

  /** Starts recording a window into file. */
  void start(Path file) {
    execute0("start" + settings + ",jfr,file=" + file);
  }

  /** Stops recording; the window's file is complete when this returns. */
  void stop() {
    execute0("stop");
  }
}
