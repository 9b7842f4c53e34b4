package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPOutputStream;

/**
 * Unit tests of Uploader against a local HTTP server: the request line, headers and body of an upload (the bare
 * recording, or the multipart form with its tasks and gc parts), what each answer means, a dead server, and the
 * windows' keys.
 */
final class UploaderTest {
  private UploaderTest() {}

  /** What the test server received of one request. */
  static final class Request {
    String method, path, query, contentType, key, auth, tenant;
    byte[] body;
  }

  /** The server's answers, and the requests it received. */
  private static final AtomicInteger status = new AtomicInteger(200);
  private static final BlockingQueue<Request> received = new LinkedBlockingQueue<>();

  static void run() throws Exception {
    HttpServer srv = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    srv.createContext("/", UploaderTest::handle);
    srv.start();
    try {
      String url = "http://127.0.0.1:" + srv.getAddress().getPort() + "//";
      AgentUnitTest.inTempDir("sparkprof-upload", dir -> requests(dir, url), UploaderTest::deadServer);
      keys();
      reasons();
    } finally {
      srv.stop(0);
    }
  }

  private static void handle(HttpExchange ex) throws IOException {
    Request r = new Request();
    r.method = ex.getRequestMethod();
    r.path = ex.getRequestURI().getRawPath();
    r.query = ex.getRequestURI().getRawQuery();
    r.contentType = ex.getRequestHeaders().getFirst("Content-Type");
    r.key = ex.getRequestHeaders().getFirst("Idempotency-Key");
    r.auth = ex.getRequestHeaders().getFirst("Authorization");
    r.tenant = ex.getRequestHeaders().getFirst("X-Scope-OrgID");
    r.body = ex.getRequestBody().readAllBytes();
    received.add(r);
    byte[] answer = "ok".getBytes(StandardCharsets.US_ASCII);
    ex.sendResponseHeaders(status.get(), answer.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(answer);
    }
  }

  /** An uploader of app "my app" with an executor's labels, a token and a tenant, to server. */
  static Uploader uploader(String server, String compression) {
    Config cfg = new Config();
    cfg.parseOptions("server=" + server + ",authToken=tok,tenant=t1,interval=20ms,compression=" + compression);
    Labels labels = new Labels();
    labels.put("spark_app_id", "app-1");
    labels.put("role", "executor");
    return new Uploader(cfg, labels, "my app");
  }

  /** Each upload as the server sees it, and what the server's answer means to the agent. */
  static void requests(Path dir, String server) throws Exception {
    byte[] rec = AgentUnitTest.recording();
    Object[][] cases = {
      // name, compression, tasks part, gc part, the server's status, whether the window is done with
      {"multipart with tasks and gc", "none", "{\"taskId\":1}\n", "{\"name\":\"G1\"}\n", 200, true},
      {"multipart with tasks", "none", "{\"taskId\":2}\n", null, 200, true},
      {"multipart with gc", "none", null, "{\"name\":\"G1\"}\n", 200, true},
      {"the recording alone", "none", null, null, 200, true},
      {"gzipped", "gzip", "{\"taskId\":3}\n", null, 200, true},
      {"gzipped alone", "gzip", null, null, 200, true},
      {"refused for good", "none", null, null, 400, true},
      {"too many requests: retried", "none", null, null, 429, false},
      {"server error: retried", "none", null, null, 503, false},
    };
    for (Object[] c : cases) {
      String name = (String) c[0];
      Uploader u = uploader(server, (String) c[1]);
      Path f = dir.resolve("window.jfr");
      Files.write(f, rec);
      Profiler.Window w = new Profiler.Window(f, 1_000, 2_000);
      w.tasks = (String) c[2];
      w.gc = (String) c[3];
      w.key = u.nextKey();
      status.set((Integer) c[4]);
      check(name + ": done with", u.upload(w, System.currentTimeMillis() + 10_000, 3), c[5]);
      boolean accepted = (Integer) c[4] == 200;
      check(name + ": uploads", u.uploads.get(), accepted ? 1L : 0L);
      check(name + ": failures", u.failures.get(), accepted ? 0L : 1L);
      Request r = received.poll(10, TimeUnit.SECONDS);
      if (r == null) {
        check(name + ": request received", false, true);
        continue;
      }
      byte[] jfr = "gzip".equals(c[1]) ? gzip(rec) : rec;
      checkRequest(name, r, w.key, jfr, w.tasks, w.gc);
    }
  }

