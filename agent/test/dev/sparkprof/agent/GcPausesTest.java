package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.management.ListenerNotFoundException;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

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

  /**
   * GC notifications of this JVM: a collection, then its line in the next drain. The test waits for the JVM's
   * own notification of the forced collection, on a listener added after the agent's, which the JVM calls in
   * the order they were added: however slow a busy machine makes the notification, the agent has it by then.
   */
  static void notifications() {
    GcPauses gc = new GcPauses();
    gc.install();
    CountDownLatch forced = new CountDownLatch(1);
    NotificationListener seen = (n, handback) -> {
      if (GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())
          && "System.gc()".equals(GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData()).getGcCause())) {
        forced.countDown();
      }
    };
    List<NotificationEmitter> emitters = new ArrayList<>();
    for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (b instanceof NotificationEmitter && GcPauses.reportsPauses(b.getName())) {
        ((NotificationEmitter) b).addNotificationListener(seen, null, null);
        emitters.add((NotificationEmitter) b);
      }
    }
    long before = System.currentTimeMillis();
    System.gc();
    boolean arrived;
    try {
      // Only a guard against a hang: the notification's own arrival ends the wait.
      arrived = forced.await(10, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      arrived = false;
    }
    for (NotificationEmitter e : emitters) {
      try {
        e.removeNotificationListener(seen);
      } catch (ListenerNotFoundException ignored) {
        // Added above: always there.
      }
    }
    gc.uninstall();
    check("the JVM notified the forced collection", arrived, true);
    String lines = gc.drain();
    check("gc drained", lines != null, true);
    if (lines == null) {
      return;
    }
    // Every line has the format; a collection of the JVM's own (cause "G1 Evacuation Pause", say) may come
    // first, so the forced one is looked for among them.
    String forcedLine = null;
    for (String line : lines.split("\n")) {
      check("gc line " + line, line.matches("\\{\"name\":\"[^\"]+\",\"cause\":\"[^\"]+\",\"startMs\":\\d+,\"durationMs\":\\d+\\}"), true);
      if (forcedLine == null && line.contains("\"cause\":\"System.gc()\"")) {
        forcedLine = line;
      }
    }
    check("gc forced by System.gc() among " + lines, forcedLine != null, true);
    if (forcedLine != null) {
      long start = Long.parseLong(forcedLine.replaceAll(".*\"startMs\":(\\d+).*", "$1"));
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
