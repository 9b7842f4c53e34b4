package dev.sparkprof.agent;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;

/**
 * Samples an executor's PySpark workers with py-spy ({@code spark.sparkprof.python=true}): a
 * {@code py-spy record} a window on each worker the Python daemon forked (Spark starts the daemon as
 * {@code python -m pyspark.daemon}), or Spark started without a daemon ({@code python -m pyspark.worker}), every
 * thread's stack with its wall time ({@code --idle}), as a Chrome trace. A worker is found within a second of its
 * start. Each trace goes to the server like a JFR window, beside the executor's task runs of its time, which
 * attribute the worker's samples to tasks. py-spy never pauses the workers ({@code --nonblocking}), and at most
 * {@link #MAX_WORKERS} run at once.
 *
 * <p>One py-spy a worker, not one on the daemon with {@code --subprocesses}: py-spy's trace keys threads by their id
 * alone, which a forked worker's main thread shares with the daemon's, so their stacks would interleave.
 */
final class PythonSampler {
  /** What the daemon's command line has: Spark starts it as {@code python -m pyspark.daemon}. */
  static final String DAEMON = "pyspark.daemon";
  /** What a worker Spark starts without a daemon has ({@code spark.python.use.daemon=false}). */
  static final String WORKER = "pyspark.worker";
  /** The most workers sampled at once: an executor has one a running Python task. */
  static final int MAX_WORKERS = 64;

  /** The py-spy binary; null when the node has none. */
  private final String pySpy;
  private final long windowMs;
  private final int rate;
  private final Path dir;
  private final BiConsumer<Profiler.Window, Long> ship;
  private final TaskWindows tasks;
  private final PythonWorkerTasks workerTasks = new PythonWorkerTasks();
  final Thread thread;
  private volatile boolean stopping;
  /** The py-spy of each worker sampled, by the worker's pid; only the sampler's thread writes it. */
  private final Map<Long, Recording> recordings = new ConcurrentHashMap<>();

  /** One worker's py-spy in a window. */
  private static final class Recording {
    final Process process;
    final Path out;
    final long fromMs;

    Recording(Process process, Path out, long fromMs) {
      this.process = process;
      this.out = out;
      this.fromMs = fromMs;
    }
  }

  private PythonSampler(String pySpy, Config cfg, Path dir, TaskWindows tasks, BiConsumer<Profiler.Window, Long> ship) {
    this.pySpy = pySpy;
    this.tasks = tasks;
    this.windowMs = Math.max(1_000, cfg.millis("uploadInterval", 10_000));
    this.rate = (int) Math.max(1, Math.min(1_000, 1_000 / Math.max(1, cfg.millis("pythonInterval", 20))));
    this.dir = dir;
    this.ship = ship;
    this.thread = new Thread(this::run, "sparkprof-python");
    this.thread.setDaemon(true);
  }

