package dev.sparkprof.agent;

import java.lang.management.ManagementFactory;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;

/**
 * The Flight Recorder's stack depth: it keeps the 64 frames nearest the leaf of a stack by default, and Spark's
 * stacks are often deeper (a task deserialising a query plan, a whole-stage generated iterator under shuffle
 * and Python runners). A cut stack has lost the frames that say what the code was doing for, such as the
 * serialiser of a task rather than of records.
 */
final class StackDepth {
  private StackDepth() {}

  private static final Pattern CURRENT = Pattern.compile("Stack depth: (\\d+)");

  /**
   * Raises the Flight Recorder's stack depth to depth frames, by its {@code JFR.configure} diagnostic
   * command, unless it is deeper already (a user's {@code -XX:FlightRecorderOptions:stackdepth}). It must
   * come before the first recording of samples starts: the recorder's sampler sizes its buffer then. Returns
   * the depth in force, or -1 when it cannot be read or set (a JVM without the diagnostic command), which is
   * reported once.
   */
  static int raise(int depth) {
    try {
      int current = configure();
      if (current >= depth) {
        return current;
      }
      return configure("stackdepth=" + depth);
    } catch (Throwable t) {
      Log.once("cannot set the Flight Recorder's stack depth to " + depth + " frames; stacks deeper than its"
          + " default, 64, are cut", t);
      return -1;
    }
  }

  /** Runs JFR.configure with args and returns the stack depth it reports, or -1 when it names none. */
  private static int configure(String... args) throws Exception {
    Object out = ManagementFactory.getPlatformMBeanServer().invoke(
        new ObjectName("com.sun.management:type=DiagnosticCommand"), "jfrConfigure",
        new Object[] {args}, new String[] {String[].class.getName()});
    Matcher m = CURRENT.matcher(String.valueOf(out));
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }
}
