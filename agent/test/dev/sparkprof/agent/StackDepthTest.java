package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * Unit test of the Flight Recorder's stack depth: JVMs of their own record a window of a thread 300 frames
 * deep, with the agent's default depth, with {@code stackDepth=0} (the JVM's 64), and with a deeper depth the
 * JVM was started with, which the agent keeps.
 */
final class StackDepthTest {
  static volatile long sink;

  private StackDepthTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-depth", StackDepthTest::depths);
  }

  static void depths(Path dir) throws Exception {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String cp = System.getProperty("java.class.path");
    String[][] cases = {
      // JVM option, stackDepth, what the JVM prints: the depth in force, whether stacks were cut
      {"-Dnone", "", "depth 512, cut false"},
      {"-Dnone", "0", "depth -, cut true"},
      {"-XX:FlightRecorderOptions:stackdepth=1024", "", "depth 1024, cut false"},
    };
    List<Process> jvms = new ArrayList<>();
    for (int i = 0; i < cases.length; i++) {
      jvms.add(new ProcessBuilder(java, cases[i][0], "-cp", cp, StackDepthTest.class.getName(),
          dir.resolve("jvm-" + i).toString(), cases[i][1]).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    }
    for (int i = 0; i < cases.length; i++) {
      Process p = jvms.get(i);
      String out = new String(p.getInputStream().readAllBytes()).trim();
      p.waitFor();
      check("stacks of a JVM with " + cases[i][0] + " and stackDepth=" + cases[i][1], out, cases[i][2]);
    }
  }

  /** Records a window of a deep stack's samples with stackDepth args[1]; prints the depth and if any was cut. */
  public static void main(String[] args) throws Exception {
    Config cfg = new Config();
    cfg.put("stackDepth", args[1]);
    Profiler p = new Profiler(cfg, java.nio.file.Files.createDirectories(Path.of(args[0])));
    p.start();
    // Half a second of the thread's CPU, not of the clock: on a busy machine the thread may get little of it.
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    for (long end = threads.getCurrentThreadCpuTime() + 500_000_000L; threads.getCurrentThreadCpuTime() < end; ) {
      sink += deep(300);
    }
    Profiler.Window w = p.rotate(true);
    boolean cut = false;
    int samples = 0;
    for (RecordedEvent e : RecordingFile.readAllEvents(w.file)) {
      if (e.getEventType().getName().equals("jdk.ExecutionSample") && "main".equals(e.getThread("sampledThread").getJavaName())) {
        samples++;
        cut |= e.getStackTrace().isTruncated();
      }
    }
    int depth = args[1].equals("0") ? -1 : StackDepth.raise(1);
    System.out.println(samples == 0 ? "no samples" : "depth " + (depth < 0 ? "-" : depth) + ", cut " + cut);
  }

  private static long deep(int n) {
    if (n == 0) {
      long x = 0;
      for (int i = 0; i < 100_000; i++) {
        x += i * 31L;
      }
      return x;
    }
    return deep(n - 1) + 1;
  }
}
