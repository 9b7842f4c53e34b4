package dev.sparkprof.agent;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** Logs each distinct problem once to stderr, so a failing agent never floods a job's log. */
final class Log {
  private static final Set<String> seen = ConcurrentHashMap.newKeySet();

  private Log() {}

  static void info(String msg) {
    System.err.println("[sparkprof] " + msg);
  }

  /** Reports whether a message that begins with prefix was logged once. */
  static boolean said(String prefix) {
    return seen.stream().anyMatch(m -> m.startsWith(prefix));
  }

  /**
   * Logs msg and detail (none when null) once per distinct msg: a detail that varies from one time to the next (a
   * server's answer) adds no line.
   */
  static void onceWith(String msg, String detail) {
    if (seen.size() < 1000 && seen.add(msg)) {
      String line = detail == null ? msg : msg + ": " + detail;
      System.err.println("[sparkprof] " + line + " (logged once; the agent goes on without it)");
    }
  }

  /** Logs msg and the throwable's message once per distinct message. */
  static void once(String msg, Throwable t) {
    onceWith(msg, t == null ? null : t.toString());
  }
}
