package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

/** Unit tests of GcPauses: which collector beans report pauses, this JVM's notifications, the drain and bound. */
final class GcPausesTest {
  private GcPausesTest() {}

  static void run() {
    reportsPauses();
    notifications();
    bound();
  }

  static void reportsPauses() {
    Object[][] cases = {
      {"G1 Young Generation", true},
      {"ZGC Pauses", true},
      {"ZGC Cycles", false},
      {"Shenandoah Cycles", false},
    };
    for (Object[] c : cases) {
      check("reports pauses: " + c[0], GcPauses.reportsPauses((String) c[0]), c[1]);
    }
  }

  /** GC notifications of this JVM: a collection, then its line in the next drain. */
  static void notifications() {
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
    if (lines == null) {
      return;
    }
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

  /**
   * A notification already on its way (one System.gc() can end more than one collection) can still arrive
   * after a drain or after uninstall, so draining and the bound are checked on one that never listened.
   */
  static void bound() {
    GcPauses bounded = new GcPauses();
    bounded.add("{}");
    check("gc drain", bounded.drain(), "{}\n");
    check("gc drain empties", bounded.drain(), null);
    for (int i = 0; i < GcPauses.MAX + 5; i++) {
      bounded.add("{}");
    }
    check("gc bounded", bounded.dropped.get(), 5L);
  }
}
