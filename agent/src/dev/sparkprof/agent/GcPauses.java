package dev.sparkprof.agent;

import com.sun.management.GarbageCollectionNotificationInfo;
import com.sun.management.GcInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.ListenerNotFoundException;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * Garbage collections from the JVM's own notifications, for windows whose samples come from async-profiler
 * with no Flight Recorder running to record them: one JSON line per collection, shipped in each upload's
 * {@code gc} part. Starting the Flight Recorder for GC events alone would cost its start-up (about a second
 * and a half of CPU); a listener costs nothing until a collection ends. Durations are whole milliseconds, the
 * notifications' resolution. At most {@link #MAX} collections wait; older ones are dropped and counted.
 */
final class GcPauses implements NotificationListener {
  static final int MAX = 10_000;

  private final ArrayDeque<String> lines = new ArrayDeque<>();
  private final List<NotificationEmitter> emitters = new ArrayList<>();
  private final long jvmStartMs = ManagementFactory.getRuntimeMXBean().getStartTime();
  final AtomicLong dropped = new AtomicLong();

  /** Listens to every collector of this JVM that reports pauses. */
  void install() {
    for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
      if (gc instanceof NotificationEmitter && reportsPauses(gc.getName())) {
        NotificationEmitter e = (NotificationEmitter) gc;
        e.addNotificationListener(this, null, null);
        emitters.add(e);
      }
    }
  }

  /**
   * Whether the collector bean of that name reports pauses: ZGC's and Shenandoah's "... Cycles" beans report
   * their concurrent cycles, which last far longer than they stop the application; their "... Pauses" beans
   * report the pauses.
   */
  static boolean reportsPauses(String beanName) {
    return !beanName.endsWith(" Cycles");
  }

  /** Stops listening. */
  void uninstall() {
    for (NotificationEmitter e : emitters) {
      try {
        e.removeNotificationListener(this);
      } catch (ListenerNotFoundException ignored) {
        // Never added: nothing to remove.
      }
    }
    emitters.clear();
  }

  /** Called by the JVM's service thread after each collection; never throws. */
  @Override
  public void handleNotification(Notification n, Object handback) {
    try {
      if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
        return;
      }
      GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
      GcInfo g = info.getGcInfo();
      add("{\"name\":" + Json.quote(info.getGcName()) + ",\"cause\":" + Json.quote(info.getGcCause()) + ",\"startMs\":"
          + (jvmStartMs + g.getStartTime()) + ",\"durationMs\":" + g.getDuration() + "}");
    } catch (Throwable t) {
      Log.once("reading a GC notification failed", t);
    }
  }

  void add(String line) {
    synchronized (lines) {
      if (lines.size() >= MAX) {
        lines.poll();
        dropped.incrementAndGet();
      }
      lines.add(line);
    }
  }

  /** Takes the collections recorded since the last drain, as JSON lines; null when there were none. */
  String drain() {
    StringBuilder b = new StringBuilder();
    synchronized (lines) {
      for (String l; (l = lines.poll()) != null; ) {
        b.append(l).append('\n');
      }
    }
    return b.length() == 0 ? null : b.toString();
  }
}
