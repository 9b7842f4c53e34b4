package org.apache.spark.api.plugin;

import java.util.Map;
import org.apache.spark.TaskFailedReason;

/** Compile-only mirror of Spark's ExecutorPlugin (3.0+; task hooks 3.1+). */
public interface ExecutorPlugin {
  default void init(PluginContext ctx, Map<String, String> extraConf) {}

  default void shutdown() {}

  default void onTaskStart() {}

  default void onTaskSucceeded() {}

  default void onTaskFailed(TaskFailedReason failureReason) {}
}
