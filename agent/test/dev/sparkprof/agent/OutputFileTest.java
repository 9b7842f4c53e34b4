package dev.sparkprof.agent;

import static dev.sparkprof.agent.AgentUnitTest.check;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Unit tests of OutputFile: where Spark 4's layout puts each JVM's file, that the file is the kept windows one
 * after the other, and that a file system the JVM cannot reach fails the write for the caller to report.
 */
final class OutputFileTest {
  private OutputFileTest() {}

  static void run() throws Exception {
    AgentUnitTest.inTempDir("sparkprof-output", OutputFileTest::layout, OutputFileTest::noWindows, OutputFileTest::noHadoop);
  }

  /** Two kept windows written for JVMs of each role, under a plain path, one with slashes at its end, or a file: URI. */
  static void layout(Path dir) throws Exception {
    byte[] rec = AgentUnitTest.recording();
    Path out = dir.resolve("out");
    String[][] cases = {
      // output dir, role, app id, executor id, the file written under out
      {out.toString(), "executor", "app-1", "7", "app-1/profile-exec-7.jfr"},
      {out + "//", "driver", "app-1", "driver", "app-1/profile-driver.jfr"},
      {out.toString(), "executor", null, "3", "unknown-app/profile-exec-3.jfr"},
      {out.toUri().toString(), "driver", "app-2", "driver", "app-2/profile-driver.jfr"},
    };
    for (String[] c : cases) {
      String name = c[0] + " " + c[1] + " " + c[2] + " " + c[3];
      Path work = Files.createDirectories(dir.resolve("work"));
      Files.write(work.resolve("window-000000.jfr"), rec);
      Files.write(work.resolve("window-000001.jfr"), rec);
      List<Profiler.Window> kept = List.of(new Profiler.Window(work.resolve("window-000000.jfr"), 0, 1),
          new Profiler.Window(work.resolve("window-000001.jfr"), 1, 2));
      OutputFile o = new OutputFile(c[0], c[1], c[2], c[3]);
      check(name + ": target", o.target(), c[0].replaceAll("/+$", "") + "/" + c[4]);
      o.write(kept, work);
      Path written = out.resolve(c[4]);
      check(name + ": written", Files.exists(written), true);
      if (Files.exists(written)) {
        check(name + ": the windows one after the other",
            Arrays.equals(Files.readAllBytes(written), AgentUnitTest.concat(rec, rec)), true);
        check(name + ": a whole recording", Profiler.wholeRecording(written), true);
      }
      check(name + ": windows left to the caller", Files.exists(kept.get(0).file), true);
      Agent.deleteTree(work);
    }
  }

  /** No kept windows: nothing is written, not even the directory. */
  static void noWindows(Path dir) throws Exception {
    Path out = dir.resolve("empty");
    new OutputFile(out.toString(), "driver", "app-1", "driver").write(List.of(), dir);
    check("no windows: nothing written", Files.exists(out), false);
  }

  /** A Hadoop URI with no Hadoop on the class path fails the write. */
  static void noHadoop(Path dir) throws Exception {
    Path work = Files.createDirectories(dir.resolve("hadoop"));
    Path f = Files.write(work.resolve("window-000000.jfr"), AgentUnitTest.recording());
    Exception failed = null;
    try {
      new OutputFile("hdfs://namenode:8020/profiles", "driver", "app-1", "driver")
          .write(List.of(new Profiler.Window(f, 0, 1)), work);
    } catch (Exception e) {
      failed = e;
    }
    check("no Hadoop: fails", failed instanceof ClassNotFoundException, true);
  }
}