  /**
   * Starts looking for Python workers when {@code python} is on, to sample them with py-spy
   * ({@code pySpy}, else on the PATH). When the node has no py-spy, the first worker found makes it say so once,
   * and the sampler ends. Finished windows go to ship with their deadline. The worker that serves each task is
   * noted on its run in tasks.
   */
  static PythonSampler start(Config cfg, Path dir, TaskWindows tasks, BiConsumer<Profiler.Window, Long> ship) {
    if (!cfg.bool("python")) {
      return null;
    }
    PythonSampler s = new PythonSampler(findPySpy(cfg.get("pySpy"), System.getenv("PATH")), cfg, dir, tasks, ship);
    s.thread.start();
    if (s.pySpy != null) {
      Log.info("sampling the Python workers with " + s.pySpy + " at " + s.rate + " Hz");
    }
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

  /**
   * The pids of the Python workers among this JVM's descendants: the processes the daemon forked, whose command line
   * is the daemon's, and workers started without a daemon.
   */
  static List<Long> workerPids() {
    return ProcessHandle.current().descendants()
        .filter(p -> commandLineHas(p, WORKER) || commandLineHas(p, DAEMON)
            && p.parent().map(parent -> commandLineHas(parent, DAEMON)).orElse(false))
        .map(ProcessHandle::pid)
        .collect(Collectors.toList());
  }

  private static boolean commandLineHas(ProcessHandle p, String s) {
    return p.info().commandLine().map(c -> c.contains(s)).orElse(false);
  }

  /** How often the sampler looks for new workers, and for py-spys that ended, in ms. */
  private static final long SCAN_MS = 1_000, POLL_MS = 100;

  private void run() {
    try {
      long nextScan = 0;
      while (!stopping) {
        shipEnded(false);
        workerTasks.resolve(recordings.keySet(), tasks::pythonWorker);
        long now = System.currentTimeMillis();
        if (now >= nextScan) {
          for (long pid : workerPids()) {
            if (pySpy == null) {
              Log.once("this executor runs Python workers, but py-spy is not on this node (set"
                  + " spark.sparkprof.pySpy to its path, or put it on the PATH: pip install py-spy); they are not"
                  + " sampled", null);
              return;
            }
            if (!recordings.containsKey(pid) && recordings.size() < MAX_WORKERS) {
              start(pid);
            }
          }
          nextScan = now + SCAN_MS;
        }
        sleep(POLL_MS);
      }
      // Stopping: stop interrupted the py-spys, which write what they have.
      for (long deadline = System.currentTimeMillis() + 10_000; !recordings.isEmpty()
          && System.currentTimeMillis() < deadline; ) {
        shipEnded(true);
        sleep(POLL_MS);
      }
    } catch (Throwable t) {
      Log.once("sampling the Python workers failed; the agent goes on without them", t);
    } finally {
      recordings.values().forEach(r -> r.process.destroyForcibly());
    }
  }

  /**
   * Starts a py-spy on worker pid for a window. Each worker's windows follow each other: the next starts as soon
   * as the last ends, so that a worker is sampled all but py-spy's start-up.
   */
  private void start(long pid) throws IOException {
    Path out = Files.createTempFile(dir, "python-" + pid + "-", ".json");
    long from = System.currentTimeMillis();
    Process p = new ProcessBuilder(pySpy, "record", "--pid", Long.toString(pid), "--idle", "--nonblocking",
        "--format", "chrometrace", "--rate", Integer.toString(rate),
        "--duration", Long.toString(Math.max(1, windowMs / 1_000)), "--output", out.toString())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .start();
    recordings.put(pid, new Recording(p, out, from));
  }

  /**
   * Ships the windows whose py-spy ended (with its duration, its worker's exit, or an interrupt), drops those
   * past their time, and, unless last, starts the next window of each worker still alive.
   */
  private void shipEnded(boolean last) throws IOException {
    for (Iterator<Map.Entry<Long, Recording>> it = recordings.entrySet().iterator(); it.hasNext(); ) {
      Map.Entry<Long, Recording> e = it.next();
      Recording r = e.getValue();
      long now = System.currentTimeMillis();
      if (r.process.isAlive()) {
        if (now > r.fromMs + windowMs + 10_000) {
          r.process.destroyForcibly();
          Files.deleteIfExists(r.out);
          it.remove();
          Log.once("py-spy did not end its window in time; the window is dropped", null);
        }
        continue;
      }
      it.remove();
      if (r.process.exitValue() != 0 || Files.size(r.out) == 0) {
        Files.deleteIfExists(r.out);
        if (r.process.exitValue() != 0 && ProcessHandle.of(e.getKey()).isPresent()) {
          Log.once("py-spy exited with " + r.process.exitValue() + " on the Python worker " + e.getKey() + " (can"
              + " it trace this user's processes? see ptrace in docs/agent.md); windows go on without its samples",
              null);
        }
        continue;
      }
      if (!last && !stopping && ProcessHandle.of(e.getKey()).map(ProcessHandle::isAlive).orElse(false)) {
        start(e.getKey());
      }
      Profiler.Window w = new Profiler.Window(r.out, r.fromMs, now);
      w.format = "chrometrace";
      ship.accept(w, now + windowMs);
    }
  }

  /**
   * Stops sampling: py-spy writes what it recorded when interrupted (SIGINT), as at the end of its duration;
   * the last window is shipped before this returns, or dropped at the deadline.
   */
  void stop(long deadline) {
    stopping = true;
    for (Recording r : recordings.values()) {
      try {
        new ProcessBuilder("kill", "-INT", Long.toString(r.process.pid())).start().waitFor(1, TimeUnit.SECONDS);
      } catch (IOException | RuntimeException e) {
        r.process.destroy();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
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
