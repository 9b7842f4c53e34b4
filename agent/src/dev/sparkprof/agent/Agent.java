package dev.sparkprof.agent;

import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The sparkprof JVM agent: profiles this JVM with the JDK's Flight Recorder and ships each window to a
 * sparkprof (or Pyroscope) server, and/or writes the whole recording to an output directory at exit. It
 * starts from {@code -javaagent:sparkprof-agent.jar[=options]} or from the Spark plugin. This class is its
 * lifecycle: it starts once per JVM, runs the one thread that ends a {@link Profiler} window every upload
 * interval, puts the window in the {@link WindowQueue}, sends what waits with the {@link Uploader}, and at stop
 * ships the last window and writes the {@link OutputFile}. Nothing it does may hurt the job: every error is
 * logged once and swallowed, its threads are daemons, the data it holds is bounded (the oldest windows are
 * dropped and counted), and it never blocks a task thread.
 */
public final class Agent {
  private static Agent instance;

  final Config cfg;
  final Labels labels = new Labels();
  final TaskWindows tasks = new TaskWindows();
  private GcPauses gcPauses; // set when garbage collections come from the JVM's notifications
  private final String app, role, executorId;
  private final Path workDir;
  private final Profiler profiler;
  private volatile PythonSampler python; // null unless an executor samples its Python workers
  private final WindowQueue queue;
  private final Uploader uploader; // null without a server
  private final OutputFile output; // null without an output directory
  private final Object wake = new Object();
  private Thread shipper;
  private volatile boolean stopping;
  private boolean stopped;

  /** Entry point of {@code -javaagent:sparkprof-agent.jar=key=value,...}. */
  public static void premain(String options, Instrumentation inst) {
    try {
      Config cfg = new Config();
      cfg.parseOptions(options);
      cfg.parseEnv(System.getenv());
      String[] who = fromCommandLine(System.getProperty("sun.java.command", ""));
      String role = cfg.get("executorId") != null ? "executor" : who[0];
      Agent a = start(cfg, role, first(cfg.get("appId"), who[1]), cfg.get("appName"), first(cfg.get("executorId"), who[2]));
      if (a != null) {
        a.labels.put("host", commandLineArg(System.getProperty("sun.java.command", ""), "--hostname"));
        a.stopAtExit(Math.max(0, cfg.millis("stopWait", 5_000)));
      }
    } catch (Throwable t) {
      Log.once("agent failed to start", t);
    }
  }

  /** Entry point when attached to a running JVM. */
  public static void agentmain(String options, Instrumentation inst) {
    premain(options, inst);
  }

  /**
   * Reads role, app id and executor id from the JVM's main class and arguments, as Spark starts executors:
   * {@code CoarseGrainedExecutorBackend ... --executor-id 3 ... --app-id app-123} (YARN's
   * YarnCoarseGrainedExecutorBackend and Kubernetes' KubernetesExecutorBackend too).
   */
  static String[] fromCommandLine(String command) {
    String[] args = command.trim().split("\\s+");
    String role = "driver", appId = null, exec = null;
    if (args.length > 0 && args[0].endsWith("ExecutorBackend")) {
      role = "executor";
    } else if (args.length > 0 && !args[0].contains("spark")) {
      role = "jvm";
    }
    appId = commandLineArg(command, "--app-id");
    exec = commandLineArg(command, "--executor-id");
    return new String[] {role, appId, "driver".equals(role) ? "driver" : exec};
  }

