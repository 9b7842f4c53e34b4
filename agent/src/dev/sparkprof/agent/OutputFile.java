package dev.sparkprof.agent;

import java.io.OutputStream;
import java.lang.reflect.Method;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;

/**
 * The whole recording of a JVM, written at exit where Spark 4's profiler writes it: the kept windows as one JFR
 * file (JFR files are sequences of chunks, so windows concatenate) at
 * {@code <outputDir>/<appId>/profile-exec-<id>.jfr} or {@code profile-driver.jfr}, on a local path, or on HDFS,
 * S3 and the like through Hadoop's FileSystem when it is on the class path (found by reflection: the agent does
 * not depend on Hadoop).
 */
final class OutputFile {
  private final String dir;
  private final String name;

  /** The output file of the JVM of that role, app and executor, under outputDir. */
  OutputFile(String outputDir, String role, String appId, String executorId) {
    this.dir = outputDir.replaceAll("/+$", "") + "/" + (appId != null ? appId : "unknown-app");
    this.name = "executor".equals(role) ? "profile-exec-" + executorId + ".jfr" : "profile-driver.jfr";
  }

  /** Where the file goes: a path, or a URI with a scheme. */
  String target() {
    return dir + "/" + name;
  }

  /**
   * Joins windows into one file under workDir and moves or copies it to its target; writes nothing when there
   * are no windows.
   */
  void write(List<Profiler.Window> windows, Path workDir) throws Exception {
    if (windows.isEmpty()) {
      return;
    }
    Path all = workDir.resolve("profile.jfr");
    try (OutputStream out = Files.newOutputStream(all, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING)) {
      for (Profiler.Window w : windows) {
        Files.copy(w.file, out);
      }
    }
    URI uri = URI.create(dir);
    if (uri.getScheme() == null || "file".equals(uri.getScheme())) {
      Path local = uri.getScheme() == null ? Paths.get(dir) : Paths.get(uri);
      Files.createDirectories(local);
      Files.move(all, local.resolve(name), StandardCopyOption.REPLACE_EXISTING);
    } else {
      hadoopCopy(all, target());
    }
    Log.info("wrote " + target());
  }

  /** Moves a local file to a Hadoop FileSystem URI by reflection. */
  private static void hadoopCopy(Path local, String target) throws Exception {
    ClassLoader cl = Thread.currentThread().getContextClassLoader();
    Class<?> confClass = Class.forName("org.apache.hadoop.conf.Configuration", true, cl);
    Class<?> pathClass = Class.forName("org.apache.hadoop.fs.Path", true, cl);
    Class<?> fsClass = Class.forName("org.apache.hadoop.fs.FileSystem", true, cl);
    Object conf = confClass.getConstructor().newInstance();
    Object dst = pathClass.getConstructor(String.class).newInstance(target);
    Object src = pathClass.getConstructor(String.class).newInstance(local.toUri().toString());
    Object fs = fsClass.getMethod("get", URI.class, confClass).invoke(null, URI.create(target), conf);
    Method copy = fsClass.getMethod("copyFromLocalFile", boolean.class, boolean.class, pathClass, pathClass);
    copy.invoke(fs, true, true, src, dst);
  }
}
