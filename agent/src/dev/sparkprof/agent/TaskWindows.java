package dev.sparkprof.agent;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * Exact task start and end per thread, from the executor plugin's task hooks, shipped with each upload so
 * that the server can attribute samples even where thread names do not say the task. Hooks run on task
 * threads: they only read the TaskContext and touch lock-free queues.
 */
final class TaskWindows {
  static final int MAX = 100_000;

  static final class Task {
    final long threadId;
    final String threadName;
    final int stageId, stageAttempt, partition;
    final long taskId, startMs;
    volatile long endMs;
    volatile String status = "RUNNING";
    /** The pids of the Python workers that served the task; only the Python sampler's thread writes it. */
    volatile long[] pythonPids = new long[0];

    Task(long threadId, String threadName, int stageId, int stageAttempt, int partition, long taskId, long startMs) {
      this.threadId = threadId;
      this.threadName = threadName;
      this.stageId = stageId;
      this.stageAttempt = stageAttempt;
      this.partition = partition;
      this.taskId = taskId;
      this.startMs = startMs;
    }

    void addPythonPid(long pid) {
      long[] pids = pythonPids;
      for (long p : pids) {
        if (p == pid) {
          return;
        }
      }
      long[] more = Arrays.copyOf(pids, pids.length + 1);
      more[pids.length] = pid;
      pythonPids = more;
    }

    String json() {
      long[] pids = pythonPids;
      String python = pids.length == 0 ? ""
          : Arrays.stream(pids).mapToObj(Long::toString).collect(Collectors.joining(",", ",\"pythonPids\":[", "]"));
      return String.format(
          "{\"threadId\":%d,\"threadName\":%s,\"stageId\":%d,\"stageAttempt\":%d,\"partition\":%d,"
              + "\"taskId\":%d,\"startMs\":%d,\"endMs\":%d,\"status\":\"%s\"%s}",
          threadId, Json.quote(threadName), stageId, stageAttempt, partition, taskId,
          startMs, endMs, status, python);
    }
  }

  private final ConcurrentHashMap<Long, Task> running = new ConcurrentHashMap<>();
  private final ConcurrentLinkedQueue<Task> ended = new ConcurrentLinkedQueue<>();
  /** The last RECENT tasks that ended, for {@link #between}: drains do not take them. */
  private final ConcurrentLinkedQueue<Task> recent = new ConcurrentLinkedQueue<>();
  private final AtomicInteger recentSize = new AtomicInteger();
  static final int RECENT = 10_000;
  private final AtomicInteger endedSize = new AtomicInteger();
  final AtomicLong dropped = new AtomicLong();

  private static volatile Method get, stageId, stageAttempt, partitionId, taskAttemptId;
  private static volatile boolean reflectFailed;

  /** Records the start of the task running on the current thread. */
  void start() {
    Object tc = taskContext();
    if (tc == null) {
      return;
    }
    try {
      Thread t = Thread.currentThread();
      Task task =
          new Task(t.getId(), t.getName(), (Integer) stageId.invoke(tc), (Integer) stageAttempt.invoke(tc),
              (Integer) partitionId.invoke(tc), (Long) taskAttemptId.invoke(tc), System.currentTimeMillis());
      if (running.size() < MAX) {
        running.put(t.getId(), task);
      }
    } catch (ReflectiveOperationException | RuntimeException e) {
      Log.once("cannot read the TaskContext", e);
    }
  }

  /**
   * Records the end of the current thread's task. The task joins the ended ones before it leaves the running
   * ones, and drain reads them in the other order, so that a drain racing with an end still sees the task.
   */
  void end(String status) {
    long tid = Thread.currentThread().getId();
    Task task = running.get(tid);
    if (task == null) {
      return;
    }
    task.endMs = System.currentTimeMillis();
    task.status = status;
    ended.add(task);
    recent.add(task);
    if (recentSize.incrementAndGet() > RECENT && recent.poll() != null) {
      recentSize.decrementAndGet();
    }
    running.remove(tid);
    if (endedSize.incrementAndGet() > MAX && ended.poll() != null) {
      endedSize.decrementAndGet();
      dropped.incrementAndGet();
    }
  }

  /** The tasks the last drain took from the ended ones: the next window repeats them. */
  private List<Task> lastEnded = new ArrayList<>();

  /**
   * Takes a snapshot of the running tasks and the ended ones, as JSON lines. A task ending meanwhile may be in
   * both; the server attributes by either. The tasks that ended before the last drain are sent again: a window's
   * recording ends before its tasks are drained, so the next window holds the last samples of a task that ended
   * in between.
   */
  String drain() {
    List<String> lines = new ArrayList<>();
    for (Task t : running.values()) {
      lines.add(t.json());
    }
    for (Task t : lastEnded) {
      lines.add(t.json());
    }
    List<Task> now = new ArrayList<>();
    for (Task t; (t = ended.poll()) != null; ) {
      endedSize.decrementAndGet();
      lines.add(t.json());
      now.add(t);
    }
    lastEnded = now;
    return lines.isEmpty() ? null : String.join("\n", lines) + "\n";
  }

  /**
   * The tasks that ran between fromMs and untilMs, as JSON lines, null when none: those running and the last
   * {@link #RECENT} that ended, whether or not a drain took them. The Python sampler sends them with its windows.
   */
  String between(long fromMs, long untilMs) {
    List<String> lines = new ArrayList<>();
    for (Task t : running.values()) {
      if (t.startMs <= untilMs) {
        lines.add(t.json());
      }
    }
    for (Task t : recent) {
      if (t.startMs <= untilMs && t.endMs >= fromMs) {
        lines.add(t.json());
      }
    }
    return lines.isEmpty() ? null : String.join("\n", lines) + "\n";
  }

  /**
   * Notes that the Python worker pid serves task taskId, running or among the recent ones. Only the Python
   * sampler's thread calls it.
   */
  void pythonWorker(long taskId, long pid) {
    for (Task t : running.values()) {
      if (t.taskId == taskId) {
        t.addPythonPid(pid);
        return;
      }
    }
    for (Task t : recent) {
      if (t.taskId == taskId) {
        t.addPythonPid(pid);
        return;
      }
    }
  }

  private static Object taskContext() {
    if (reflectFailed) {
      return null;
    }
    try {
      if (get == null) {
        Class<?> c = Class.forName("org.apache.spark.TaskContext");
        stageId = c.getMethod("stageId");
        stageAttempt = c.getMethod("stageAttemptNumber");
        partitionId = c.getMethod("partitionId");
        taskAttemptId = c.getMethod("taskAttemptId");
        get = c.getMethod("get");
      }
      return get.invoke(null);
    } catch (ReflectiveOperationException | LinkageError e) {
      reflectFailed = true;
      Log.once("no org.apache.spark.TaskContext: task windows come from thread names only", e);
      return null;
    }
  }
}
