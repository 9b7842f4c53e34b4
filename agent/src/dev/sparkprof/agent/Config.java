package dev.sparkprof.agent;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The agent's settings. The same keys come from Spark properties ({@code spark.sparkprof.<key>}), agent
 * options ({@code key=value,...}) and environment variables ({@code SPARKPROF_<KEY>}, dots as underscores);
 * later sources override earlier ones in that order.
 */
final class Config {
  static final String PREFIX = "spark.sparkprof.";

  final Map<String, String> values = new LinkedHashMap<>();

  Config() {
    put("enabled", "true");
    put("driver.enabled", "true");
    put("executor.enabled", "true");
    put("fraction", "1.0");
    put("events", "cpu,alloc,lock,gc");
    put("interval", "10ms");
    put("uploadInterval", "10s");
    put("lockThreshold", "10ms");
    put("maxQueuedBytes", "64m");
    put("compression", "none");
    put("startWait", "3s");
  }

  void put(String key, String value) {
    if (value != null) {
      values.put(key, value.trim());
    }
  }

  /** Adds agent options: {@code key=value,key=value}; a value may not contain commas. */
  void parseOptions(String options) {
    if (options == null) {
      return;
    }
    for (String kv : options.split(",")) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        put(kv.substring(0, eq).trim(), kv.substring(eq + 1));
      }
    }
  }

  /** Adds SPARKPROF_* environment variables: SPARKPROF_UPLOAD_INTERVAL sets uploadInterval. */
  void parseEnv(Map<String, String> env) {
    for (Map.Entry<String, String> e : env.entrySet()) {
      if (!e.getKey().startsWith("SPARKPROF_")) {
        continue;
      }
      String name = e.getKey().substring("SPARKPROF_".length()).toLowerCase(Locale.ROOT);
      String key = null;
      for (String k : KEYS) {
        if (k.replace(".", "_").replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT).equals(name)) {
          key = k;
        }
      }
      if (key != null) {
        put(key, e.getValue());
      }
    }
  }

  static final String[] KEYS = {
    "server", "enabled", "driver.enabled", "executor.enabled", "fraction", "events", "interval",
    "uploadInterval", "outputDir", "authToken", "labels", "appName", "appId", "executorId", "lockThreshold",
    "maxQueuedBytes", "tenant", "asyncProfiler", "compression", "startWait", "stopWait",
    "python", "pySpy", "pythonInterval", "stackDepth"
  };

  String get(String key) {
    String v = values.get(key);
    return v == null || v.isEmpty() ? null : v;
  }

  boolean bool(String key) {
    return "true".equalsIgnoreCase(get(key));
  }

  double fraction() {
    try {
      return Math.max(0, Math.min(1, Double.parseDouble(get("fraction"))));
    } catch (RuntimeException e) {
      Log.once("bad fraction " + get("fraction") + ", using 1.0", null);
      return 1;
    }
  }

  /** Parses a duration such as 10ms, 2s, 1m (a bare number is milliseconds). */
  long millis(String key, long fallback) {
    String v = get(key);
    if (v == null) {
      return fallback;
    }
    try {
      v = v.toLowerCase(Locale.ROOT);
      if (v.endsWith("ms")) {
        return Long.parseLong(v.substring(0, v.length() - 2));
      } else if (v.endsWith("s")) {
        return (long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 1000);
      } else if (v.endsWith("m")) {
        return (long) (Double.parseDouble(v.substring(0, v.length() - 1)) * 60_000);
      }
      return Long.parseLong(v);
    } catch (RuntimeException e) {
      Log.once("bad duration " + key + "=" + v + ", using " + fallback + " ms", null);
      return fallback;
    }
  }

  /** Parses a whole number. */
  int integer(String key, int fallback) {
    String v = get(key);
    if (v == null) {
      return fallback;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (RuntimeException e) {
      Log.once("bad number " + key + "=" + v + ", using " + fallback, null);
      return fallback;
    }
  }

  /** Parses a size such as 64m, 512k (bytes). */
  long bytes(String key, long fallback) {
    String v = get(key);
    if (v == null) {
      return fallback;
    }
    try {
      v = v.toLowerCase(Locale.ROOT);
      long mult = 1;
      if (v.endsWith("g")) {
        mult = 1L << 30;
      } else if (v.endsWith("m")) {
        mult = 1L << 20;
      } else if (v.endsWith("k")) {
        mult = 1L << 10;
      }
      if (mult > 1) {
        v = v.substring(0, v.length() - 1);
      }
      return Long.parseLong(v) * mult;
    } catch (RuntimeException e) {
      Log.once("bad size " + key + "=" + v + ", using " + fallback, null);
      return fallback;
    }
  }

  boolean hasEvent(String e) {
    for (String s : get("events") == null ? new String[0] : get("events").split("[,;]")) {
      if (s.trim().equalsIgnoreCase(e)) {
        return true;
      }
    }
    return false;
  }
}
