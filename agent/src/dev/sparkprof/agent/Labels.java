package dev.sparkprof.agent;

import java.util.Map;
import java.util.TreeMap;

/**
 * The labels an upload carries, with the standard names of sparkprof's profile model. The plugin adds to
 * them while the shipper thread reads them, so every method holds the lock.
 */
final class Labels {
  final Map<String, String> values = new TreeMap<>();

  synchronized void put(String name, String value) {
    if (value != null && !value.isEmpty()) {
      values.put(name, value);
    }
  }

  /** Puts the label unless it has a value already. */
  synchronized void putIfAbsent(String name, String value) {
    if (!values.containsKey(name)) {
      put(name, value);
    }
  }

  synchronized String get(String name) {
    return values.get(name);
  }

  /** Adds extra labels given as {@code k=v;k=v} (the labels setting). */
  synchronized void parse(String extra) {
    if (extra == null) {
      return;
    }
    for (String kv : extra.split(";")) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
    }
  }

  /** Renders the Pyroscope name parameter: {@code app{k=v,...}}. */
  synchronized String pyroscopeName(String app) {
    StringBuilder b = new StringBuilder(clean(app == null ? "spark-app" : app)).append('{');
    boolean first = true;
    for (Map.Entry<String, String> e : values.entrySet()) {
      if (!first) {
        b.append(',');
      }
      first = false;
      b.append(clean(e.getKey())).append('=').append(clean(e.getValue()));
    }
    return b.append('}').toString();
  }

  /** Keeps characters the name syntax cannot carry out of names and values. */
  static String clean(String s) {
    return s.replaceAll("[{}=,\"\\s]", "_");
  }
}
