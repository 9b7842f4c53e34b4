package dev.sparkprof.agent;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import jdk.jfr.Recording;

/**
 * Unit tests of the agent's classes, run by build.sh with the JDK alone: each check prints what failed, and the
 * run exits non-zero if any did.
 */
public final class AgentUnitTest {
  static int failures;
  private static byte[] recording;

  static void check(String what, Object got, Object want) {
    if (!String.valueOf(got).equals(String.valueOf(want))) {
      System.err.println("FAIL " + what + ": got " + got + ", want " + want);
      failures++;
    }
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  /** A check that works in a directory of its own. */
  interface DirCheck {
    void run(Path dir) throws Exception;
  }

  /** Runs checks in a new temporary directory, deleted afterwards. */
  static void inTempDir(String prefix, DirCheck... checks) throws Exception {
    Path dir = Files.createTempDirectory(prefix);
    try {
      for (DirCheck c : checks) {
        c.run(dir);
      }
    } finally {
      Agent.deleteTree(dir);
    }
  }

  /** A real recording of this JVM by the Flight Recorder, one chunk, made once. */
  static synchronized byte[] recording() throws IOException, InterruptedException {
    if (recording == null) {
      Path dir = Files.createTempDirectory("sparkprof-test");
      Path rec = dir.resolve("rec.jfr");
      try (Recording r = new Recording()) {
        r.enable("jdk.CPULoad").withPeriod(Duration.ofMillis(10));
        r.start();
        Thread.sleep(100);
        r.stop();
        r.dump(rec);
      }
      recording = Files.readAllBytes(rec);
      Agent.deleteTree(dir);
    }
    return recording;
  }

  public static void main(String[] args) throws Exception {
    commandLine();
    config();
    compress();
    inTempDir("sparkprof-test", AgentUnitTest::wholeRecording);
    labels();
    GcPausesTest.run();
    WindowQueueTest.run();
    UploaderTest.run();
    OutputFileTest.run();
    ExitWindowTest.run();
    StackDepthTest.run();
    PythonSamplerTest.run();
    if (failures > 0) {
      System.exit(1);
    }
    System.out.println("agent: unit tests passed");
  }

  /** Role, app id and executor id from the JVM's command line, as Spark's backends start executors. */
  static void commandLine() {
    String[][] cases = {
      // command line, role, app id, executor id
      {"org.apache.spark.executor.YarnCoarseGrainedExecutorBackend --driver-url spark://CoarseGrainedScheduler@10.0.0.1:35000 "
          + "--executor-id 3 --hostname node-7 --cores 4 --app-id application_1603128018386_7846 --resourceProfileId 0",
        "executor", "application_1603128018386_7846", "3"},
      {"org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url x --executor-id 12 --hostname h --cores 2 "
          + "--app-id app-20240101-0001", "executor", "app-20240101-0001", "12"},
      {"org.apache.spark.deploy.SparkSubmit --class Main app.jar", "driver", null, "driver"},
      {"com.example.Main", "jvm", null, null},
    };
    for (String[] c : cases) {
      String[] got = Agent.fromCommandLine(c[0]);
      check("role of " + c[0], got[0], c[1]);
      check("app id of " + c[0], got[1], c[2]);
      check("executor id of " + c[0], got[2], c[3]);
    }
  }

  /** Settings from options and the environment, and their parsing. */
  static void config() {
    Config cfg = new Config();
    cfg.parseOptions("server=http://h:4040,uploadInterval=2s,fraction=0.5");
    cfg.parseEnv(Map.of("SPARKPROF_UPLOAD_INTERVAL", "3s", "SPARKPROF_AUTH_TOKEN", "t", "PATH", "/bin"));
    check("option", cfg.get("server"), "http://h:4040");
    check("env overrides option", cfg.millis("uploadInterval", 0), 3000);
    check("env camel case", cfg.get("authToken"), "t");
    check("fraction", cfg.fraction(), 0.5);
    check("default events", cfg.hasEvent("lock"), true);
    Config bad = new Config();
    bad.put("interval", "soon");
    check("bad duration falls back", bad.millis("interval", 10), 10);
    check("size", new Config().bytes("maxQueuedBytes", 0), 64L << 20);
    check("default compression", new Config().get("compression"), "none");
    check("default start wait", SparkProfPlugin.startWait(new Config()), 3000L);
    check("default stop wait", SparkProfPlugin.stopWait(new Config()), 10_000L);
    Config waits = new Config();
    waits.parseOptions("startWait=10m,stopWait=0");
    check("start wait", SparkProfPlugin.startWait(waits), 600_000L);
    check("no stop wait", SparkProfPlugin.stopWait(waits), 0L);
  }

  /** A window's recording as sent: itself by default, gzipped with compression=gzip (any case). */
  static void compress() throws IOException {
    byte[] jfr = "FLR\0 a recording".getBytes(StandardCharsets.US_ASCII);
    check("uncompressed", Uploader.compress(jfr, "none") == jfr, true);
    byte[] gz = Uploader.compress(jfr, "GZIP");
    check("gzip magic", (gz[0] & 0xff) == 0x1f && (gz[1] & 0xff) == 0x8b, true);
    byte[] back = new GZIPInputStream(new ByteArrayInputStream(gz)).readAllBytes();
    check("gzip round trip", Arrays.equals(back, jfr), true);
  }

  /**
   * A window is sent only when its file is whole JFR chunks: a real recording, two of them one after the other,
   * and not one cut short, empty, or not JFR at all.
   */
  static void wholeRecording(Path dir) throws IOException, InterruptedException {
    byte[] whole = recording();
    byte[] notJfr = whole.clone();
    notJfr[0] = 'X';
    Object[][] cases = {
      {"whole recording", whole, true},
      {"two chunks", concat(whole, whole), true},
      {"cut recording", Arrays.copyOf(whole, whole.length - 1), false},
      {"second chunk cut", concat(whole, Arrays.copyOf(whole, 100)), false},
      {"empty file", new byte[0], false},
      {"not JFR", notJfr, false},
    };
    Path f = dir.resolve("f.jfr");
    for (Object[] c : cases) {
      Files.write(f, (byte[]) c[1]);
      check((String) c[0], Profiler.wholeRecording(f), c[2]);
    }
    check("no file", Profiler.wholeRecording(dir.resolve("none.jfr")), false);
  }

  /** The Pyroscope name of the labels, and JSON strings. */
  static void labels() {
    Labels ls = new Labels();
    ls.put("spark_app_id", "app-1");
    ls.put("host", "node 1");
    ls.parse("team=data;cost_center=42");
    check("name", ls.pyroscopeName("my app"), "my_app{cost_center=42,host=node_1,spark_app_id=app-1,team=data}");
    check("json", Json.quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
  }
}
