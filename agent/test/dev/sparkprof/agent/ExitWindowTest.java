package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Unit test of the last window at JVM exit, while the Flight Recorder's own shutdown hook ends its recordings:
 * JVMs of their own end their window from a shutdown hook, as the {@code -javaagent}'s does, or from a thread
 * that began just before the JVM's exit, as the agent's stop when it sees Spark stop; each must get a whole
 * recording. Several JVMs run at once, to race the recorder as a busy machine does.
 */
final class ExitWindowTest {
  /** How long after its window's end each JVM of the second kind exits, in ms: -1 ends it from a hook. */
  private static final long[] EXIT_AFTER = {-1, -1, -1, -1, 0, 1, 2, 5, 10, 20, 40};
  static volatile long sink;

  private ExitWindowTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-exit", ExitWindowTest::lastWindowAtExit);
  }

  static void lastWindowAtExit(Path dir) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> jvms = new ArrayList<>();
    for (int i = 0; i < EXIT_AFTER.length; i++) {
      Path d = Files.createDirectories(dir.resolve("jvm-" + i));
      jvms.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), ExitWindowTest.class.getName(),
          d.toString(), Long.toString(EXIT_AFTER[i])).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    }
    for (int i = 0; i < EXIT_AFTER.length; i++) {
      Process p = jvms.get(i);
      String out = new String(p.getInputStream().readAllBytes()).trim();
      p.waitFor();
      String how = EXIT_AFTER[i] < 0 ? "ended from a shutdown hook" : "ended from a thread that began " + EXIT_AFTER[i] + " ms before the exit";
      check("JVM " + i + "'s last window at exit, " + how, out, "whole");
    }
  }

  /**
   * A JVM that records one window and ends it from a shutdown hook (args[1] negative), or from a thread that
   * begins args[1] ms before main returns; prints whether the window's file is whole. Only the window's line
   * is printed on stdout: the recorder's own errors go to stderr, which the test passes on.
   */
  public static void main(String[] args) throws Exception {
    Profiler p = new Profiler(new Config(), Path.of(args[0]));
    long exitAfter = Long.parseLong(args[1]);
    p.start();
    long x = 0;
    for (long end = System.currentTimeMillis() + 200; System.currentTimeMillis() < end; ) {
      x += x * 31 + 1;
    }
    sink = x;
    Thread ender = new Thread(() -> {
      try {
        Profiler.Window w = p.rotate(true);
        System.out.println(w != null && Profiler.wholeRecording(w.file) ? "whole" : "not whole");
      } catch (Exception e) {
        System.out.println("failed: " + e);
      }
    }, "ender");
    if (exitAfter < 0) {
      Runtime.getRuntime().addShutdownHook(ender);
      return;
    }
    // As the agent's shutdown hook waits for a stop under way.
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        ender.join(30_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }));
    ender.setDaemon(true);
    ender.start();
    Thread.sleep(exitAfter);
  }
}
