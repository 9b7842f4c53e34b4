import java.util.ArrayList;
import java.util.List;

/** A CPU-bound multi-threaded workload: each thread hashes for a fixed amount of work. */
public final class CpuBench {
  static volatile long sink;

  public static void main(String[] args) throws Exception {
    int threads = Integer.parseInt(args[0]);
    long iterations = Long.parseLong(args[1]);
    long start = System.nanoTime();
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      final int seed = t;
      Thread th = new Thread(() -> {
        long h = seed;
        for (long i = 0; i < iterations; i++) {
          h = h * 6364136223846793005L + 1442695040888963407L;
          h ^= h >>> 29;
        }
        sink += h;
      }, "Executor task launch worker for task " + t + ".0 in stage 0.0 (TID " + t + ")");
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) {
      th.join();
    }
    System.gc();
    Runtime rt = Runtime.getRuntime();
    System.out.printf("elapsed_ms=%d heap_used=%d%n", (System.nanoTime() - start) / 1_000_000, rt.totalMemory() - rt.freeMemory());
  }
}