  /** Checks r, the upload of a window with that key, recording as sent and parts. */
  static void checkRequest(String name, Request r, String key, byte[] jfr, String tasks, String gc) {
    check(name + ": method", r.method, "POST");
    check(name + ": path", r.path, "/ingest");
    check(name + ": query", r.query, "name=my_app%7Brole%3Dexecutor%2Cspark_app_id%3Dapp-1%7D&from=1000&until=2000"
        + "&format=jfr&spyName=sparkprof&sampleRate=50&dropped=3");
    check(name + ": Idempotency-Key", r.key, key);
    check(name + ": Authorization", r.auth, "Bearer tok");
    check(name + ": X-Scope-OrgID", r.tenant, "t1");
    if (tasks == null && gc == null) {
      check(name + ": Content-Type", r.contentType, "application/octet-stream");
      check(name + ": body is the recording", Arrays.equals(r.body, jfr), true);
      return;
    }
    String prefix = "multipart/form-data; boundary=";
    check(name + ": Content-Type " + r.contentType, r.contentType.startsWith(prefix + "sparkprof"), true);
    String boundary = r.contentType.substring(prefix.length());
    ByteArrayOutputStream want = new ByteArrayOutputStream();
    want.writeBytes(part(boundary, "jfr", jfr));
    if (tasks != null) {
      want.writeBytes(part(boundary, "tasks", tasks.getBytes(StandardCharsets.UTF_8)));
    }
    if (gc != null) {
      want.writeBytes(part(boundary, "gc", gc.getBytes(StandardCharsets.UTF_8)));
    }
    want.writeBytes(("--" + boundary + "--\r\n").getBytes(StandardCharsets.US_ASCII));
    check(name + ": multipart body", Arrays.equals(r.body, want.toByteArray()), true);
  }

  /** One part of a multipart form as the server reads it: its name is also its file name. */
  static byte[] part(String boundary, String name, byte[] data) {
    String head = "--" + boundary + "\r\n"
        + "Content-Disposition: form-data; name=\"" + name + "\"; filename=\"" + name + "\"\r\n"
        + "Content-Type: application/octet-stream\r\n"
        + "\r\n";
    return AgentUnitTest.concat(AgentUnitTest.concat(head.getBytes(StandardCharsets.US_ASCII), data),
        "\r\n".getBytes(StandardCharsets.US_ASCII));
  }

  static byte[] gzip(byte[] data) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (GZIPOutputStream z = new GZIPOutputStream(b)) {
      z.write(data);
    }
    return b.toByteArray();
  }

  /** Nothing listens: the upload fails, is counted, and the window waits for the next round. */
  static void deadServer(Path dir) throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    Uploader u = uploader("http://127.0.0.1:" + port, "none");
    Path f = dir.resolve("window.jfr");
    Files.write(f, AgentUnitTest.recording());
    Profiler.Window w = new Profiler.Window(f, 1_000, 2_000);
    w.key = u.nextKey();
    check("dead server: done with", u.upload(w, System.currentTimeMillis() + 10_000, 0), false);
    check("dead server: failures", u.failures.get(), 1L);
    check("dead server: uploads", u.uploads.get(), 0L);
  }

  /** A refused upload's reason is the server's answer on one line, cut to 300 characters. */
  static void reasons() {
    check("reason", Uploader.reason("{\"error\":\"a window\\nof\"}\n".getBytes(StandardCharsets.UTF_8)),
        "{\"error\":\"a window\\nof\"}");
    check("reason of lines", Uploader.reason("bad\r\n\tinput\n".getBytes(StandardCharsets.UTF_8)), "bad input");
    check("no reason", Uploader.reason(new byte[0]), "(no reason given)");
    check("long reason", Uploader.reason("x".repeat(1000).getBytes(StandardCharsets.UTF_8)).length(), 300);
  }

  /** Keys: one prefix per uploader (random, pid, start time), then the window's number. */
  static void keys() {
    Uploader u = uploader("http://127.0.0.1:1", "none");
    String first = u.nextKey(), second = u.nextKey();
    String pid = Long.toString(ProcessHandle.current().pid());
    check("key " + first, first.matches("[0-9a-f]+-" + pid + "-[0-9a-f]+/0"), true);
    check("next key", second, first.substring(0, first.length() - 1) + "1");
    check("another uploader's prefix", uploader("http://127.0.0.1:1", "none").nextKey().equals(first), false);
  }
}
