package org.apache.spark.api.plugin;

import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkContext;

/** Compile-only mirror of Spark's DriverPlugin (3.0+). */
public interface DriverPlugin {
  default Map<String, String> init(SparkContext sc, PluginContext pluginContext) {
    return Collections.emptyMap();
  }

  default void registerMetrics(String appId, PluginContext pluginContext) {}

  default Object receive(Object message) throws Exception {
    throw new UnsupportedOperationException();
  }

  default void shutdown() {}
}