  /** The value after the argument named name in a JVM's command line, or null. */
  static String commandLineArg(String command, String name) {
    String[] args = command.trim().split("\\s+");
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals(name)) {
        return args[i + 1];
      }
    }
    return null;
  }

  private static String first(String a, String b) {
    return a != null ? a : b;
  }

  /**
   * Starts the agent once per JVM; a second start (the Spark plugin after the javaagent) only adds what it
   * knows to the labels. Returns null when profiling is off for this JVM.
   */
  static synchronized Agent start(Config cfg, String role, String appId, String appName, String executorId) {
    if (instance != null) {
      instance.labels.put("spark_app_id", appId);
      instance.labels.put("spark_executor_id", executorId);
      if (instance.uploader != null && cfg.get("appName") == null) {
        instance.uploader.app(appName);
      }
      return instance;
    }
    if (!cfg.bool("enabled") || ("driver".equals(role) && !cfg.bool("driver.enabled"))
        || ("executor".equals(role) && !cfg.bool("executor.enabled"))) {
      return null;
    }
    // Like Spark 4's profiler plugin: a random share of executors is profiled.
    if ("executor".equals(role) && Math.random() >= cfg.fraction()) {
      Log.info("executor " + executorId + " not picked for profiling (fraction " + cfg.fraction() + ")");
      return null;
    }
    if (cfg.get("server") == null && cfg.get("outputDir") == null) {
      Log.once("neither server nor outputDir is set: nothing to do", null);
      return null;
    }
    try {
      instance = new Agent(cfg, role, appId, appName, executorId);
      instance.begin();
      return instance;
    } catch (Throwable t) {
      Log.once("agent failed to start", t);
      instance = null;
      return null;
    }
  }

  private Agent(Config cfg, String role, String appId, String appName, String executorId) throws IOException {
    this.cfg = cfg;
    this.role = role;
    this.executorId = executorId;
    this.app = first(appName, first(appId, "jvm"));
    labels.put("spark_app_id", appId);
    labels.put("spark_executor_id", executorId);
    labels.put("role", role);
    labels.parse(cfg.get("labels"));
    queue = new WindowQueue(cfg.bytes("maxQueuedBytes", 64L << 20));
    uploader = cfg.get("server") != null ? new Uploader(cfg, labels, app) : null;
    output = cfg.get("outputDir") != null ? new OutputFile(cfg.get("outputDir"), role, appId, executorId) : null;
    workDir = Files.createTempDirectory("sparkprof-");
    profiler = new Profiler(cfg, workDir);
  }

  private static String hostname() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /**
   * Starts the shipper thread, which starts the recorder: starting the Flight Recorder costs about half a
   * second of CPU (it generates and compiles its event classes), which would otherwise delay the JVM's main
   * method or the executor's registration. The first window begins when the recorder is up.
   */
  private void begin() {
    shipper = new Thread(this::run, "sparkprof-shipper");
    shipper.setDaemon(true);
    shipper.start();
  }

  private void run() {
    try {
      labels.putIfAbsent("host", hostname());
      profiler.start();
      if (profiler.gcFromNotifications()) {
        listenToGc();
      }
    } catch (Throwable t) {
      Log.once("the Flight Recorder failed to start; the agent goes on without profiling", t);
      return;
    } finally {
      recording.countDown();
    }
    if (stopping) {
      return;
    }
    if ("executor".equals(role) && !stopping) {
      python = PythonSampler.start(cfg, workDir, tasks, this::pythonWindow);
    }
    Log.info("profiling " + role + (executorId != null ? " " + executorId : "") + " of " + app + " to "
        + (cfg.get("server") != null ? cfg.get("server") : "") + (cfg.get("outputDir") != null ? " " + cfg.get("outputDir") : ""));
    shipLoop();
  }

  /** Starts recording garbage collections from the JVM's notifications; without them, only samples go. */
  private void listenToGc() {
    try {
      GcPauses g = new GcPauses();
      g.install();
      synchronized (this) {
        gcPauses = g;
      }
    } catch (Throwable t) {
      Log.once("cannot listen to garbage collections; the agent goes on without them", t);
    }
  }

  /** Counted down once the recorder has started, or failed to. */
  private final CountDownLatch recording = new CountDownLatch(1);

  /**
   * Waits at most millis for the recorder to start. The Spark plugins call it from their init, which Spark runs
   * before the executor takes tasks (or the driver schedules any), so that the first tasks are profiled too; a
   * recorder slower than that costs the job only the wait.
   */
  void awaitRecording(long millis) {
    if (millis <= 0) {
      return;
    }
    try {
      if (!recording.await(millis, TimeUnit.MILLISECONDS)) {
        Log.info("the recorder took over " + millis + " ms to start; the first tasks may go unprofiled (startWait waits"
            + " longer)");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void shipLoop() {
    long every = Math.max(100, cfg.millis("uploadInterval", 10_000));
    while (!stopping) {
      // Wait for the window's end a second at a time, learning the driver's app meanwhile: a job shorter than
      // a window has stopped Spark's environment by its end.
      long due = System.currentTimeMillis() + every;
      for (long left = every; left > 0 && !stopping; left = due - System.currentTimeMillis()) {
        synchronized (wake) {
          try {
            wake.wait(Math.min(left, 1_000));
          } catch (InterruptedException e) {
            return;
          }
        }
        try {
          learnFromSpark();
          if (sparkStopped()) {
            // Ship the last window now, not in the JVM's exit, whose shutdown hooks a cluster manager may cut
            // short.
            Thread t = new Thread(() -> stop(Math.max(0, cfg.millis("stopWait", 5_000))), "sparkprof-stop");
            t.setDaemon(false);
            t.start();
            return;
          }
        } catch (Throwable t) {
          Log.once("learning the app from Spark failed", t);
        }
      }
      if (stopping) {
        return;
      }
      try {
        window(profiler.rotate(false), Long.MAX_VALUE);
      } catch (Throwable t) {
        Log.once("recording a window failed", t);
      }
    }
  }

  private boolean learned;
  /** SparkEnv.get, once it has answered: a -javaagent's sign that Spark has stopped is its null. */
  private MethodHandle sparkEnv;

  /** Reports whether the Spark this -javaagent's JVM ran has stopped (its SparkEnv is gone). */
  private boolean sparkStopped() throws Throwable {
    return !fromPlugin && sparkEnv != null && sparkEnv.invoke() == null;
  }
  /** Set when a Spark plugin started or joined the agent: it gave the app's name, id and host. */
  volatile boolean fromPlugin;

  /**
   * Learns what an agent started by {@code -javaagent} cannot know at the JVM's start from Spark's environment,
   * once Spark has made it: the app's name, and a driver's app id and host as Spark names them. The plugin
   * knows them from the start, but for the app id on Spark 4, whose driver plugins start before the task
   * scheduler has named the app.
   */
  private void learnFromSpark() {
    boolean knowsApp = labels.get("spark_app_id") != null;
    if (learned || fromPlugin && knowsApp || !"driver".equals(role) && !"executor".equals(role)) {
      return;
    }
    try {
      // Method handles, not getMethod: that resolves every public method's types, and Spark 4's SparkEnv has
      // some of a protobuf that is not on the class path (NoClassDefFoundError).
      ClassLoader loader = ClassLoader.getSystemClassLoader();
      Class<?> envClass = Class.forName("org.apache.spark.SparkEnv", false, loader);
      Class<?> confClass = Class.forName("org.apache.spark.SparkConf", false, loader);
      MethodHandles.Lookup lookup = MethodHandles.publicLookup();
      MethodHandle envGet = lookup.findStatic(envClass, "get", MethodType.methodType(envClass));
      Object env = envGet.invoke();
      if (env == null) {
        return; // no SparkContext yet
      }
      sparkEnv = envGet;
      Object conf = lookup.findVirtual(envClass, "conf", MethodType.methodType(confClass)).invoke(env);
      MethodHandle getter = lookup.findVirtual(confClass, "get", MethodType.methodType(String.class, String.class, String.class));
      java.util.function.Function<String, String> get = key -> {
        try {
          return (String) getter.invoke(conf, key, (String) null);
        } catch (Throwable t) {
          return null;
        }
      };
      String appId = get.apply("spark.app.id");
      if (appId == null) {
        return;
      }
      if ("driver".equals(role)) {
        labels.put("spark_app_id", appId);
        labels.put("host", get.apply("spark.driver.host"));
      }
      if (uploader != null && cfg.get("appName") == null) {
        uploader.app(get.apply("spark.app.name"));
      }
      learned = true;
    } catch (ClassNotFoundException e) {
      learned = true; // not a Spark JVM
    } catch (Throwable e) {
      learned = true;
      Log.once("cannot read the app's id from Spark's environment", e);
    }
  }

  /** Queues a finished window for upload and/or the output file, then sends what is pending. */
  private synchronized void window(Profiler.Window w, long deadline) {
    if (w == null) {
      return;
    }
    if (!Profiler.wholeRecording(w.file)) {
      queue.discard(w);
      Log.once("the recorder did not write a whole recording of a window (" + w.file + "); the window is dropped,"
          + " not sent", null);
      return;
    }
    if (uploader != null) {
      w.tasks = tasks.drain();
      w.gc = gcPauses != null ? gcPauses.drain() : null;
      w.key = uploader.nextKey();
    }
    queue.add(w, uploader != null, output != null);
    sendPending(deadline);
  }

  /**
   * Queues a window of the Python sampler's for upload, with the task runs of its time, then sends what is
   * pending. Python windows go to a server only.
   */
  private synchronized void pythonWindow(Profiler.Window w, long deadline) {
    if (uploader == null) {
      Log.once("the Python workers' samples are sent to a server only (spark.sparkprof.server), not written to"
          + " outputDir", null);
      Profiler.delete(w);
      return;
    }
    w.tasks = tasks.between(w.fromMs, w.untilMs);
    w.key = uploader.nextKey();
    queue.add(w, true, false);
    sendPending(deadline);
  }

  /** Sends the windows that wait, oldest first, until one fails or the deadline passes. */
  private synchronized void sendPending(long deadline) {
    if (uploader == null) {
      return;
    }
    for (Profiler.Window next; (next = queue.next()) != null && System.currentTimeMillis() < deadline; ) {
      if (!uploader.upload(next, deadline, queue.dropped.get())) {
        break; // the server is down or slow: keep it for the next round, within the bound
      }
      queue.sent(next);
    }
  }

  /**
   * Stops profiling: ends the last window and ships it (the window Pyroscope's agent loses at exit), writes
   * the output file, and cleans up, waiting at most timeoutMs.
   */
  void stop(long timeoutMs) {
    long deadline = System.currentTimeMillis() + timeoutMs;
    boolean already;
    synchronized (this) {
      already = stopped;
      stopped = true;
    }
    if (already) {
      awaitStopped(timeoutMs); // without the lock, which the stop under way needs to ship
      return;
    }
    stopping = true;
    synchronized (wake) {
      wake.notifyAll();
    }
    // The last window ends on a thread of its own, which the stop waits for until its deadline: a recorder
    // stuck at the JVM's exit (a thread waiting in it forever holds the profiler's lock) must not keep the
    // JVM from exiting.
    Thread last = new Thread(() -> endLast(deadline), "sparkprof-last-window");
    last.setDaemon(true);
    try {
      last.start();
      last.join(Math.max(1, deadline - System.currentTimeMillis()) + LAST_WINDOW_SLACK_MS);
      if (last.isAlive()) {
        Log.once("the last window did not end by the stop's deadline; the agent stops without it", null);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      GcPauses g;
      synchronized (this) {
        g = gcPauses;
      }
      if (g != null) {
        g.uninstall();
      }
      deleteTree(workDir);
      Log.info("stopped: " + (uploader != null ? uploader.uploads.get() : 0) + " uploads, "
          + (uploader != null ? uploader.failures.get() : 0) + " failed, " + queue.dropped.get()
          + " windows dropped, " + tasks.dropped.get() + " task records dropped"
          + (g != null ? ", " + g.dropped.get() + " GC records dropped" : ""));
      done.countDown();
    }
  }

  /** How long past its deadline a stop waits for the last window to end: the upload's own deadline is the stop's. */
  private static final long LAST_WINDOW_SLACK_MS = 2_000;

  /** Ends and ships the last window, stops the Python sampling, writes the output file, and stops the profiler. */
  private void endLast(long deadline) {
    try {
      shipper.join(Math.max(1, (deadline - System.currentTimeMillis()) / 2));
      window(profiler.rotate(true), deadline);
      PythonSampler py = python;
      if (py != null) {
        py.stop(deadline);
      }
      if (output != null) {
        writeOutput();
      }
    } catch (Throwable t) {
      Log.once("stopping the profiler failed", t);
    } finally {
      profiler.stop();
    }
  }

  /** Counted down when a stop has shipped the last window, or given up. */
  private final CountDownLatch done = new CountDownLatch(1);

  /**
   * Waits at most millis for a stop that another thread began: the JVM's shutdown hook must not let the JVM
   * exit while the plugin's shutdown still ships the last window.
   */
  private void awaitStopped(long millis) {
    try {
      done.await(millis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private boolean hooked;

  /**
   * Stops the agent when the JVM exits, waiting at most stopWait to ship the last window: a cluster manager that
   * ends an executor with SIGTERM (a standalone worker, YARN, Kubernetes) may do so while Spark's own shutdown
   * of the plugin is still shipping.
   */
  synchronized void stopAtExit(long stopWait) {
    if (hooked) {
      return;
    }
    hooked = true;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(stopWait), "sparkprof-shutdown"));
  }

  /** Writes the kept windows to the output file. */
  private synchronized void writeOutput() throws Exception {
    output.write(queue.kept(), workDir);
  }

  /** Deletes dir and everything under it; a failure is logged once. */
  static void deleteTree(Path dir) {
    try (Stream<Path> s = Files.walk(dir)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | RuntimeException e) {
      Log.once("cannot clean " + dir, e);
    }
  }
}
