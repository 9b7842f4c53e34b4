package dev.sparkprof.agent;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;

/**
 * Records in windows: each window is its own recording, written to its own file when stopped, so that
 * every upload holds only new data. The next window starts right after the previous one stops (the
 * recorder is off for a few milliseconds every upload interval). The JDK's Flight Recorder records
 * everything, unless async-profiler is configured: then async-profiler records the samples (CPU, wall,
 * allocation, locks), heap after GC and CPU load, and garbage collections come from the JVM's notifications
 * ({@link GcPauses}, shipped beside the window), so that the Flight Recorder does not start at all. Only
 * when windows are also kept for {@code outputDir}, whose files have nothing beside them, does the Flight
 * Recorder record the collections, its chunk appended to async-profiler's file. Flight Recorder windows are
 * also written at JVM exit by the recorder's own shutdown hook, which may run before the agent's.
 */
final class Profiler {
  private final Config cfg;
  private final Path dir;
  private AsyncRecorder async; // null: the Flight Recorder records the samples too
  private Recording current; // null when the window has no Flight Recorder part
  private Path currentFile; // the window's file; null when nothing is recording
  private Path currentJfrFile; // the Flight Recorder part's, beside async-profiler's
  private long currentStartMs;
  private int seq;
  private boolean closed;

  /**
   * A finished window: its JFR file and time range, and the parts the agent sends beside it (task windows,
   * garbage collections; null when none), taken when the window ends so that a retried upload sends them too.
   */
  static final class Window {
    final Path file;
    final long fromMs, untilMs;
    String tasks, gc;
    /** The recording's format as the server's {@code /ingest} names it: a JFR file, or py-spy's Chrome trace. */
    String format = "jfr";
    /** Names the window on every attempt to send it, so that the server stores a retry once. */
    String key;

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

  /**
   * Starts the first window, unless stop came first. A configured async-profiler that cannot be used is
   * reported once, and the Flight Recorder records everything instead.
   */
  synchronized void start() throws IOException {
    if (closed) {
      return;
    }
    String lib = cfg.get("asyncProfiler");
    if (lib != null && AsyncRecorder.hasSampleEvents(cfg)) {
      try {
        async = AsyncRecorder.load(lib, cfg, dir);
        begin(nextFile());
        Log.info("async-profiler " + lib + " records the samples"
            + (gcFromNotifications() ? "; garbage collections come from the JVM's notifications" : ""));
        return;
      } catch (Throwable t) {
        async = null;
        Log.once("async-profiler " + lib + " cannot be used; the Flight Recorder records the samples instead", t);
      }
    }
    begin(nextFile());
  }

  /** Starts recording a window into file. */
  private void begin(Path file) throws IOException {
    currentJfrFile = null;
    current = null;
    if (async != null) {
      async.start(file); // first: if it fails, nothing else has started
    }
    try {
      if (async == null) {
        current = newRecording(file, true);
      } else if (gcFromFlightRecorder()) {
        currentJfrFile = file.resolveSibling(file.getFileName() + ".gc");
        current = newRecording(currentJfrFile, false);
      }
      if (current != null) {
        current.start();
      }
    } catch (IOException | RuntimeException e) {
      if (async != null) {
        async.stop();
      }
      throw e;
    }
    currentFile = file;
    currentStartMs = System.currentTimeMillis();
  }

  /**
   * Whether, with async-profiler recording the samples, the Flight Recorder records garbage collections:
   * only for windows kept for {@code outputDir}, which must hold everything in their one file.
   */
  private boolean gcFromFlightRecorder() {
    return cfg.hasEvent("gc") && cfg.get("outputDir") != null;
  }

  /**
   * Whether garbage collections come from the JVM's notifications: async-profiler records the samples and
   * the Flight Recorder does not run.
   */
  synchronized boolean gcFromNotifications() {
    return async != null && cfg.hasEvent("gc") && !gcFromFlightRecorder();
  }

  private Path nextFile() {
    return dir.resolve(String.format("window-%06d.jfr", seq++));
  }

