package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Unit tests of PythonSampler: where it finds py-spy, and that it finds the Python workers among the JVM's
 * descendants: those the daemon forked, whose command line is the daemon's, not the daemon.
 */
final class PythonSamplerTest {
  private PythonSamplerTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-python", PythonSamplerTest::findPySpy);
    daemon();
    workerOfConnection();
    AgentUnitTest.inTempDir("sparkprof-python", PythonSamplerTest::noPySpy);
  }

  static void findPySpy(Path dir) throws Exception {
    Path bin = Files.createDirectory(dir.resolve("bin"));
    Path spy = Files.createFile(bin.resolve("py-spy"));
    check("py-spy on no PATH", PythonSampler.findPySpy(null, null), null);
    check("py-spy not executable", PythonSampler.findPySpy(null, bin.toString()), null);
    spy.toFile().setExecutable(true);
    check("py-spy on the PATH", PythonSampler.findPySpy(null, "/nonexistent" + File.pathSeparator + bin), spy);
    check("py-spy configured", PythonSampler.findPySpy(spy.toString(), null), spy);
    check("py-spy configured, missing", PythonSampler.findPySpy(dir.resolve("none").toString(), bin.toString()), null);
  }

  /**
   * A process named as Spark starts the daemon, which forks a child as the daemon forks workers: the child is a
   * worker, the daemon is not.
   */
  static void daemon() throws Exception {
    check("no workers yet", PythonSampler.workerPids(), List.of());
    Process p = startDaemon();
    try {
      // The child says its pid once forked: then both are the JVM's descendants.
      String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
      check("the daemon's forked worker", PythonSampler.workerPids(), List.of(Long.parseLong(line.trim())));
    } finally {
      stop(p);
    }
  }

  /**
   * On a node with no py-spy, the sampler says so once when it finds a worker, and ends.
   */
  static void noPySpy(Path dir) throws Exception {
    Config cfg = new Config();
    cfg.put("python", "true");
    cfg.put("pySpy", dir.resolve("none").toString());
    PythonSampler s = PythonSampler.start(cfg, dir, new TaskWindows(), (w, deadline) -> { });
    check("a sampler started", s != null, true);
    check("nothing said before a worker", Log.said("this executor runs Python workers"), false);
    Process p = startDaemon();
    try {
      s.thread.join(120_000);
      check("the sampler ends at the first worker", s.thread.isAlive(), false);
      check("it says py-spy is missing", Log.said("this executor runs Python workers, but py-spy is not on"), true);
    } finally {
      stop(p);
    }
  }

  /**
   * As Spark's daemon does, a process accepts the JVM's connection and forks a worker that holds it: the worker,
   * not the daemon, is found by the port of the JVM's end.
   */
  static void workerOfConnection() throws Exception {
    Process p = new ProcessBuilder("python3", "-c", String.join("\n",
        "import os, socket, sys, time",
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()",
        "print(s.getsockname()[1], flush=True)",
        "c, _ = s.accept()",
        "if os.fork() == 0:",
        "    print(os.getpid(), flush=True); time.sleep(60); sys.exit()",
        "c.close(); time.sleep(60)")).redirectErrorStream(true).start();
    try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        Socket jvmEnd = new Socket("127.0.0.1", Integer.parseInt(out.readLine().trim()))) {
      long worker = Long.parseLong(out.readLine().trim());
      int port = jvmEnd.getLocalPort();
      check("the worker holding the connection", PythonWorkerTasks.workersByPeerPort(List.of(worker)).get(port), worker);
      check("the daemon, which closed it", PythonWorkerTasks.workersByPeerPort(List.of(p.pid())).get(port), null);
    } finally {
      stop(p);
    }
    // The worker noted on a task's run, running or ended, once.
    TaskWindows tasks = new TaskWindows();
    org.apache.spark.TaskContext.set(new org.apache.spark.TaskContext(1, 0, 3, 42));
    tasks.start();
    tasks.pythonWorker(42, 1234);
    tasks.pythonWorker(42, 1234);
    tasks.pythonWorker(7, 99);
    check("a running task's worker", tasks.between(0, Long.MAX_VALUE).contains("\"pythonPids\":[1234]}"), true);
    tasks.end("SUCCESS");
    tasks.pythonWorker(42, 5678);
    check("an ended task's second worker", tasks.between(0, Long.MAX_VALUE).contains("\"pythonPids\":[1234,5678]}"), true);
    org.apache.spark.TaskContext.set(null);
  }

  /** Starts a process named as Spark starts the daemon, which forks a child that prints its pid. */
  private static Process startDaemon() throws Exception {
    return new ProcessBuilder("python3", "-c",
        "import os, time\nif os.fork() == 0: print(os.getpid(), flush=True)\ntime.sleep(60)", "-m", PythonSampler.DAEMON)
        .redirectErrorStream(true).start();
  }

  private static void stop(Process p) throws InterruptedException {
    p.descendants().forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
    p.waitFor(10, TimeUnit.SECONDS);
  }
}
