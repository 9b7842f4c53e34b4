package dev.sparkprof.agent;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.channels.NetworkChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * Finds which Python worker process serves which task of the executor. Spark's PythonRunner keeps each running
 * Python task's worker beside its task attempt id ({@code PythonRunner.runningMonitorThreads}, Spark 3 and 4); the
 * worker is the JVM's end of a loopback TCP connection, whose other end a worker process holds: the process is
 * found in {@code /proc}, by the connection's port. Timing alone cannot tell which of two tasks that start and end
 * together a worker served; this can. Where Spark or {@code /proc} differ, nothing is found, and the server
 * attributes by timing.
 */
final class PythonWorkerTasks {
  private static final String RUNNER = "org.apache.spark.api.python.PythonRunner$";
  private Object runner;
  private Method running, first, second;
  private boolean failed, said;

  /** The worker process of each JVM end found so far: Spark reuses a worker, and its end, for many tasks. */
  private final Map<Object, Long> pids = new WeakHashMap<>();
  /** The workers each JVM end not found was looked for among: it is looked for again only among others. */
  private final Map<Object, Set<Long>> missed = new WeakHashMap<>();
  /** The (task, pid) pairs reported, of those Spark still lists. */
  private Set<List<Long>> reported = new HashSet<>();

  /**
   * Calls found with each task attempt id and worker pid (one of workers) Spark lists that were not reported
   * before. Only the sampler's thread calls it.
   */
  void resolve(Collection<Long> workers, Found found) {
    if (failed || workers.isEmpty()) {
      return;
    }
    Set<List<Long>> now = new HashSet<>();
    Map<Integer, Long> byPort = null;
    try {
      for (Object pair : pairs()) {
        Object worker = first.invoke(pair);
        long task = ((Number) second.invoke(pair)).longValue();
        Long pid = pids.get(worker);
        if (pid == null) {
          int port = workers.equals(missed.get(worker)) ? 0 : localPort(worker);
          if (port <= 0) {
            continue;
          }
          if (byPort == null) {
            byPort = workersByPeerPort(workers);
          }
          pid = byPort.get(port);
          if (pid == null) {
            missed.put(worker, Set.copyOf(workers));
            continue;
          }
          pids.put(worker, pid);
        }
        List<Long> k = List.of(task, pid);
        now.add(k);
        if (!reported.contains(k)) {
          found.accept(task, pid);
          if (!said) {
            said = true;
            Log.info("Python worker " + pid + " serves task " + task + ": the workers' samples go to the tasks they"
                + " serve");
          }
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      failed = true;
      Log.once("cannot tell which Python worker serves which task (Spark's PythonRunner differs); the server"
          + " attributes the workers' samples by time", e);
      return;
    }
    reported = now;
  }

  /** What resolve reports: a task attempt id and the pid of a worker serving it. */
  interface Found {
    void accept(long taskId, long pid);
  }

  /** Spark's (worker, task attempt id) pairs of the running Python tasks. */
  private Iterable<?> pairs() throws ReflectiveOperationException {
    if (running == null) {
      Class<?> c = Class.forName(RUNNER);
      runner = c.getField("MODULE$").get(null);
      running = c.getMethod("runningMonitorThreads");
      Class<?> tuple = Class.forName("scala.Tuple2", false, c.getClassLoader());
      first = tuple.getMethod("_1");
      second = tuple.getMethod("_2");
    }
    return (Iterable<?>) running.invoke(runner);
  }

  /**
   * The local port of the JVM's end of a worker: a Socket (Spark 3) or a PythonWorker's SocketChannel (Spark 4);
   * 0 when it has none (a Unix domain socket).
   */
  private static int localPort(Object worker) throws ReflectiveOperationException {
    if (worker instanceof Socket) {
      return ((Socket) worker).getLocalPort();
    }
    Object channel = worker.getClass().getMethod("channel").invoke(worker);
    if (!(channel instanceof NetworkChannel)) {
      return 0;
    }
    try {
      SocketAddress a = ((NetworkChannel) channel).getLocalAddress();
      return a instanceof InetSocketAddress ? ((InetSocketAddress) a).getPort() : 0;
    } catch (IOException e) {
      return 0; // closed meanwhile
    }
  }

  /**
   * The pids of workers by the port of their peer: for each TCP connection of {@code /proc/net/tcp} and
   * {@code tcp6} that one of the workers holds, its remote port.
   */
  static Map<Integer, Long> workersByPeerPort(Collection<Long> workers) {
    Map<Long, Integer> peerPort = new HashMap<>(); // by socket inode
    for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
      try {
        for (String line : Files.readAllLines(Paths.get(table))) {
          String[] f = line.trim().split("\\s+");
          int colon = f.length > 9 ? f[2].lastIndexOf(':') : -1;
          if (colon < 0 || f[0].equals("sl")) {
            continue;
          }
          try {
            peerPort.put(Long.parseLong(f[9]), Integer.parseInt(f[2].substring(colon + 1), 16));
          } catch (NumberFormatException e) {
            // not a connection's line
          }
        }
      } catch (IOException | RuntimeException e) {
        // no such table: no IPv6, or no /proc
      }
    }
    Map<Integer, Long> out = new HashMap<>();
    for (long pid : workers) {
      for (long inode : socketInodes(pid)) {
        Integer port = peerPort.get(inode);
        if (port != null && port != 0) {
          out.put(port, pid);
        }
      }
    }
    return out;
  }

  /** The inodes of the sockets a process holds open; none when it ended or is not readable. */
  private static List<Long> socketInodes(long pid) {
    List<Long> out = new ArrayList<>();
    try (DirectoryStream<Path> fds = Files.newDirectoryStream(Paths.get("/proc", Long.toString(pid), "fd"))) {
      for (Path fd : fds) {
        try {
          String target = Files.readSymbolicLink(fd).toString();
          if (target.startsWith("socket:[") && target.endsWith("]")) {
            out.add(Long.parseLong(target.substring(8, target.length() - 1)));
          }
        } catch (IOException | RuntimeException e) {
          // closed meanwhile
        }
      }
    } catch (IOException | RuntimeException e) {
      // the process ended
    }
    return out;
  }
}
