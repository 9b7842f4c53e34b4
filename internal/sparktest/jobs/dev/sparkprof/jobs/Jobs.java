package dev.sparkprof.jobs;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import scala.Tuple2;

/**
 * The Spark jobs of the real-Spark tests, one mode a run: {@code Jobs MODE [ARG]}. Each planted job has one
 * known cause, named in its job description ({@code planted:CAUSE}), on the stage the tests expect it on. The
 * cluster is two executors of one core each ({@code local-cluster[2,1,1024]}); the sizes are small enough for a
 * busy two-core machine and the tests scale the analysis thresholds to them.
 */
public final class Jobs {
  private Jobs() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    if (mode.equals("eventlogs")) {
      eventLogs(args[1]);
      return;
    }
    if (mode.equals("runs")) {
      runs();
      return;
    }
    SparkSession spark = SparkSession.builder().appName("sparkprof-" + mode).getOrCreate();
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    try {
      switch (mode) {
        case "planted":
          warmUp(sc);
          for (String cause : new String[] {"straggler", "skew", "few-tasks", "shuffle", "regex", "exceptions"}) {
            planted(sc, cause);
          }
          break;
        case "planted-memory":
          warmUp(sc);
          planted(sc, "gc");
          planted(sc, "spill");
          break;
        case "short":
          sc.setJobDescription("short");
          sc.parallelize(range(2), 2).map(i -> burn(1_000)).count();
          break;
        case "decommission":
          // Each task says where it runs by a file in ARG; the test decommissions an executor with a task.
          String markers = args[1];
          sc.setJobDescription("decommission");
          sc.parallelize(range(8), 8)
              .map(i -> {
                mark(markers, i);
                return burn(3_000);
              })
              .count();
          break;
        case "dynamic":
          // Two executors are asked for, left idle until dynamic allocation removes them, then asked for again.
          for (int round = 0; round < 2; round++) {
            sc.setJobDescription("dynamic round " + round);
            sc.parallelize(range(8), 8).map(i -> burn(1_500)).count();
            for (long end = System.currentTimeMillis() + 600_000;
                !sc.sc().getExecutorIds().isEmpty() && System.currentTimeMillis() < end; ) {
              Thread.sleep(200);
            }
          }
          break;
        case "cpu":
          // The overhead benchmark's job: CPU-bound tasks over both executors, once they are up and warm (the
          // agent's start is a cost of its own, not of the job's tasks).
          warmUp(sc);
          sc.setJobDescription("cpu");
          sc.parallelize(range(16), 16).map(i -> burn(2_000)).count();
          break;
        default:
          throw new IllegalArgumentException("unknown mode " + mode);
      }
      System.out.println("JOBS DONE " + mode + " " + sc.sc().applicationId());
    } finally {
      spark.stop();
    }
  }

  /**
   * One application per kind of event log Spark writes, one after another in this driver (each its own
   * SparkContext, so its own event log): one per compression codec, a rolling log (each other log is one file,
   * though Spark 4 rolls by default), and last an app that prints
   * {@code JOBS IN PROGRESS appId}, waits until the file release exists (its log is in progress meanwhile), then
   * runs a job whose task always throws, which ends the driver with that failure.
   */
  static void eventLogs(String release) throws Exception {
    for (String codec : new String[] {"lz4", "lzf", "snappy", "zstd"}) {
      SparkSession spark = SparkSession.builder().appName("sparkprof-eventlog-" + codec)
          .config("spark.eventLog.compress", "true").config("spark.eventLog.compression.codec", codec)
          .config("spark.eventLog.rolling.enabled", "false").getOrCreate();
      try {
        small(spark);
      } finally {
        spark.stop();
      }
    }
    // Rolling logs roll at 10 MiB at least: every job and stage event carries the job's local properties, so a
    // large one fills a file within a few jobs.
    SparkSession rolling = SparkSession.builder().appName("sparkprof-eventlog-rolling")
        .config("spark.eventLog.compress", "false").config("spark.eventLog.rolling.enabled", "true")
        .config("spark.eventLog.rolling.maxFileSize", "10m").getOrCreate();
    try {
      char[] pad = new char[3 << 20];
      Arrays.fill(pad, 'p');
      rolling.sparkContext().setLocalProperty("sparkprof.padding", new String(pad));
      small(rolling);
    } finally {
      rolling.stop();
    }
    SparkSession spark = SparkSession.builder().appName("sparkprof-eventlog-failed")
        .config("spark.eventLog.compress", "false").config("spark.eventLog.rolling.enabled", "false").getOrCreate();
    small(spark);
    // Every event so far is in the log (the event log listener flushes the ends of jobs and SQL executions) before
    // the test reads it.
    spark.sparkContext().listenerBus().waitUntilEmpty();
    System.out.println("JOBS IN PROGRESS " + spark.sparkContext().applicationId());
    for (long end = System.currentTimeMillis() + 600_000;
        !new File(release).exists() && System.currentTimeMillis() < end; ) {
      Thread.sleep(100);
    }
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    sc.setJobDescription("planted:failure");
    sc.parallelize(range(4), 2).map(i -> {
      if (i == 3) {
        throw new IllegalStateException("planted failure of partition 3");
      }
      return burn(50);
    }).count();
  }

  /** The rows of a run of the nightly job. */
  static final long NIGHTLY_ROWS = 400_000;

  /**
   * Runs of one recurring job, {@code nightly} (its {@code spark.sparkprof.job}), each its own application: a
   * first run, then one run for each planted change, which the tests compare with the first. Each prints
   * {@code JOBS RUN CHANGE appId}. A warm-up run comes before them all: the first application of a driver loads
   * and compiles Spark's classes, seconds that later runs, each in a driver of its own in production, spend
   * alike.
   */
  static void runs() throws InterruptedException {
    for (String change : new String[] {"warm-up", "first", "input", "skew", "slower", "executors", "partitions"}) {
      SparkSession.Builder b = SparkSession.builder().appName("sparkprof-nightly")
          .config("spark.sparkprof.job", "nightly")
          .config("spark.sql.shuffle.partitions", change.equals("partitions") ? "1" : "8")
          .config("spark.sql.adaptive.coalescePartitions.enabled", "false");
      if (change.equals("executors")) {
        b.config("spark.cores.max", "1"); // one executor of the two workers
      }
      SparkSession spark = b.getOrCreate();
      String app = spark.sparkContext().applicationId();
      try {
        nightly(spark, change.equals("input") ? 2 * NIGHTLY_ROWS : NIGHTLY_ROWS, change.equals("skew") ? 90 : 0,
            change.equals("slower") ? 3 : 1);
        System.out.println("JOBS RUN " + change + " " + app);
      } finally {
        spark.stop();
      }
      waitGone(app);
    }
    System.out.println("JOBS DONE runs");
  }

  /**
   * Waits until no process of the app is left: its executors exit some seconds after it stops on a busy
   * machine, and the next run must not share the cores with them.
   */
  static void waitGone(String app) throws InterruptedException {
    for (long end = System.currentTimeMillis() + 600_000; System.currentTimeMillis() < end; ) {
      if (ProcessHandle.allProcesses().noneMatch(p -> p.info().commandLine().orElse("").contains(app))) {
        return;
      }
      Thread.sleep(100);
    }
  }

  /**
   * The nightly job: rows keyed by one of 1000 keys (skewPct % of them by key 0), repartitioned by key, each
   * row's date parsed by the job's UDF parseDate, summed by key.
   */
  static void nightly(SparkSession spark, long rows, int skewPct, int slowdown) {
    spark.udf().register("parseDate", (UDF1<String, Long>) s -> parseDate(s, slowdown), DataTypes.LongType);
    spark.sparkContext().setJobDescription("nightly");
    spark.range(0, rows, 1, 4)
        .selectExpr("CASE WHEN id % 100 < " + skewPct + " THEN 0 ELSE id % 1000 END AS k",
            "concat('2026-12-', id % 28 + 1, 'T', id) AS d")
        .repartition(functions.col("k"))
        .selectExpr("k", "parseDate(d) AS t")
        .groupBy("k").sum("t")
        .collect();
  }

  /** The nightly job's own function, where its time goes: a slower release of it works slowdown times as long. */
  static long parseDate(String s, int slowdown) {
    long h = 0;
    for (int r = 0; r < 900 * slowdown; r++) {
      for (int i = 0; i < s.length(); i++) {
        h = h * 31 + s.charAt(i);
      }
    }
    return h & 0xffff; // summed by key: no overflow
  }

  /** A few seconds of jobs: an RDD job with a shuffle and a SQL aggregation. */
  static void small(SparkSession spark) {
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    sc.setJobDescription("rdd");
    sc.parallelize(range(8), 4).mapToPair(i -> new Tuple2<>(i % 3, burn(50))).reduceByKey(Long::sum, 2).count();
    sc.setJobDescription(null);
    spark.range(0, 100_000, 1, 4).selectExpr("id % 10 AS k").groupBy("k").count().collect();
  }

  /**
   * A job of short tasks on both executors first: a new executor's first tasks load classes and can run for
   * seconds on a busy machine, which the planted jobs' stages must not mistake for their cause.
   */
  static void warmUp(JavaSparkContext sc) {
    sc.setJobDescription("warm-up");
    sc.parallelize(range(8), 8).map(i -> burn(200)).count();
  }

  static List<Integer> range(int n) {
    List<Integer> l = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      l.add(i);
    }
    return l;
  }

  /** Runs one planted job. */
  static void planted(JavaSparkContext sc, String cause) {
    sc.setJobDescription("planted:" + cause);
    switch (cause) {
      case "straggler":
        // Eight tasks of half a second, but partition 5 spends six seconds in slowPartition.
        sc.parallelize(range(8), 8).map(i -> i == 5 ? slowPartition(6_000) : burn(500)).count();
        break;
      case "skew":
        // 90 % of the rows have key 0: one reduce task reads and works through most of the shuffle.
        pairs(sc, 8, 50_000, 90).groupByKey(8).map(kv -> {
          long n = 0;
          for (String v : kv._2) {
            n += work(v);
          }
          return n;
        }).count();
        break;
      case "few-tasks":
        // All of a 40 MB shuffle read by one task, with two slots free.
        // (filter, not map: a map to the work's long would box each one.)
        // (partitionBy, not repartition: that keys each record by a boxed Integer.)
        pairs(sc, 4, 100_000, 0).partitionBy(new org.apache.spark.HashPartitioner(1))
            .filter(kv -> work(kv._2) == 42).count();
        break;
      case "shuffle":
        // Most of the stage's time is writing and fetching shuffle data: wide rows, little work.
        pairs(sc, 4, 150_000, 0).partitionBy(new org.apache.spark.HashPartitioner(4)).count();
        break;
      case "regex":
        // A regular expression compiled for every row.
        sc.parallelize(range(4), 4).flatMap(i -> rows(300_000))
            .filter(s -> Pattern.compile("^(r|q)([0-9]{1,9})(x|y|z)+(\\.[a-z]+)?$").matcher(s).matches()).count();
        break;
      case "exceptions":
        // Exceptions as control flow: parsing that fails for most rows.
        sc.parallelize(range(4), 4).flatMap(i -> rows(150_000)).filter(s -> parseOrZero(s) > 0).count();
        break;
      case "gc":
        // Each task keeps a growing set of small objects alive while it allocates: the heap fills and the
        // collector works.
        sc.parallelize(range(4), 4).map(i -> churn(5_000_000)).count();
        break;
      case "spill":
        // A sort of more records than it may hold in memory (the test sets Spark's threshold of records).
        pairs(sc, 4, 100_000, 0).sortByKey(true, 4).map(kv -> kv._2.length()).count();
        break;
      default:
        throw new IllegalArgumentException("unknown cause " + cause);
    }
  }

  /** Rows of about 100 bytes, keyed by strings (no boxing): skewPct % of them have key k0, the rest spread over 1000 keys. */
  static JavaPairRDD<String, String> pairs(JavaSparkContext sc, int parts, int perPart, int skewPct) {
    JavaRDD<Integer> seeds = sc.parallelize(range(parts), parts);
    return seeds.flatMapToPair(p -> {
      List<Tuple2<String, String>> out = new ArrayList<>(perPart);
      char[] pad = new char[96];
      Arrays.fill(pad, (char) ('a' + p));
      String padding = new String(pad);
      for (int i = 0; i < perPart; i++) {
        int key = (i % 100) < skewPct ? 0 : 1 + (i * 31 + p) % 1000;
        out.add(new Tuple2<>("k" + key, padding + i));
      }
      return out.iterator();
    });
  }

  /** n short rows, made as they are read: the list of them would be garbage of its own. */
  static Iterator<String> rows(int n) {
    return new Iterator<String>() {
      int i;

      @Override
      public boolean hasNext() {
        return i < n;
      }

      @Override
      public String next() {
        i++;
        return (i % 7 == 0 ? "r" : "x") + i + "x";
      }
    };
  }

  static long parseOrZero(String s) {
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** Some CPU per row. */
  static long work(String s) {
    long h = 0;
    for (int r = 0; r < 200; r++) {
      for (int i = 0; i < s.length(); i++) {
        h = h * 31 + s.charAt(i);
      }
    }
    return h;
  }

  /** The straggler's own function, where its time goes: the flame graph of its task must show it. */
  static long slowPartition(long millis) {
    long end = System.nanoTime() + millis * 1_000_000;
    long x = 1;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 10_000; i++) {
        x = x * 6364136223846793005L + i;
      }
    }
    return x;
  }

  /** Spins the CPU for about millis of wall time. */
  static long burn(long millis) {
    long end = System.nanoTime() + millis * 1_000_000;
    long x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 10_000; i++) {
        x += (x ^ i) * 2654435761L;
      }
    }
    return x;
  }

  /** Allocates n small objects, keeping the newest two million alive. */
  static long churn(int n) {
    List<long[]> live = new ArrayList<>();
    long sum = 0;
    for (int i = 0; i < n; i++) {
      long[] a = new long[8];
      a[0] = i;
      if (live.size() < 2_000_000) {
        live.add(a);
      } else {
        live.set(i % live.size(), a);
      }
      sum += live.get((i * 7) % live.size())[0];
    }
    Collections.shuffle(live);
    return sum + live.size();
  }

  /** Writes a file named for the executor into dir, so that a test knows which executor runs a task. */
  static void mark(String dir, int partition) throws IOException {
    String exec = SparkEnv.get().executorId();
    Files.write(new File(dir, "task-" + partition + "-executor-" + exec).toPath(),
        String.valueOf(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8),
        StandardOpenOption.CREATE, StandardOpenOption.WRITE);
  }
}
