package org.apache.spark;

import java.util.HashMap;
import java.util.Map;

/** Test-time SparkConf: a map, standing in for Spark's in the plugin test. */
public class SparkConf {
  private final Map<String, String> values = new HashMap<>();

  public SparkConf set(String key, String value) {
    values.put(key, value);
    return this;
  }

  public String get(String key, String defaultValue) {
    return values.getOrDefault(key, defaultValue);
  }

  public boolean contains(String key) {
    return values.containsKey(key);
  }
}
