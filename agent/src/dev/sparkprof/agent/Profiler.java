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
    int depth = cfg.integer("stackDepth", STACK_DEPTH);
    if (depth > 0) {
      StackDepth.raise(depth);
    }
    begin(nextFile());
  }

  /**
   * The Flight Recorder's stack depth the agent sets by default ({@code stackDepth}; 0 keeps the JVM's):
   * whole stacks of Spark's deep ones, as async-profiler's 2,048 keeps them, for a little more of the
   * recorder's memory per thread.
   */
  static final int STACK_DEPTH = 512;

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
   * nothing was recording. A next window that cannot start is reported once; profiling then stops, and the
   * ended window is still returned.
   */
  synchronized Window rotate(boolean last) throws IOException {
    if (currentFile == null) {
      return null;
    }
    Recording ended = current;
    Path file = currentFile, jfrFile = currentJfrFile;
    long from = currentStartMs, now = System.currentTimeMillis();
    currentFile = null;
    try {
      end(ended);
      if (async != null) {
        async.stop();
      }
    } finally {
      if (!last) {
        beginNext();
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
   * Starts the next window, unless the JVM is exiting; a failure is reported once. Once the JVM exits, the
   * Flight Recorder's own shutdown hook may have ended the recorder, and a recording started then waits for it
   * forever.
   */
  private void beginNext() {
    if (exiting()) {
      return;
    }
    try {
      begin(nextFile());
    } catch (IOException | RuntimeException e) {
      Log.once("the next window cannot start; profiling stops", e);
    }
  }

  /** Reports whether the JVM's shutdown has begun: it then refuses new shutdown hooks. */
  static boolean exiting() {
    Thread probe = new Thread(() -> { });
    try {
      Runtime.getRuntime().addShutdownHook(probe);
      Runtime.getRuntime().removeShutdownHook(probe);
      return false;
    } catch (IllegalStateException e) {
      return true;
    }
  }

  /**
   * Ends a Flight Recorder recording (if any), which writes it to its destination. Closing a running
   * recording stops it and writes it while holding the recorder's lock throughout. Stopping it first would
   * write it after releasing the lock, and at JVM exit the recorder's own shutdown hook, which takes that
   * lock to end every recording and delete their chunks, could delete them in between ("Missing
   * chunkfile"). Whichever comes first, this close or the hook, writes the whole recording: the hook stops
   * a running recording and writes it to its destination the same way.
   */
  private static void end(Recording r) {
    if (r != null) {
      r.close();
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
    r.setDestination(file); // not dumped on exit: the recorder's hook writes it there anyway (see end)
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
   * Whether file holds whole JFR chunks, one after the other, and at least one. A recorder that failed to
   * write a window (its disk full, its chunks deleted) leaves the file empty or cut: such a window is
   * dropped, not sent as a recording the server cannot read.
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
