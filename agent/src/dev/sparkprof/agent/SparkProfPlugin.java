package dev.sparkprof.agent;

import java.util.Collections;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The Spark plugin: {@code --conf spark.plugins=dev.sparkprof.agent.SparkProfPlugin}. It profiles the
 * driver and the executors with the settings of the {@code spark.sparkprof.*} properties, and records
 * each task's start and end on its thread.
 */
public final class SparkProfPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new Driver();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  static Config config(SparkConf conf) {
    Config cfg = new Config();
    for (String k : Config.KEYS) {
      try {
        cfg.put(k, conf.get(Config.PREFIX + k, null));
      } catch (RuntimeException e) {
        Log.once("cannot read " + Config.PREFIX + k, e);
      }
    }
    cfg.parseEnv(System.getenv());
    return cfg;
  }

  /**
   * How long a plugin's init waits for the recorder to start ({@code startWait}, 3 s by default; the Flight
   * Recorder's start costs 1.5 to 2 s of CPU): Spark calls init before the executor takes tasks, so the wait lets
   * the first tasks be profiled.
   */
  static long startWait(Config cfg) {
    return Math.max(0, cfg.millis("startWait", 3_000));
  }

  /** How long a plugin's shutdown waits to ship the last window ({@code stopWait}, 10 s by default). */
  static long stopWait(Config cfg) {
    return Math.max(0, cfg.millis("stopWait", 10_000));
  }

  static final class Driver implements DriverPlugin {
    private Agent agent;
    private long stopWait;

    @Override
    public Map<String, String> init(SparkContext sc, PluginContext ctx) {
      try {
        Config cfg = config(sc.getConf());
        stopWait = stopWait(cfg);
        agent = Agent.start(cfg, "driver", sc.applicationId(), sc.appName(), "driver");
        if (agent != null) {
          agent.fromPlugin = true;
          agent.stopAtExit(stopWait);
          agent.labels.put("host", sc.getConf().get("spark.driver.host", null));
          agent.awaitRecording(startWait(cfg));
        }
      } catch (Throwable t) {
        Log.once("driver plugin failed to start", t);
      }
      return Collections.emptyMap();
    }

    @Override
    public void shutdown() {
      if (agent != null) {
        agent.stop(stopWait);
      }
    }
  }

  static final class Executor implements ExecutorPlugin {
    private volatile Agent agent;
    private long stopWait;

    @Override
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      try {
        SparkConf conf = ctx.conf();
        Config cfg = config(conf);
        stopWait = stopWait(cfg);
        agent = Agent.start(cfg, "executor", conf.get("spark.app.id", null), conf.get("spark.app.name", null),
            ctx.executorID());
        if (agent != null) {
          agent.fromPlugin = true;
          agent.stopAtExit(stopWait);
          agent.labels.put("host", executorHost(ctx));
          agent.awaitRecording(startWait(cfg));
        }
      } catch (Throwable t) {
        Log.once("executor plugin failed to start", t);
      }
    }

    /**
     * The executor's host as Spark names it in the event log: the plugin context's, which Spark 3.x and 4.x
     * executors cannot give (their RPC environment has no address: a NullPointerException), else the
     * {@code --hostname} the executor backend was started with; null leaves the agent's own.
     */
    static String executorHost(PluginContext ctx) {
      try {
        return ctx.hostname();
      } catch (RuntimeException e) {
        return Agent.commandLineArg(System.getProperty("sun.java.command", ""), "--hostname");
      }
    }

    @Override
    public void onTaskStart() {
      Agent a = agent;
      if (a != null) {
        try {
          a.tasks.start();
        } catch (Throwable t) {
          Log.once("task start hook failed", t);
        }
      }
    }

    @Override
    public void onTaskSucceeded() {
      end("SUCCESS");
    }

    @Override
    public void onTaskFailed(TaskFailedReason reason) {
      end("FAILED");
    }

    private void end(String status) {
      Agent a = agent;
      if (a != null) {
        try {
          a.tasks.end(status);
        } catch (Throwable t) {
          Log.once("task end hook failed", t);
        }
      }
    }

    @Override
    public void shutdown() {
      if (agent != null) {
        agent.stop(stopWait);
      }
    }
  }
}
