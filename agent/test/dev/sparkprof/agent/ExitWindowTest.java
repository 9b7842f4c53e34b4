package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.jfr.FlightRecorder;
import jdk.jfr.RecordingState;

/**
 * Unit test of the last window at JVM exit, while the Flight Recorder's own shutdown hook ends its recordings:
 * JVMs of their own end their window from a shutdown hook, as the {@code -javaagent}'s does, or from a thread
 * that began just before the JVM's exit, as the agent's stop when it sees Spark stop; each must get a whole
 * recording. Several JVMs run at once, to race the recorder as a busy machine does.
 */
final class ExitWindowTest {
  /** How long after its window's end each JVM of the second kind exits, in ms: -1 ends it from a hook. */
  private static final long[] EXIT_AFTER = {-1, -1, -1, -1, 0, 1, 2, 5, 10, 20, 40};
  /** The EXIT_AFTER of a JVM that rotates to a next window after the recorder's own hook has ended. */
  private static final long AFTER_RECORDER_HOOK = -2;
  static volatile long sink;

  private ExitWindowTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-exit", ExitWindowTest::lastWindowAtExit);
    AgentUnitTest.inTempDir("sparkprof-exit", ExitWindowTest::nextWindowAtExit);
  }

  /**
   * A window that would begin after the Flight Recorder's own shutdown hook has ended the recorder is not begun:
   * its recording would wait for the recorder forever, and the JVM never exit.
   */
  static void nextWindowAtExit(Path dir) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Path out = dir.resolve("out");
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), ExitWindowTest.class.getName(),
        dir.toString(), Long.toString(AFTER_RECORDER_HOOK)).redirectError(ProcessBuilder.Redirect.INHERIT)
        .redirectOutput(out.toFile()).start();
    boolean exited = p.waitFor(120, TimeUnit.SECONDS); // a guard: it exits at once, or never
    p.destroyForcibly();
    p.waitFor();
    check("a JVM rotating after the recorder's hook exits", exited, true);
    check("its rotation", Files.readString(out).trim(), "rotated");
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
    if (exitAfter == AFTER_RECORDER_HOOK) {
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          awaitRecorderHook();
          p.rotate(false);
          System.out.println("rotated");
        } catch (Exception e) {
          System.out.println("failed: " + e);
        }
      }));
      return;
    }
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

  /** Waits, at most 30 s, until the Flight Recorder's shutdown hook has ended every running recording. */
  private static void awaitRecorderHook() throws InterruptedException {
    for (long end = System.currentTimeMillis() + 30_000; System.currentTimeMillis() < end; Thread.sleep(1)) {
      if (FlightRecorder.getFlightRecorder().getRecordings().stream().noneMatch(r -> r.getState() == RecordingState.RUNNING)) {
        return;
      }
    }
  }
}
