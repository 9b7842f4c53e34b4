import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import java.util.logging.StreamHandler;
import java.util.regex.Pattern;
import java.util.zip.Deflater;

/**
 * Does one costly code pattern per record, as a Spark task would, until each thread has used the CPU time asked for
 * (so that a busy machine changes how long it runs, not how much it does), in threads named as Spark names its task
 * threads. Run it under the JDK's Flight Recorder to get a real profile of the pattern:
 *
 * <pre>java -XX:StartFlightRecording=filename=regex.jfr,settings=profile Patterns.java regex 1000</pre>
 *
 * Patterns: regex, exceptions, logging, serialization, reflection, boxing, compression, lock, dates, churn (short-lived
 * allocations, for the GC), and clean (plain arithmetic: none of them).
 */
public final class Patterns {
  /** The churn mode's live arrays. */
  static final long[][] RING = new long[16_384][];

  /** A record, as a job's rows are. */
  static final class Row implements Serializable {
    private static final long serialVersionUID = 1L;
    final long id;
    final String name;
    final double value;

    Row(long id, String name, double value) {
      this.id = id;
      this.name = name;
      this.value = value;
    }

    public String name() {
      return name;
    }
  }

  /** What a task does with one record; returns something so the work is not optimised away. */
  interface Work {
    long record(long i) throws Exception;
  }

  static volatile long sink;
  static final Object shared = new Object();
  static long sharedCount;

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    long cpuMillis = Long.parseLong(args[1]);
    int threads = "lock".equals(mode) ? 4 : 1;
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Work w = work(mode);
      Thread th = new Thread(() -> run(w, cpuMillis), "Executor task launch worker for task " + t);
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) {
      th.join();
    }
    System.out.println(mode + " " + sink);
  }

  static void run(Work w, long cpuMillis) {
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    long end = mx.getCurrentThreadCpuTime() + cpuMillis * 1_000_000;
    long i = 0;
    try {
      while (mx.getCurrentThreadCpuTime() < end) {
        for (int k = 0; k < 100; k++, i++) {
          sink += w.record(i);
        }
      }
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  static Work work(String mode) throws Exception {
    switch (mode) {
      case "regex":
        return i -> {
          String line = i + ",name-" + i + ";" + (i * 7) + ",x";
          return line.split("[,;]").length + (Pattern.compile("name-(\\d+)").matcher(line).find() ? 1 : 0);
        };
      case "exceptions":
        return i -> {
          try {
            return Integer.parseInt((i % 2 == 0 ? "n/a-" : "") + i);
          } catch (NumberFormatException e) {
            return -1;
          }
        };
      case "logging":
        Logger log = Logger.getLogger("job");
        log.setUseParentHandlers(false);
        log.addHandler(new StreamHandler(new ByteArrayOutputStream() {
              @Override
              public synchronized void write(byte[] b, int off, int len) {
                reset(); // keep the memory flat: the cost is in formatting
                super.write(b, off, len);
              }
            }, new SimpleFormatter()));
        return i -> {
          log.log(Level.INFO, "processed record {0} with value {1}", new Object[] {i, i * 0.5});
          return i;
        };
      case "serialization":
        return i -> {
          ByteArrayOutputStream bytes = new ByteArrayOutputStream();
          try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(new Row(i, "row-" + i, i * 0.5));
          }
          try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            return ((Row) in.readObject()).id;
          }
        };
      case "reflection":
        return i -> {
          Row r = new Row(i, "r", i * 0.5);
          Method m = Row.class.getMethod("name");
          return ((String) m.invoke(r)).length();
        };
      case "boxing":
        return i -> {
          Map<Integer, Long> m = new HashMap<>();
          for (int k = 0; k < 64; k++) {
            m.merge((int) (i * 64 + k), (long) k + 1000, Long::sum);
          }
          return m.size();
        };
      case "compression":
        byte[] data = new byte[64 << 10];
        for (int k = 0; k < data.length; k++) {
          data[k] = (byte) ((k * 31) ^ (k >> 5));
        }
        byte[] out = new byte[80 << 10];
        return i -> {
          Deflater d = new Deflater(6);
          d.setInput(data);
          d.finish();
          int n = d.deflate(out);
          d.end();
          return n;
        };
      case "lock":
        // Every tenth record holds the shared lock for 12 ms, past the Flight Recorder's 10 ms threshold, so
        // the threads wait on it however quiet the machine is.
        return i -> {
          synchronized (shared) {
            long x = sharedCount;
            long until = i % 10 == 0 ? System.nanoTime() + 12_000_000 : 0;
            do {
              for (int k = 0; k < 2000; k++) {
                x = x * 31 + k;
              }
            } while (System.nanoTime() < until);
            sharedCount = x;
            return x;
          }
        };
      case "dates":
        return i -> {
          SimpleDateFormat f = new SimpleDateFormat("yyyy-MM-dd HH:mm:ss");
          return f.parse("2024-01-" + (1 + i % 28) + " 12:34:56").getTime();
        };
      case "churn":
        // Arrays that live a while, a ring of 32 MB that each call renews in part: every collection copies
        // or promotes live data, so GC costs the same share of a run on a quiet machine as on a busy one.
        return i -> {
          List<long[]> keep = new ArrayList<>();
          for (int k = 0; k < 16; k++) {
            long[] a = new long[256];
            keep.add(a);
            RING[(int) ((i * 16L + k) % RING.length)] = a;
          }
          return keep.size();
        };
      case "clean":
        return i -> {
          long x = i;
          for (int k = 0; k < 200; k++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
          }
          return x;
        };
      default:
        throw new IllegalArgumentException("no pattern " + mode);
    }
  }
}
