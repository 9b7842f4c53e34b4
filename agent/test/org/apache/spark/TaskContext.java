package org.apache.spark;

/** Test-time TaskContext: what Spark's executor sets on a task thread, as the plugin reads it. */
public class TaskContext {
  private static final ThreadLocal<TaskContext> current = new ThreadLocal<>();
  private final int stageId, stageAttempt, partition;
  private final long taskAttemptId;

  public TaskContext(int stageId, int stageAttempt, int partition, long taskAttemptId) {
    this.stageId = stageId;
    this.stageAttempt = stageAttempt;
    this.partition = partition;
    this.taskAttemptId = taskAttemptId;
  }

  public static TaskContext get() {
    return current.get();
  }

  public static void set(TaskContext tc) {
    current.set(tc);
  }

  public int stageId() {
    return stageId;
  }

  public int stageAttemptNumber() {
    return stageAttempt;
  }

  public int partitionId() {
    return partition;
  }

  public long taskAttemptId() {
    return taskAttemptId;
  }
}
