package org.apache.spark.api.plugin;

/** Compile-only mirror of Spark's SparkPlugin (3.0+). */
public interface SparkPlugin {
  DriverPlugin driverPlugin();

  ExecutorPlugin executorPlugin();
}
