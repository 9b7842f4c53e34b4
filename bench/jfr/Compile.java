import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

/**
 * A JVM busy with deep, varied stacks for a real JDK recording to benchmark ingest with: threads that compile the
 * Java sources under the given directories with the JDK's own compiler, over and over, for the given seconds.
 * A compiler walks syntax trees recursively, so its stacks are as deep and as many as a Spark executor's.
 *
 * usage: java Compile SECONDS THREADS OUTDIR SOURCEDIR...
 */
public final class Compile {
  public static void main(String[] args) throws Exception {
    long until = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
    int threads = Integer.parseInt(args[1]);
    Path out = Path.of(args[2]);
    List<String> sources = new ArrayList<>();
    StringBuilder sourcePath = new StringBuilder();
    for (int i = 3; i < args.length; i++) {
      try (Stream<Path> s = Files.walk(Path.of(args[i]))) {
        s.filter(p -> p.toString().endsWith(".java")).forEach(p -> sources.add(p.toString()));
      }
      sourcePath.append(sourcePath.length() == 0 ? "" : File.pathSeparator).append(args[i]);
    }
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    List<Thread> ts = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Path dir = out.resolve("t" + t);
      Thread th = new Thread(() -> {
        List<String> a = new ArrayList<>(List.of("-d", dir.toString(), "-sourcepath", sourcePath.toString(), "-nowarn"));
        a.addAll(sources);
        String[] argv = a.toArray(new String[0]);
        while (System.nanoTime() < until) {
          if (javac.run(null, null, null, argv) != 0) {
            throw new IllegalStateException("javac failed");
          }
        }
      }, "Executor task launch worker for task " + t + ".0 in stage 1.0 (TID " + t + ")");
      ts.add(th);
      th.start();
    }
    for (Thread th : ts) {
      th.join();
    }
  }
}
