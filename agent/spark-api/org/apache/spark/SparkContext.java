package org.apache.spark;

/** Compile-only mirror of the SparkContext members the agent uses. */
public class SparkContext {
  public SparkConf getConf() {
    throw new UnsupportedOperationException("compile-only");
  }

  public String applicationId() {
    throw new UnsupportedOperationException("compile-only");
  }

  public String appName() {
    throw new UnsupportedOperationException("compile-only");
  }
}
