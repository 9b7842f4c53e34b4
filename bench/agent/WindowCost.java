import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import jdk.jfr.Recording;

/**
 * The process CPU one window change of the agent costs: stopping a recording (which writes its file) and
 * starting the next, with the agent's default events (as Profiler.newRecording enables them), against the
 * same number of intervals with the recorder left running.
 *
 * <p>usage: java bench/agent/WindowCost.java WINDOWS INTERVAL_MS [idle]
 */
public final class WindowCost {
  private static Recording window(Path file) throws Exception {
    Recording r = new Recording();
    r.setToDisk(true);
    r.setDestination(file);
    r.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(10));
    r.enable("jdk.NativeMethodSample").withPeriod(Duration.ofMillis(20));
    r.enable("jdk.ObjectAllocationSample").with("throttle", "150/s");
    r.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ofMillis(10));
    r.enable("jdk.ThreadPark").withThreshold(Duration.ofMillis(10));
    r.enable("jdk.GarbageCollection");
    r.enable("jdk.GCHeapSummary");
    r.enable("jdk.CPULoad").withPeriod(Duration.ofSeconds(1));
    return r;
  }

  public static void main(String[] args) throws Exception {
    int windows = Integer.parseInt(args[0]);
    long intervalMs = Long.parseLong(args[1]);
    boolean idle = args.length > 2;
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    Path dir = Files.createTempDirectory("windowcost");
    Recording current = window(dir.resolve("w0.jfr"));
    current.start();
    Thread.sleep(3000); // past the recorder's start
    long cpu0 = os.getProcessCpuTime();
    for (int i = 1; i <= windows; i++) {
      Thread.sleep(intervalMs);
      if (idle) {
        continue;
      }
      Recording next = window(dir.resolve("w" + i + ".jfr"));
      current.stop();
      current.close();
      next.start();
      current = next;
      Files.delete(dir.resolve("w" + (i - 1) + ".jfr"));
    }
    double perInterval = (os.getProcessCpuTime() - cpu0) / 1e6 / windows;
    current.close();
    System.out.printf("%s: %d intervals of %d ms: %.1f ms of CPU per interval%n",
        idle ? "recorder running" : "window changed every interval", windows, intervalMs, perInterval);
  }
}
