package dev.sparkprof.agent;

import java.util.Map;

/** Unit tests of the agent's parsing; exits non-zero on the first failure (no JUnit offline). */
public final class AgentUnitTest {
  static int failures;

  static void check(String what, Object got, Object want) {
    if (!String.valueOf(got).equals(String.valueOf(want))) {
      System.err.println("FAIL " + what + ": got " + got + ", want " + want);
      failures++;
    }
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  public static void main(String[] args) {
    String[] yarn = Agent.fromCommandLine(
        "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend --driver-url spark://CoarseGrainedScheduler@10.0.0.1:35000 "
            + "--executor-id 3 --hostname node-7 --cores 4 --app-id application_1603128018386_7846 --resourceProfileId 0");
    check("yarn role", yarn[0], "executor");
    check("yarn app", yarn[1], "application_1603128018386_7846");
    check("yarn executor", yarn[2], "3");
    String[] standalone = Agent.fromCommandLine(
        "org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url x --executor-id 12 --hostname h --cores 2 --app-id app-20240101-0001");
    check("standalone executor", standalone[2], "12");
    String[] driver = Agent.fromCommandLine("org.apache.spark.deploy.SparkSubmit --class Main app.jar");
    check("driver role", driver[0], "driver");
    check("driver id", driver[2], "driver");
    check("other jvm", Agent.fromCommandLine("com.example.Main")[0], "jvm");

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
    try {
      byte[] jfr = "FLR\0 a recording".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      check("uncompressed", Agent.compress(jfr, "none") == jfr, true);
      byte[] gz = Agent.compress(jfr, "GZIP");
      check("gzip magic", (gz[0] & 0xff) == 0x1f && (gz[1] & 0xff) == 0x8b, true);
      byte[] back = new java.util.zip.GZIPInputStream(new java.io.ByteArrayInputStream(gz)).readAllBytes();
      check("gzip round trip", java.util.Arrays.equals(back, jfr), true);
    } catch (java.io.IOException e) {
      check("compress", e, null);
    }

    // A window is sent only when its file is whole JFR chunks: a real recording, two of them one after the
    // other, and not one cut short, empty, or not JFR at all.
    try {
      java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("sparkprof-test");
      java.nio.file.Path rec = dir.resolve("rec.jfr");
      try (jdk.jfr.Recording r = new jdk.jfr.Recording()) {
        r.enable("jdk.CPULoad").withPeriod(java.time.Duration.ofMillis(10));
        r.start();
        Thread.sleep(100);
        r.stop();
        r.dump(rec);
      }
      byte[] whole = java.nio.file.Files.readAllBytes(rec);
      check("whole recording", Profiler.wholeRecording(rec), true);
      java.nio.file.Path f = dir.resolve("f.jfr");
      java.nio.file.Files.write(f, concat(whole, whole));
      check("two chunks", Profiler.wholeRecording(f), true);
      java.nio.file.Files.write(f, java.util.Arrays.copyOf(whole, whole.length - 1));
      check("cut recording", Profiler.wholeRecording(f), false);
      java.nio.file.Files.write(f, concat(whole, java.util.Arrays.copyOf(whole, 100)));
      check("second chunk cut", Profiler.wholeRecording(f), false);
      java.nio.file.Files.write(f, new byte[0]);
      check("empty file", Profiler.wholeRecording(f), false);
      byte[] notJfr = whole.clone();
      notJfr[0] = 'X';
      java.nio.file.Files.write(f, notJfr);
      check("not JFR", Profiler.wholeRecording(f), false);
      check("no file", Profiler.wholeRecording(dir.resolve("none.jfr")), false);
      for (java.nio.file.Path p : new java.nio.file.Path[] {rec, f}) {
        java.nio.file.Files.deleteIfExists(p);
      }
      java.nio.file.Files.delete(dir);
    } catch (java.io.IOException | InterruptedException e) {
      check("recording", e, null);
    }

    Labels ls = new Labels();
    ls.put("spark_app_id", "app-1");
    ls.put("host", "node 1");
    ls.parse("team=data;cost_center=42");
    check("name", ls.pyroscopeName("my app"), "my_app{cost_center=42,host=node_1,spark_app_id=app-1,team=data}");

    check("json", Json.quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");

    check("G1 young pauses", GcPauses.reportsPauses("G1 Young Generation"), true);
    check("ZGC pauses", GcPauses.reportsPauses("ZGC Pauses"), true);
    check("ZGC cycles are not pauses", GcPauses.reportsPauses("ZGC Cycles"), false);
    check("Shenandoah cycles are not pauses", GcPauses.reportsPauses("Shenandoah Cycles"), false);

    // GC notifications of this JVM: a collection, then its line in the next drain.
    GcPauses gc = new GcPauses();
    gc.install();
    long before = System.currentTimeMillis();
    StringBuilder drained = new StringBuilder();
    for (int i = 0; i < 50 && drained.indexOf("\"cause\":\"System.gc()\"") < 0; i++) {
      System.gc();
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        break;
      }
      String l = gc.drain();
      if (l != null) {
        drained.append(l);
      }
    }
    gc.uninstall();
    String lines = drained.length() == 0 ? null : drained.toString();
    check("gc drained", lines != null, true);
    if (lines != null) {
      // Every line has the format; a collection of the JVM's own (cause "G1 Evacuation Pause", say) may come
      // first, so the forced one is looked for among them.
      String forced = null;
      for (String line : lines.split("\n")) {
        check("gc line " + line, line.matches("\\{\"name\":\"[^\"]+\",\"cause\":\"[^\"]+\",\"startMs\":\\d+,\"durationMs\":\\d+\\}"), true);
        if (forced == null && line.contains("\"cause\":\"System.gc()\"")) {
          forced = line;
        }
      }
      check("gc forced by System.gc() among " + lines, forced != null, true);
      if (forced != null) {
        long start = Long.parseLong(forced.replaceAll(".*\"startMs\":(\\d+).*", "$1"));
        check("gc start within the test", start >= before - 1000 && start <= System.currentTimeMillis(), true);
      }
    }
    // A notification already on its way (one System.gc() can end more than one collection) can still arrive
    // after a drain or after uninstall, so draining and the bound are checked on one that never listened.
    GcPauses bounded = new GcPauses();
    bounded.add("{}");
    check("gc drain", bounded.drain(), "{}\n");
    check("gc drain empties", bounded.drain(), null);
    for (int i = 0; i < GcPauses.MAX + 5; i++) {
      bounded.add("{}");
    }
    check("gc bounded", bounded.dropped.get(), 5L);

    if (failures > 0) {
      System.exit(1);
    }
    System.out.println("agent: unit tests passed");
  }
}