  /**
   * Ends the current window and, unless last, starts the next one. Returns the ended window, or null when
   * nothing was recording. When the JVM's exit stopped the recording first, it waits until deadline (Unix ms)
   * at most for the Flight Recorder to write it.
   */
  synchronized Window rotate(boolean last, long deadline) throws IOException {
    if (currentFile == null) {
      return null;
    }
    Recording ended = current;
    Path file = currentFile, jfrFile = currentJfrFile;
    long from = currentStartMs, now = System.currentTimeMillis();
    currentFile = null;
    try {
      end(ended, async != null ? jfrFile : file, deadline);
      if (async != null) {
        async.stop();
      }
    } finally {
      if (!last) {
        begin(nextFile());
      }
    }
    if (jfrFile != null && Files.exists(jfrFile)) {
      // A JFR file may hold several chunks: the Flight Recorder's follows async-profiler's.
      try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.APPEND)) {
        Files.copy(jfrFile, out);
      }
      Files.delete(jfrFile);
    }
    if (!Files.exists(file)) {
      throw new IOException("the recorder wrote no data for " + file);
    }
    return new Window(file, from, now);
  }

  /**
   * Stops and closes a Flight Recorder recording (if any), which writes it to file; one the JVM's exit stopped
   * first is waited for until deadline.
   */
  private static void end(Recording r, Path file, long deadline) {
    if (r == null) {
      return;
    }
    if (atExit() && leftToRecorderHook(r, deadline)) {
      return;
    }
    try {
      r.stop();
    } catch (IllegalStateException e) {
      // At JVM exit the recorder's own shutdown hook may have stopped the recording first. It writes the
      // destination file itself, after it marks the recording stopped: closing the recording now would
      // delete the chunks it is still copying ("Missing chunkfile"), and cut the file. The recording is left
      // to the hook, which ends them all.
      awaitWhole(file, deadline);
      return;
    }
    r.close();
  }

  /** The name of the thread of the Flight Recorder's own shutdown hook. */
  private static final String RECORDER_HOOK = "JFR Shutdown Hook";

  /** Whether the JVM is exiting: its shutdown hooks run, and no more can be added. */
  static boolean atExit() {
    Thread probe = new Thread(() -> {}, "sparkprof-exit-probe");
    try {
      Runtime.getRuntime().addShutdownHook(probe);
      Runtime.getRuntime().removeShutdownHook(probe);
      return false;
    } catch (IllegalStateException e) {
      return true;
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * At JVM exit, leaves the running recording r to the Flight Recorder's own shutdown hook, which stops it,
   * writes it to its destination (it dumps on exit) and closes it: stopping it here instead races the hook,
   * which deletes the recorder's chunks as it ends while this stop would still be copying them ("Missing
   * chunkfile"). Waits, until deadline (Unix ms) at most, for the hook to start and end. Returns false when the
   * hook never ended the recording, which is then the caller's to stop.
   */
  private static boolean leftToRecorderHook(Recording r, long deadline) {
    try {
      while (System.currentTimeMillis() < deadline) {
        Thread hook = recorderHook();
        if (hook != null) {
          hook.join(Math.max(1, deadline - System.currentTimeMillis()));
          return !hook.isAlive();
        }
        if (r.getState() != RecordingState.RUNNING) {
          return true; // the hook has ended it already
        }
        Thread.sleep(10);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return r.getState() != RecordingState.RUNNING;
  }

  /** The Flight Recorder's shutdown hook's thread while it runs, or null. */
  private static Thread recorderHook() {
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (RECORDER_HOOK.equals(t.getName()) && t.isAlive()) {
        return t;
      }
    }
    return null;
  }

  /** Waits until file holds whole chunks and stops growing, at most until deadline (Unix ms). */
  private static void awaitWhole(Path file, long deadline) {
    long last = -1;
    try {
      while (System.currentTimeMillis() < deadline) {
        long size = Files.exists(file) ? Files.size(file) : -1;
        if (size > 0 && size == last && wholeRecording(file)) {
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
    if (currentFile != null && async != null) {
      try {
        async.stop();
      } catch (Throwable t) {
        Log.once("stopping async-profiler failed", t);
      }
    }
    currentFile = null;
  }

  /**
   * A Flight Recorder recording of the configured events; with samples false, only garbage collections
   * (async-profiler records the rest).
   */
  private Recording newRecording(Path file, boolean samples) throws IOException {
    Recording r = new Recording();
    r.setName("sparkprof");
    r.setToDisk(true);
    r.setDestination(file);
    r.setDumpOnExit(true);
    long interval = Math.max(1, cfg.millis("interval", 10));
    long lock = cfg.millis("lockThreshold", 10);
    if (samples && cfg.hasEvent("cpu")) {
      r.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(interval));
      // Threads in native code (I/O, sockets): the wall time CPU samples miss.
      r.enable("jdk.NativeMethodSample").withPeriod(Duration.ofMillis(Math.max(20, 2 * interval)));
    }
    if (samples && cfg.hasEvent("alloc")) {
      if (Runtime.version().feature() >= 16) {
        r.enable("jdk.ObjectAllocationSample").with("throttle", "150/s");
      } else {
        r.enable("jdk.ObjectAllocationOutsideTLAB");
        r.enable("jdk.ObjectAllocationInNewTLAB");
      }
    }
    if (samples && cfg.hasEvent("lock")) {
      r.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ofMillis(lock));
      r.enable("jdk.ThreadPark").withThreshold(Duration.ofMillis(lock));
    }
    if (cfg.hasEvent("gc")) {
      r.enable("jdk.GarbageCollection");
      if (samples) {
        r.enable("jdk.GCHeapSummary");
        r.enable("jdk.CPULoad").withPeriod(Duration.ofSeconds(1));
      }
    }
    return r;
  }

  /** The size of a JFR chunk header's fixed part: magic, version, chunk size, and the rest. */
  private static final int CHUNK_HEADER = 68;

  /**
   * Whether file holds whole JFR chunks, one after the other, and at least one. At JVM exit the Flight
   * Recorder's own shutdown hook races the agent's, and can fail to write a window ("Missing chunkfile") and
   * leave its file empty or cut: such a window is dropped, not sent as a recording the server cannot read.
   */
  static boolean wholeRecording(Path file) {
    try (FileChannel ch = FileChannel.open(file)) {
      long size = ch.size();
      ByteBuffer hdr = ByteBuffer.allocate(16); // big-endian, as JFR writes its header
      long off = 0;
      while (off < size) {
        if (size - off < CHUNK_HEADER) {
          return false;
        }
        hdr.clear();
        while (hdr.hasRemaining()) {
          if (ch.read(hdr, off + hdr.position()) < 0) {
            return false;
          }
        }
        long chunk = hdr.getLong(8);
        if (hdr.getInt(0) != 0x464c5200 || chunk < CHUNK_HEADER || chunk > size - off) { // "FLR\0"
          return false;
        }
        off += chunk;
      }
      return size > 0;
    } catch (IOException | RuntimeException e) {
      return false;
    }
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
