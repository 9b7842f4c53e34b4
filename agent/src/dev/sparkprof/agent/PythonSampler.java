package dev.sparkprof.agent;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Samples an executor's PySpark workers with py-spy ({@code spark.sparkprof.python=true}): one {@code py-spy record}
 * a window on the Python daemon the executor started ({@code python -m pyspark.daemon}) and the workers it forks,
 * every thread's stack with its wall time ({@code --idle}), as a Chrome trace. Each trace goes to the server like a
 * JFR window, beside the executor's task runs of its time, which attribute the workers' samples to tasks. One
 * py-spy runs at a time, bounded by the window; it never pauses the workers ({@code --nonblocking}).
 */
final class PythonSampler {
  /** What the daemon's command line has: Spark starts it as {@code python -m pyspark.daemon}. */
  static final String DAEMON = "pyspark.daemon";

  private final String pySpy;
  private final long windowMs;
  private final int rate;
  private final Path dir;
  private final BiConsumer<Profiler.Window, Long> ship;
  private final Thread thread;
  private volatile boolean stopping;
  private volatile Process recording;

  private PythonSampler(String pySpy, Config cfg, Path dir, BiConsumer<Profiler.Window, Long> ship) {
    this.pySpy = pySpy;
    this.windowMs = Math.max(1_000, cfg.millis("uploadInterval", 10_000));
    this.rate = (int) Math.max(1, Math.min(1_000, 1_000 / Math.max(1, cfg.millis("pythonInterval", 10))));
    this.dir = dir;
    this.ship = ship;
    this.thread = new Thread(this::run, "sparkprof-python");
    this.thread.setDaemon(true);
  }

  /**
   * Starts sampling when {@code python} is on and py-spy is found ({@code pySpy}, else on the PATH); says once why
   * not otherwise. Finished windows go to ship with their deadline.
   */
  static PythonSampler start(Config cfg, Path dir, BiConsumer<Profiler.Window, Long> ship) {
    if (!cfg.bool("python")) {
      return null;
    }
    String pySpy = findPySpy(cfg.get("pySpy"), System.getenv("PATH"));
    if (pySpy == null) {
      Log.once("spark.sparkprof.python is on, but py-spy is not on this node (set spark.sparkprof.pySpy to its"
          + " path, or put it on the PATH: pip install py-spy); the Python workers are not sampled", null);
      return null;
    }
    PythonSampler s = new PythonSampler(pySpy, cfg, dir, ship);
    s.thread.start();
    Log.info("sampling the Python workers with " + pySpy + " at " + s.rate + " Hz");
    return s;
  }

  /** The py-spy to run: the one configured, else the first executable {@code py-spy} on path; null if none. */
  static String findPySpy(String configured, String path) {
    if (configured != null) {
      return new File(configured).canExecute() ? configured : null;
    }
    if (path == null) {
      return null;
    }
    for (String d : path.split(File.pathSeparator)) {
      File f = new File(d.isEmpty() ? "." : d, "py-spy");
      if (f.isFile() && f.canExecute()) {
        return f.getPath();
      }
    }
    return null;
  }

  /** The pid of the Python daemon among this JVM's descendants, if Spark has started it. */
  static Optional<Long> daemonPid() {
    return ProcessHandle.current().descendants()
        .filter(p -> isDaemon(p) && !p.parent().map(PythonSampler::isDaemon).orElse(false)) // not a worker it forked
        .map(ProcessHandle::pid)
        .findFirst();
  }

  private static boolean isDaemon(ProcessHandle p) {
    return p.info().commandLine().map(c -> c.contains(DAEMON)).orElse(false);
  }

  private void run() {
    try {
      while (!stopping) {
        Optional<Long> daemon = daemonPid();
        if (daemon.isEmpty()) {
          sleep(1_000); // no Python task yet
          continue;
        }
        Profiler.Window w = record(daemon.get(), windowMs);
        if (w != null) {
          ship.accept(w, System.currentTimeMillis() + windowMs);
        }
      }
    } catch (Throwable t) {
      Log.once("sampling the Python workers failed; the agent goes on without them", t);
    }
  }

  /** Records the daemon and its workers for at most ms; returns the window, or null when py-spy wrote none. */
  private Profiler.Window record(long pid, long ms) throws IOException, InterruptedException {
    Path out = Files.createTempFile(dir, "python-", ".json");
    long from = System.currentTimeMillis();
    Process p = new ProcessBuilder(pySpy, "record", "--pid", Long.toString(pid), "--subprocesses", "--idle",
        "--nonblocking", "--format", "chrometrace", "--rate", Integer.toString(rate),
        "--duration", Long.toString(Math.max(1, ms / 1_000)), "--output", out.toString())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .start();
    recording = p;
    if (!p.waitFor(ms + 10_000, TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      Log.once("py-spy did not end its window in time; the window is dropped", null);
    }
    recording = null;
    long until = System.currentTimeMillis();
    if (p.exitValue() != 0 || Files.size(out) == 0) {
      Files.deleteIfExists(out);
      if (!stopping && daemonPid().isPresent()) {
        Log.once("py-spy exited with " + p.exitValue() + " on the Python daemon " + pid + " (can it trace this"
            + " user's processes? see ptrace in docs/agent.md); windows without Python samples", null);
        sleep(windowMs);
      }
      return null;
    }
    Profiler.Window w = new Profiler.Window(out, from, until);
    w.format = "chrometrace";
    return w;
  }

  /**
   * Stops sampling: py-spy writes what it recorded when interrupted (SIGINT), as at the end of its duration;
   * the last window is shipped before this returns, or dropped at the deadline.
   */
  void stop(long deadline) {
    stopping = true;
    Process p = recording;
    if (p != null) {
      try {
        new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor(1, TimeUnit.SECONDS);
      } catch (IOException | RuntimeException e) {
        p.destroy();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try {
      thread.join(Math.max(1, deadline - System.currentTimeMillis()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      stopping = true;
    }
  }
}
