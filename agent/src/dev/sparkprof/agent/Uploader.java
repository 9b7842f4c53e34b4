package dev.sparkprof.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.GZIPOutputStream;

/**
 * The HTTP client that sends windows to a sparkprof (or Pyroscope) server's {@code /ingest}: the window's
 * recording, compressed if configured, alone or as the {@code jfr} part of a multipart body beside its
 * {@code tasks} and {@code gc} parts; its labels in the Pyroscope name; and a key that names the window on every
 * attempt. Each upload is bounded in time, and a failure only counts and logs: the window waits for the next
 * round.
 */
final class Uploader {
  private final Config cfg;
  private final Labels labels;
  private volatile String app;
  private final String server;
  /**
   * Starts the keys of this JVM's windows: unique among all JVMs sending to a server. Not a UUID: its SecureRandom
   * can block a JVM's start where entropy is short, and this runs before the JVM's main method.
   */
  private final String keyPrefix = Long.toHexString(ThreadLocalRandom.current().nextLong()) + "-"
      + ProcessHandle.current().pid() + "-" + Long.toHexString(System.currentTimeMillis());
  private final AtomicLong keys = new AtomicLong();
  /** Uploads the server accepted, and those that failed or were refused. */
  final AtomicLong uploads = new AtomicLong(), failures = new AtomicLong();

  /** Names the app the uploads are of from now on. */
  void app(String name) {
    if (name != null) {
      app = name;
    }
  }

  /** An uploader to the configured server, for the app of that name with labels. */
  Uploader(Config cfg, Labels labels, String app) {
    this.cfg = cfg;
    this.labels = labels;
    this.app = app;
    this.server = cfg.get("server");
  }

  /** A new window's Idempotency-Key: this JVM's prefix and the window's number. */
  String nextKey() {
    return keyPrefix + "/" + keys.getAndIncrement();
  }

  /**
   * Sends one window, reporting dropped windows so far, and returns whether the server took it or refused it for
   * good (a 4xx but 429: the window is not worth sending again).
   */
  boolean upload(Profiler.Window w, long deadline, long dropped) {
    try {
      byte[] jfr = compress(Files.readAllBytes(w.file), cfg.get("compression"));
      HttpURLConnection c = open(w, deadline, dropped);
      byte[] body = body(c, w.format, jfr, w.tasks, w.gc);
      c.setFixedLengthStreamingMode(body.length);
      try (OutputStream out = c.getOutputStream()) {
        out.write(body);
      }
      int code = c.getResponseCode();
      byte[] answer = new byte[0];
      try (InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream()) {
        if (in != null) {
          answer = in.readAllBytes();
        }
      }
      if (code / 100 != 2) {
        failures.incrementAndGet();
        Log.onceWith("the server refused an upload with HTTP " + code, reason(answer));
        // A 4xx will not get better: drop the window rather than retry it.
        return code >= 400 && code < 500 && code != 429;
      }
      uploads.incrementAndGet();
      return true;
    } catch (IOException | RuntimeException e) {
      failures.incrementAndGet();
      // One line, no stack: a server that is down is news for the user, not a fault of the job.
      Log.once("cannot reach the sparkprof server " + server + " (" + e.getMessage() + "); windows wait, up to"
          + " maxQueuedBytes, and the oldest are dropped", null);
      return false;
    }
  }

  /** The server's answer to a refused upload as one line of at most 300 characters. */
  static String reason(byte[] answer) {
    String s = new String(answer, 0, Math.min(answer.length, 300), StandardCharsets.UTF_8).strip();
    return s.isEmpty() ? "(no reason given)" : s.replaceAll("\\s+", " ");
  }

  /** Opens the POST of window w, with its query and headers, timed out by deadline (2 s to connect, 10 s at most). */
  private HttpURLConnection open(Profiler.Window w, long deadline, long dropped) throws IOException {
    // The window in milliseconds, which Pyroscope's ingest reads as sparkprof's does (told apart from
    // seconds by size): seconds rounded up put its end up to a second after the upload.
    String query = "name=" + enc(labels.pyroscopeName(app)) + "&from=" + w.fromMs + "&until=" + w.untilMs
        + "&format=" + w.format + "&spyName=sparkprof&sampleRate=" + (1000 / Math.max(1, cfg.millis("interval", 10)))
        + "&dropped=" + dropped;
    HttpURLConnection c = (HttpURLConnection) new URL(server.replaceAll("/+$", "") + "/ingest?" + query).openConnection();
    int budget = (int) Math.max(500, Math.min(10_000, deadline - System.currentTimeMillis()));
    c.setConnectTimeout(Math.min(2_000, budget));
    c.setReadTimeout(budget);
    c.setDoOutput(true);
    c.setRequestMethod("POST");
    if (cfg.get("authToken") != null) {
      c.setRequestProperty("Authorization", "Bearer " + cfg.get("authToken"));
    }
    if (cfg.get("tenant") != null) {
      c.setRequestProperty("X-Scope-OrgID", cfg.get("tenant"));
    }
    // A window whose answer was lost (a timeout, a server killed after storing it) is sent again: the key
    // lets the server store it once. Pyroscope ignores the header.
    c.setRequestProperty("Idempotency-Key", w.key);
    return c;
  }

  /**
   * The body of an upload, its Content-Type set on c: the recording alone when nothing goes beside it, else a
   * multipart form with the recording's part (jfr, or profile for another format) and the tasks and gc parts
   * there are.
   */
  private static byte[] body(HttpURLConnection c, String format, byte[] jfr, String tasks, String gc)
      throws IOException {
    if (tasks == null && gc == null) {
      c.setRequestProperty("Content-Type", "application/octet-stream");
      return jfr;
    }
    String boundary = "sparkprof" + Long.toHexString(System.nanoTime());
    c.setRequestProperty("Content-Type", "multipart/form-data; boundary=" + boundary);
    ByteArrayOutputStream b = new ByteArrayOutputStream(jfr.length + 1024);
    part(b, boundary, "jfr".equals(format) ? "jfr" : "profile", jfr);
    if (tasks != null) {
      part(b, boundary, "tasks", tasks.getBytes(StandardCharsets.UTF_8));
    }
    if (gc != null) {
      part(b, boundary, "gc", gc.getBytes(StandardCharsets.UTF_8));
    }
    b.write(("--" + boundary + "--\r\n").getBytes(StandardCharsets.US_ASCII));
    return b.toByteArray();
  }

  private static void part(ByteArrayOutputStream b, String boundary, String name, byte[] data) throws IOException {
    b.write(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"; filename=\"" + name
        + "\"\r\nContent-Type: application/octet-stream\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    b.write(data);
    b.write("\r\n".getBytes(StandardCharsets.US_ASCII));
  }

  /**
   * Returns a window's recording as it is sent: gzipped with {@code compression=gzip}, as it is otherwise. A window
   * is sent uncompressed by default: gzip costs the executor ~13 ms of CPU and the server ~1.7 ms per 10 s window
   * of a busy JVM, to send ~170 KB instead of ~750 KB.
   */
  static byte[] compress(byte[] jfr, String compression) throws IOException {
    if ("gzip".equalsIgnoreCase(compression)) {
      return gzip(jfr);
    }
    if (compression != null && !"none".equalsIgnoreCase(compression)) {
      Log.once("unknown compression '" + compression + "' (gzip or none): sending uncompressed", null);
    }
    return jfr;
  }

  private static byte[] gzip(byte[] data) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream(data.length / 4 + 64);
    try (GZIPOutputStream z = new GZIPOutputStream(b)) {
      z.write(data);
    }
    return b.toByteArray();
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }
}
