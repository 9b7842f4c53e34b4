package spark

import "github.com/valyala/fastjson"

// appEvent models an event ev of the application or its executors, and
// reports whether ev is one.
func (b *builder) appEvent(v *fastjson.Value, ev string) bool {
	app := b.app
	switch ev {
	case "SparkListenerLogStart":
		app.SparkVersion = str(v, "Spark Version")
	case "DBCEventLoggingListenerMetadata":
		// Databricks logs start with this instead of LogStart.
		if app.SparkVersion == "" {
			app.SparkVersion = str(v, "Spark Version")
		}
	case "SparkListenerApplicationStart":
		app.ID = str(v, "App ID")
		app.Name = str(v, "App Name")
		app.User = str(v, "User")
		app.AttemptID = str(v, "App Attempt ID")
		app.StartMs = num(v, "Timestamp")
	case "SparkListenerApplicationEnd":
		app.EndMs = num(v, "Timestamp")
		if c := v.Get("ExitCode"); c != nil {
			code := c.GetInt()
			app.ExitCode = &code
		}
		b.rep.MissingEnd = false
	case "SparkListenerEnvironmentUpdate":
		b.environment(v)
	case "SparkListenerExecutorAdded":
		e := b.executor(str(v, "Executor ID"))
		e.AddedMs = num(v, "Timestamp")
		e.Host = str(v, "Executor Info", "Host")
		e.Cores = int(num(v, "Executor Info", "Total Cores"))
	case "SparkListenerExecutorRemoved":
		// A removal of an executor the log never added is left out, as
		// the History Server leaves it out: Spark logs one for each
		// executor the cluster manager launched as the app shut down,
		// which never registered. A decommissioned executor of a
		// standalone cluster is removed twice: "Executor decommission: ..."
		// when it leaves, then "Command exited with code 0" when its worker
		// sees the process end. The first says why, as the History Server
		// keeps it.
		e := b.execs[str(v, "Executor ID")]
		if e == nil || e.RemovedMs != 0 {
			break
		}
		e.RemovedMs = num(v, "Timestamp")
		e.RemovalReason = str(v, "Removed Reason")
	case "SparkListenerBlockManagerAdded":
		id := str(v, "Block Manager ID", "Executor ID")
		e := b.executor(id)
		if e.Host == "" {
			e.Host = str(v, "Block Manager ID", "Host")
		}
		e.MaxMemory = num(v, "Maximum Memory")
		if e.AddedMs == 0 {
			// The driver has no ExecutorAdded: the History Server dates
			// it from its block manager.
			e.AddedMs = num(v, "Timestamp")
		}
	default:
		return false
	}
	return true
}
