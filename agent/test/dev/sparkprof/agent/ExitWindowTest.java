package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Unit test of the last window at JVM exit: JVMs of their own end their window from a shutdown hook, as the
 * {@code -javaagent}'s does, while the Flight Recorder's own shutdown hook ends its recordings; each must get a
 * whole recording. Several JVMs run at once, to race the two hooks as a busy machine does.
 */
final class ExitWindowTest {
  private static final int JVMS = 6;
  static volatile long sink;

  private ExitWindowTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-exit", ExitWindowTest::lastWindowAtExit);
  }

  static void lastWindowAtExit(Path dir) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<Process> jvms = new ArrayList<>();
    for (int i = 0; i < JVMS; i++) {
      Path d = Files.createDirectories(dir.resolve("jvm-" + i));
      jvms.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), ExitWindowTest.class.getName(), d.toString())
          .redirectErrorStream(true).start());
    }
    for (int i = 0; i < JVMS; i++) {
      Process p = jvms.get(i);
      String out = new String(p.getInputStream().readAllBytes()).trim();
      p.waitFor();
      check("JVM " + i + "'s last window at exit", out, "whole");
    }
  }

  /** A JVM that records one window and ends it from a shutdown hook; prints whether its file is whole. */
  public static void main(String[] args) throws Exception {
    Profiler p = new Profiler(new Config(), Path.of(args[0]));
    p.start();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try {
        Profiler.Window w = p.rotate(true, System.currentTimeMillis() + 30_000);
        System.out.println(w != null && Profiler.wholeRecording(w.file) ? "whole" : "not whole");
      } catch (Exception e) {
        System.out.println("failed: " + e);
      }
    }));
    long x = 0;
    for (long end = System.currentTimeMillis() + 200; System.currentTimeMillis() < end; ) {
      x += x * 31 + 1;
    }
    sink = x;
  }
}
