package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Unit tests of WindowQueue: the bound on the bytes that wait, the count of dropped windows, and that a window's
 * file is deleted once, and only once, neither the windows to send nor those kept hold it.
 */
final class WindowQueueTest {
  private WindowQueueTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-queue", WindowQueueTest::bound, WindowQueueTest::sentAndKept, WindowQueueTest::discard);
  }

  /** A window of a file of that many bytes. */
  static Profiler.Window window(Path dir, String name, int bytes) throws IOException {
    Path f = dir.resolve(name);
    Files.write(f, new byte[bytes]);
    return new Profiler.Window(f, 0, 0);
  }

  /** Windows of 100 bytes each sent to a dead server: the oldest go while more than the bound waits. */
  static void bound(Path dir) throws IOException {
    Object[][] cases = {
      // name, maxBytes, windows added, the indexes that still wait, dropped
      {"under the bound", 250L, 2, new int[] {0, 1}, 0L},
      {"at the bound", 200L, 2, new int[] {0, 1}, 0L},
      {"over the bound drops the oldest", 250L, 4, new int[] {2, 3}, 2L},
      {"the newest stays alone over the bound", 50L, 1, new int[] {0}, 0L},
      {"each window over the bound", 50L, 3, new int[] {2}, 2L},
    };
    for (Object[] c : cases) {
      String name = (String) c[0];
      WindowQueue q = new WindowQueue((Long) c[1]);
      List<Profiler.Window> added = new ArrayList<>();
      for (int i = 0; i < (Integer) c[2]; i++) {
        Profiler.Window w = window(dir, "w" + i, 100);
        added.add(w);
        q.add(w, true, false);
      }
      List<Integer> waiting = new ArrayList<>();
      for (int i : (int[]) c[3]) {
        waiting.add(i);
      }
      for (int i = 0; i < added.size(); i++) {
        check(name + ": file of window " + i + " kept", Files.exists(added.get(i).file), waiting.contains(i));
      }
      check(name + ": dropped", q.dropped.get(), c[4]);
      List<Integer> sent = new ArrayList<>();
      for (Profiler.Window w; (w = q.next()) != null; ) {
        sent.add(added.indexOf(w));
        q.sent(w);
        check(name + ": file of a sent window deleted", Files.exists(w.file), false);
      }
      check(name + ": windows waiting, oldest first", sent, waiting);
    }
  }

  /** The names of windows' files, in order. */
  static List<String> names(List<Profiler.Window> ws) {
    List<String> out = new ArrayList<>();
    for (Profiler.Window w : ws) {
      out.add(w.file.getFileName().toString());
    }
    return out;
  }

  /** A window both waiting and kept for the output file lives until both let it go; each list has the bound. */
  static void sentAndKept(Path dir) throws IOException {
    WindowQueue q = new WindowQueue(250);
    Profiler.Window a = window(dir, "a", 100), b = window(dir, "b", 100);
    q.add(a, true, true);
    q.sent(a);
    check("sent but kept: file", Files.exists(a.file), true);
    check("sent but kept: kept", names(q.kept()), List.of("a"));
    check("sent but kept: nothing waits", q.next(), null);
    q.add(b, true, true);
    q.add(window(dir, "c", 100), false, true);
    check("kept beyond the bound: oldest dropped", names(q.kept()), List.of("b", "c"));
    check("kept beyond the bound: file of the dropped one", Files.exists(a.file), false);
    check("kept beyond the bound: dropped", q.dropped.get(), 1L);
    q.add(window(dir, "d", 100), false, true);
    check("dropped from the kept but waiting: kept", names(q.kept()), List.of("c", "d"));
    check("dropped from the kept but waiting: file", Files.exists(b.file), true);
    check("dropped from the kept but waiting: waits", q.next() == b, true);
    check("dropped from the kept but waiting: dropped", q.dropped.get(), 2L);
    q.sent(b);
    check("dropped from the kept, then sent: file", Files.exists(b.file), false);
    Profiler.Window none = window(dir, "none", 100);
    q.add(none, false, false);
    check("neither sent nor kept: file", Files.exists(none.file), false);
    check("neither sent nor kept: not counted", q.dropped.get(), 2L);
  }

  /** A window that is not queued at all (not a whole recording) is counted and deleted. */
  static void discard(Path dir) throws IOException {
    WindowQueue q = new WindowQueue(1 << 20);
    Profiler.Window w = window(dir, "cut", 10);
    q.discard(w);
    check("discarded: file", Files.exists(w.file), false);
    check("discarded: dropped", q.dropped.get(), 1L);
    check("discarded: nothing waits", q.next(), null);
  }
}
