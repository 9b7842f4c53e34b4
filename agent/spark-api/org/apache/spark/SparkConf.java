package org.apache.spark;

/** Compile-only mirror of the SparkConf members the agent uses. */
public class SparkConf {
  public String get(String key, String defaultValue) {
    throw new UnsupportedOperationException("compile-only");
  }

  public boolean contains(String key) {
    throw new UnsupportedOperationException("compile-only");
  }
}
