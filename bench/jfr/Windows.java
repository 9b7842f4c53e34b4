import java.lang.reflect.Method;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import jdk.jfr.Recording;

/**
 * Runs a program while the JDK's Flight Recorder records it in consecutive windows, as the sparkprof agent
 * does at its defaults: each window a recording of its own with the agent's events (Profiler.newRecording),
 * started just before the previous one stops, written to DIR/window-N.jfr. It gives tests and benchmarks the
 * uploads one JVM would send.
 *
 * usage: java Windows DIR WINDOW_MILLIS MAINCLASS [ARG...]
 */
public final class Windows {
  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    long windowMillis = Long.parseLong(args[1]);
    Method main = Class.forName(args[2]).getMethod("main", String[].class);
    Recording current = start(dir, 0);
    Thread program = new Thread(() -> {
      try {
        main.invoke(null, (Object) Arrays.copyOfRange(args, 3, args.length));
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
    }, "main");
    program.start();
    for (int n = 1; program.isAlive(); n++) {
      program.join(windowMillis);
      if (program.isAlive()) {
        Recording next = start(dir, n);
        current.stop();
        current.close();
        current = next;
      }
    }
    current.stop();
    current.close();
  }

  private static Recording start(Path dir, int n) throws Exception {
    Recording r = new Recording();
    r.setToDisk(true);
    r.setDestination(dir.resolve("window-" + n + ".jfr"));
    r.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(10));
    r.enable("jdk.NativeMethodSample").withPeriod(Duration.ofMillis(20));
    r.enable("jdk.ObjectAllocationSample").with("throttle", "150/s");
    r.enable("jdk.JavaMonitorEnter").withThreshold(Duration.ofMillis(10));
    r.enable("jdk.ThreadPark").withThreshold(Duration.ofMillis(10));
    r.enable("jdk.GarbageCollection");
    r.enable("jdk.GCHeapSummary");
    r.enable("jdk.CPULoad").withPeriod(Duration.ofSeconds(1));
    r.start();
    return r;
  }
}
