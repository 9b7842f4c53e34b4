package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
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
    Process p = new ProcessBuilder("python3", "-c",
        "import os, time\nif os.fork() == 0: print(os.getpid(), flush=True)\ntime.sleep(60)", "-m", PythonSampler.DAEMON)
        .redirectErrorStream(true).start();
    try {
      // The child says its pid once forked: then both are the JVM's descendants.
      String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
      check("the daemon's forked worker", PythonSampler.workerPids(), List.of(Long.parseLong(line.trim())));
    } finally {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
