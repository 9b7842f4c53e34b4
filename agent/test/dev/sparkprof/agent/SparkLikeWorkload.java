package dev.sparkprof.agent;

import com.codahale.metrics.MetricRegistry;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * A stand-in for a Spark executor: it loads the plugin by class name and drives it as Spark's
 * PluginContainer does (executorPlugin, init with a context, task hooks on task threads named exactly as
 * Spark 3.1+ names them, shutdown), with CPU, allocation and lock work in two stages.
 *
 * <p>usage: SparkLikeWorkload SERVER_URL FRACTION OUTPUT_DIR(or -) [EXTRA_KEY=VALUE...]
 *
 * <p>The plugin's init waits for the recorder to be up before the first stage, and its shutdown for the last
 * window to be shipped, however long a busy machine makes them take ({@code startWait} and {@code stopWait}
 * of ten minutes, unless the arguments say otherwise). With {@code -Dworkload.gate=true} the workload reads a
 * line from its standard input between the stages, so that a test can act in between (start a server late)
 * when it sees the signal it waits for.
 */
public final class SparkLikeWorkload {
  static final Object lock = new Object();
  static volatile long sink;

  public static void main(String[] args) throws Exception {
    SparkConf conf = new SparkConf()
        .set("spark.app.id", "app-20261122000000-0001")
        .set("spark.app.name", "SparkLikeWorkload")
        .set("spark.sparkprof.fraction", args[1])
        .set("spark.sparkprof.interval", "5ms")
        .set("spark.sparkprof.startWait", "10m")
        .set("spark.sparkprof.stopWait", "10m");
    if (!args[0].equals("-")) {
      conf.set("spark.sparkprof.server", args[0]);
    }
    if (!args[2].equals("-")) {
      conf.set("spark.sparkprof.outputDir", args[2]);
    }
    for (int i = 3; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      conf.set(kv[0], kv[1]);
    }
    SparkPlugin plugin = (SparkPlugin) Class.forName("dev.sparkprof.agent.SparkProfPlugin").getDeclaredConstructor().newInstance();
    ExecutorPlugin exec = plugin.executorPlugin();
    exec.init(new Context(conf), Collections.emptyMap());

    long t0 = System.currentTimeMillis();
    runStage(exec, 1, 4, 0, SparkLikeWorkload::cpuWork);
    // -Dworkload.pauseMs=N: idle between the stages, for more upload windows.
    System.out.println("STAGE 1 DONE");
    System.out.flush();
    Thread.sleep(Long.getLong("workload.pauseMs", 0));
    if (Boolean.getBoolean("workload.gate")) {
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    }
    runStage(exec, 2, 4, 4, SparkLikeWorkload::lockWork);
    long t1 = System.currentTimeMillis();
    exec.shutdown();
    long t2 = System.currentTimeMillis();
    Runtime rt = Runtime.getRuntime();
    System.out.println("DONE work_ms=" + (t1 - t0) + " shutdown_ms=" + (t2 - t1) + " heap_used=" + (rt.totalMemory() - rt.freeMemory()));
  }

  interface Work {
    void run();
  }

  static void runStage(ExecutorPlugin exec, int stage, int tasks, int firstTid, Work work) throws InterruptedException {
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < tasks; i++) {
      final int index = i, tid = firstTid + i;
      // -Dworkload.poolThreadNames=true names threads as Spark's task pool does before a task
      // renames them, so that only the plugin's task hooks tell the stage and task.
      String name = Boolean.getBoolean("workload.poolThreadNames")
          ? "Executor task launch worker-" + tid
          : "Executor task launch worker for task " + index + ".0 in stage " + stage + ".0 (TID " + tid + ")";
      Thread t = new Thread(() -> {
        TaskContext.set(new TaskContext(stage, 0, index, tid));
        exec.onTaskStart();
        work.run();
        exec.onTaskSucceeded();
        TaskContext.set(null);
      }, name);
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
  }

  /** CPU and allocation: about 1.5 s of hashing and short-lived arrays. */
  static void cpuWork() {
    long end = System.nanoTime() + 1_500_000_000L;
    long h = 1;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 10_000; i++) {
        h = h * 31 + i;
      }
      byte[] garbage = new byte[4096];
      garbage[(int) (h & 4095)] = 1;
      h += garbage[0];
    }
    sink += h;
  }

  /**
   * Lock contention: the tasks take turns on one monitor, holding it 20 ms. The holder spins in Java code
   * between clock reads: a thread inside System.nanoTime (native while interpreted) is not CPU-sampled, and a
   * loop of bare clock reads gave some tasks no CPU sample at all.
   */
  static void lockWork() {
    for (int i = 0; i < 15; i++) {
      synchronized (lock) {
        long end = System.nanoTime() + 20_000_000L;
        while (System.nanoTime() < end) {
          for (int k = 0; k < 10_000; k++) {
            sink += k;
          }
        }
      }
    }
  }

  static final class Context implements PluginContext {
    private final SparkConf conf;

    Context(SparkConf conf) {
      this.conf = conf;
    }

    public MetricRegistry metricRegistry() {
      return new MetricRegistry();
    }

    public SparkConf conf() {
      return conf;
    }

    public String executorID() {
      return "7";
    }

    public String hostname() {
      return "worker-1";
    }

    public void send(Object message) {}

    public Object ask(Object message) {
      return null;
    }
  }
}
