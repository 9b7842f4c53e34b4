package org.apache.spark.api.plugin;

import com.codahale.metrics.MetricRegistry;
import java.io.IOException;
import org.apache.spark.SparkConf;

/** Compile-only mirror of Spark's PluginContext (3.0+), less resources(). */
public interface PluginContext {
  MetricRegistry metricRegistry();

  SparkConf conf();

  String executorID();

  String hostname();

  void send(Object message) throws IOException;

  Object ask(Object message) throws Exception;
}
