package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The History Server's REST fields against sparkprof's: every field of each
// answer is either mapped to what sparkprof says of it (and compared), or
// listed in hsDocumented with why sparkprof differs. A field of neither kind
// (a new one in a new Spark) fails the test, as does a mapped field whose
// values differ, unless hsDocumented names it.

// jsonObj is a decoded JSON object.
type jsonObj = map[string]any

// spGetter reads a History Server field's counterpart from sparkprof's
// object, with the whole report at hand for fields derived from others.
type spGetter func(sp, rep jsonObj) any

// spAt reads a dotted path of sparkprof's object.
func spAt(path string) spGetter {
	return func(sp, _ jsonObj) any { return jsonPath(sp, path) }
}

// spMs reads a time of sparkprof's object, where 0 means not yet (the
// History Server leaves such a time out).
func spMs(path string) spGetter {
	return func(sp, _ jsonObj) any {
		if v := jsonPath(sp, path); hsNorm(v) != "0" {
			return v
		}
		return nil
	}
}

// spFlag reads a boolean sparkprof omits when false.
func spFlag(path string) spGetter {
	return func(sp, _ jsonObj) any { return jsonPath(sp, path) == true }
}

func jsonPath(o jsonObj, path string) any {
	var v any = o
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(jsonObj)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// jsonInt is a JSON number of either side as an int64 (0 when not a number).
func jsonInt(v any) int64 {
	f, _ := strconv.ParseFloat(hsNorm(v), 64)
	return int64(f)
}

// taskMetricFields maps the History Server's task metric names (a task's
// taskMetrics) to sparkprof's (its metrics).
var taskMetricFields = map[string]string{
	"executorDeserializeTime": "executorDeserializeTime", "executorDeserializeCpuTime": "executorDeserializeCpuTime",
	"executorRunTime": "executorRunTime", "executorCpuTime": "executorCpuTime", "resultSize": "resultSize",
	"jvmGcTime": "jvmGcTime", "resultSerializationTime": "resultSerializationTime",
	"memoryBytesSpilled": "memoryBytesSpilled", "diskBytesSpilled": "diskBytesSpilled",
	"peakExecutionMemory":                      "peakExecutionMemory",
	"inputMetrics.bytesRead":                   "inputBytes",
	"inputMetrics.recordsRead":                 "inputRecords",
	"outputMetrics.bytesWritten":               "outputBytes",
	"outputMetrics.recordsWritten":             "outputRecords",
	"shuffleReadMetrics.remoteBlocksFetched":   "shuffleRemoteBlocksFetched",
	"shuffleReadMetrics.localBlocksFetched":    "shuffleLocalBlocksFetched",
	"shuffleReadMetrics.fetchWaitTime":         "shuffleFetchWaitTime",
	"shuffleReadMetrics.remoteBytesRead":       "shuffleRemoteBytesRead",
	"shuffleReadMetrics.remoteBytesReadToDisk": "shuffleRemoteBytesReadToDisk",
	"shuffleReadMetrics.localBytesRead":        "shuffleLocalBytesRead",
	"shuffleReadMetrics.recordsRead":           "shuffleReadRecords",
	"shuffleWriteMetrics.bytesWritten":         "shuffleWriteBytes",
	"shuffleWriteMetrics.writeTime":            "shuffleWriteTime",
	"shuffleWriteMetrics.recordsWritten":       "shuffleWriteRecords",
}

// stageMetricFields are the History Server's stage metric sums, named as
// sparkprof's stage metrics are.
var stageMetricFields = []string{
	"executorDeserializeTime", "executorDeserializeCpuTime", "executorRunTime", "executorCpuTime", "resultSize",
	"jvmGcTime", "resultSerializationTime", "memoryBytesSpilled", "diskBytesSpilled", "peakExecutionMemory",
	"inputBytes", "inputRecords", "outputBytes", "outputRecords", "shuffleRemoteBlocksFetched",
	"shuffleLocalBlocksFetched", "shuffleFetchWaitTime", "shuffleRemoteBytesRead", "shuffleRemoteBytesReadToDisk",
	"shuffleLocalBytesRead", "shuffleReadRecords", "shuffleWriteBytes", "shuffleWriteTime", "shuffleWriteRecords",
}

// hsMapped are the compared fields of each answer, as "answer.field".
var hsMapped = func() map[string]spGetter {
	m := map[string]spGetter{
		"applications.id":                       spAt("id"),
		"applications.name":                     spAt("name"),
		"applications.attempts.attemptId":       spAt("attemptId"),
		"applications.attempts.startTime":       spMs("startMs"),
		"applications.attempts.startTimeEpoch":  spMs("startMs"),
		"applications.attempts.endTime":         spMs("endMs"),
		"applications.attempts.endTimeEpoch":    spMs("endMs"),
		"applications.attempts.duration":        spAt("durationMs"),
		"applications.attempts.sparkUser":       spAt("user"),
		"applications.attempts.appSparkVersion": spAt("sparkVersion"),
		"applications.attempts.completed":       func(sp, _ jsonObj) any { return sp["status"] == "finished" },
		"applications.attempts.exitCode":        spAt("exitCode"),

		"jobs.jobId":          spAt("jobId"),
		"jobs.name":           spAt("name"),
		"jobs.description":    spAt("description"),
		"jobs.submissionTime": spMs("submitMs"),
		"jobs.completionTime": spMs("endMs"),
		"jobs.stageIds":       spAt("stageIds"),
		"jobs.jobGroup":       spAt("group"),
		"jobs.status": func(sp, _ jsonObj) any {
			return map[any]string{"JobSucceeded": "SUCCEEDED", "JobFailed": "FAILED", nil: "RUNNING", "": "RUNNING"}[sp["result"]]
		},

		"stages.status":                spAt("status"),
		"stages.stageId":               spAt("stageId"),
		"stages.attemptId":             spAt("attempt"),
		"stages.name":                  spAt("name"),
		"stages.numTasks":              spAt("numTasks"),
		"stages.numFailedTasks":        spAt("failedTaskCount"),
		"stages.numKilledTasks":        spAt("killedTaskCount"),
		"stages.submissionTime":        spMs("submitMs"),
		"stages.firstTaskLaunchedTime": spMs("firstTaskLaunchMs"),
		"stages.completionTime":        spMs("completeMs"),
		"stages.failureReason":         spAt("failure"),
		"stages.rddIds":                spAt("rddIds"),
		"stages.numCompleteTasks": func(sp, _ jsonObj) any {
			return jsonInt(sp["taskCount"]) - jsonInt(sp["failedTaskCount"]) - jsonInt(sp["killedTaskCount"])
		},
		"stages.shuffleReadBytes": func(sp, _ jsonObj) any {
			return jsonInt(jsonPath(sp, "metrics.shuffleRemoteBytesRead")) + jsonInt(jsonPath(sp, "metrics.shuffleLocalBytesRead"))
		},

		"taskList.taskId":            spAt("taskId"),
		"taskList.index":             spAt("index"),
		"taskList.attempt":           spAt("attempt"),
		"taskList.partitionId":       spAt("partition"),
		"taskList.launchTime":        spMs("launchMs"),
		"taskList.resultFetchStart":  spMs("fetchStartMs"),
		"taskList.duration":          spAt("durationMs"),
		"taskList.executorId":        spAt("executorId"),
		"taskList.host":              spAt("host"),
		"taskList.status":            spAt("status"),
		"taskList.taskLocality":      spAt("locality"),
		"taskList.speculative":       spFlag("speculative"),
		"taskList.errorMessage":      spAt("message"),
		"taskList.schedulerDelay":    spAt("schedulerDelayMs"),
		"taskList.gettingResultTime": spAt("gettingResultMs"),

		"environment.runtime.javaVersion":  envSection("runtime", "Java Version"),
		"environment.runtime.javaHome":     envSection("runtime", "Java Home"),
		"environment.runtime.scalaVersion": envSection("runtime", "Scala Version"),
		"environment.sparkProperties":      envSection("spark", ""),
		"environment.hadoopProperties":     envSection("hadoop", ""),
		"environment.systemProperties":     envSection("system", ""),
		"environment.metricsProperties":    envSection("metrics", ""),
		"environment.classpathEntries":     envSection("classpath", ""),

		"sql.id":              spAt("sqlId"),
		"sql.description":     spAt("description"),
		"sql.planDescription": spAt("planDescription"),
		"sql.submissionTime":  spMs("startMs"),
		"sql.duration":        spAt("durationMs"),
		"sql.errorMessage":    spAt("error"),
		"sql.status":          sqlStatus,
		"sql.runningJobIds":   sqlJobs(""),
		"sql.successJobIds":   sqlJobs("JobSucceeded"),
		"sql.failedJobIds":    sqlJobs("JobFailed"),
	}
	return m
}()

// envSection reads a name's value of a section of sparkprof's environment,
// or, without a name, the whole section.
func envSection(section, name string) spGetter {
	return func(sp, _ jsonObj) any {
		pairs, _ := sp[section].([]any)
		if name == "" {
			return pairs
		}
		for _, p := range pairs {
			if kv, _ := p.([]any); len(kv) == 2 && kv[0] == name {
				return kv[1]
			}
		}
		return nil
	}
}

// sqlStatus is a SQL execution's status as the History Server derives it
// from its jobs: COMPLETED when all succeeded, else FAILED when one failed,
// else RUNNING.
func sqlStatus(sp, rep jsonObj) any {
	ids, _ := sp["jobIds"].([]any)
	succeeded, _ := sqlJobs("JobSucceeded")(sp, rep).([]any)
	failed, _ := sqlJobs("JobFailed")(sp, rep).([]any)
	switch {
	case len(succeeded) == len(ids):
		return "COMPLETED"
	case len(failed) > 0:
		return "FAILED"
	}
	return "RUNNING"
}

// sqlJobs lists the jobs of a SQL execution whose result is result.
func sqlJobs(result string) spGetter {
	return func(sp, rep jsonObj) any {
		results := map[string]string{}
		jobs, _ := rep["jobs"].([]any)
		for _, j := range jobs {
			j := j.(jsonObj)
			r, _ := j["result"].(string)
			results[hsNorm(j["jobId"])] = r
		}
		var ids []any
		ids0, _ := sp["jobIds"].([]any)
		for _, id := range ids0 {
			if results[hsNorm(id)] == result {
				ids = append(ids, id)
			}
		}
		return ids
	}
}

// taskSummaryFields maps the History Server's taskSummary quantiles to the
// rows of sparkprof's stage page, and how many nanoseconds its unit is
// where sparkprof says milliseconds of a figure kept in nanoseconds.
var taskSummaryFields = map[string]struct {
	row   string
	scale float64
}{
	"duration": {"Duration", 1}, "schedulerDelay": {"Scheduler delay", 1},
	"executorDeserializeTime": {"Task deserialisation", 1}, "executorRunTime": {"Run time", 1},
	"executorCpuTime": {"CPU time", 1e6}, "jvmGcTime": {"GC time", 1},
	"resultSerializationTime": {"Result serialisation", 1}, "gettingResultTime": {"Getting result", 1},
	"peakExecutionMemory": {"Peak execution memory", 1}, "inputMetrics.bytesRead": {"Input size", 1},
	"inputMetrics.recordsRead": {"Input records", 1}, "outputMetrics.bytesWritten": {"Output size", 1},
	"shuffleReadMetrics.fetchWaitTime":   {"Shuffle read blocked time", 1},
	"shuffleReadMetrics.readBytes":       {"Shuffle read size", 1},
	"shuffleReadMetrics.remoteBytesRead": {"Shuffle remote reads", 1},
	"shuffleWriteMetrics.writeTime":      {"Shuffle write time", 1e6},
	"shuffleWriteMetrics.writeBytes":     {"Shuffle write size", 1},
	"memoryBytesSpilled":                 {"Spill (memory)", 1}, "diskBytesSpilled": {"Spill (disk)", 1},
}

// resubmitted is why a task whose output was lost, and its executor,
// differ.
const resubmitted = "a task whose map output was lost ends again, Resubmitted, without metrics: sparkprof's task list shows that last end (so that failures by reason count it), the History Server its first; the History Server counts the resubmission on the executor only while the executor is alive, sparkprof on the executor that ran it"

// failedTaskQuantiles is why a stage with failed tasks has other duration
// quantiles.
const failedTaskQuantiles = "the History Server takes its duration, scheduler delay and getting-result quantiles' indices from the successful tasks but their values from every task attempt, failed ones too; sparkprof's are the successful tasks' own"

// hsDocumented are the History Server's fields sparkprof does not report
// or reports differently, each with why (docs/analyze-json.md, "Differences
// from Spark's History Server"). A name covers the fields under it.
var hsDocumented = map[string]string{
	"applications.attempts.lastUpdated":       "not kept: the log file's modification time",
	"applications.attempts.lastUpdatedEpoch":  "not kept: the log file's modification time",
	"applications.attempts.logSourceName":     "not kept in the app list: the log's path (sources[] of the report)",
	"applications.attempts.logSourceFullPath": "not kept in the app list: the log's path (sources[] of the report)",

	"jobs (without JobStart)":                 "a job whose JobStart the log lacks (a cut log) is listed from its JobEnd; the History Server lists only the jobs it saw start",
	"jobs.jobTags":                            "not kept: Spark 3.5's job tags",
	"jobs.killedTasksSummary":                 "not kept: the job's task and stage counts are its stages'",
	"jobs.numTasks":                           "not kept: the job's task and stage counts are its stages'",
	"jobs.numActiveTasks":                     "not kept: the job's task and stage counts are its stages'",
	"jobs.numCompletedTasks":                  "not kept: the job's task and stage counts are its stages'",
	"jobs.numSkippedTasks":                    "not kept: the job's task and stage counts are its stages'",
	"jobs.numFailedTasks":                     "not kept: the job's task and stage counts are its stages'",
	"jobs.numKilledTasks":                     "not kept: the job's task and stage counts are its stages'",
	"jobs.numCompletedIndices":                "not kept: the job's task and stage counts are its stages'",
	"jobs.numActiveStages":                    "not kept: the job's task and stage counts are its stages'",
	"jobs.numCompletedStages":                 "not kept: the job's task and stage counts are its stages'",
	"jobs.numSkippedStages":                   "not kept: the job's task and stage counts are its stages'",
	"jobs.numFailedStages":                    "not kept: the job's task and stage counts are its stages'",
	"stages.numActiveTasks":                   "not kept: tasks running are the tasks without an end",
	"stages.numCompletedIndices":              "not kept: partitions done, where tasks are counted",
	"stages.description":                      "not kept on stages: the job's description",
	"stages.details":                          "not kept: the call stack of the stage's creation",
	"stages.schedulingPool":                   "not kept: fair-scheduler pools",
	"stages.accumulatorUpdates":               "not kept: accumulators",
	"stages.killedTasksSummary":               "not kept: killed tasks are counted, not by reason",
	"stages.resourceProfileId":                "not kept: resource profiles",
	"stages.peakExecutorMetrics":              "not kept: executor memory metrics",
	"stages.isShufflePushEnabled":             "not kept: push-based shuffle",
	"stages.shuffleMergersCount":              "not kept: push-based shuffle",
	"stages.shuffleCorruptMergedBlockChunks":  "not kept: push-based shuffle",
	"stages.shuffleMergedFetchFallbackCount":  "not kept: push-based shuffle",
	"stages.shuffleMergedRemoteBlocksFetched": "not kept: push-based shuffle",
	"stages.shuffleMergedLocalBlocksFetched":  "not kept: push-based shuffle",
	"stages.shuffleMergedRemoteChunksFetched": "not kept: push-based shuffle",
	"stages.shuffleMergedLocalChunksFetched":  "not kept: push-based shuffle",
	"stages.shuffleMergedRemoteBytesRead":     "not kept: push-based shuffle",
	"stages.shuffleMergedLocalBytesRead":      "not kept: push-based shuffle",
	"stages.shuffleMergedRemoteReqsDuration":  "not kept: push-based shuffle",
	"stages.shuffleRemoteReqsDuration":        "not kept: Spark 3.4's time in remote shuffle requests",

	"taskSummary.quantiles":                                     "the quantiles asked for",
	"taskSummary.duration (stage with failed tasks)":            failedTaskQuantiles,
	"taskSummary.schedulerDelay (stage with failed tasks)":      failedTaskQuantiles,
	"taskSummary.gettingResultTime (stage with failed tasks)":   failedTaskQuantiles,
	"taskSummary.executorDeserializeCpuTime":                    "not a row of the stage page",
	"taskSummary.resultSize":                                    "not a row of the stage page",
	"taskSummary.outputMetrics.recordsWritten":                  "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.readRecords":                "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.remoteBlocksFetched":        "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.localBlocksFetched":         "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.remoteBytesReadToDisk":      "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.totalBlocksFetched":         "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.remoteReqsDuration":         "not a row of the stage page",
	"taskSummary.shuffleReadMetrics.shufflePushReadMetricsDist": "not kept: push-based shuffle",
	"taskSummary.shuffleWriteMetrics.writeRecords":              "not a row of the stage page",

	"taskList.accumulatorUpdates":                                    "not kept: accumulators",
	"taskList.executorLogs":                                          "not kept: the executors' log links",
	"taskList.taskMetrics.shuffleReadMetrics.remoteReqsDuration":     "not kept: Spark 3.4's time in remote shuffle requests",
	"taskList.taskMetrics.shuffleReadMetrics.shufflePushReadMetrics": "not kept: push-based shuffle",

	"environment.resourceProfiles": "not kept: resource profiles",

	"taskList (resubmitted)":               resubmitted,
	"executors (ran resubmitted tasks)":    resubmitted,
	"allexecutors (ran resubmitted tasks)": resubmitted,

	"sql.queryId":         "not kept: Spark 4's id of a query across its executions",
	"sql.rootExecutionId": "not kept: Spark 4's execution that started a nested one",
	"sql.edges":           "not kept: the graph's edges (the plan's operators are a tree in plan)",
}

func init() {
	for hs, sp := range taskMetricFields {
		hsMapped["taskList.taskMetrics."+hs] = spAt("metrics." + sp)
	}
	for _, f := range stageMetricFields {
		hsMapped["stages."+f] = spAt("metrics." + f)
	}
	for _, answer := range []string{"executors", "allexecutors"} {
		for hs, sp := range map[string]spGetter{
			"id": spAt("id"), "hostPort": spAt("host"), "totalCores": spAt("cores"), "maxMemory": spAt("maxMemory"),
			"addTime": spMs("addedMs"), "removeTime": spMs("removedMs"), "removeReason": spAt("removalReason"),
			"failedTasks": spAt("failedTasks"), "completedTasks": spAt("completedTasks"), "totalTasks": spAt("totalTasks"),
			"totalDuration": spAt("totalDurationMs"), "totalDuration (driver)": spAt("totalDurationMs"),
			"hostPort (driver)": spAt("host"), "totalGCTime (driver)": spAt("totalGCTimeMs"),
			"totalGCTime": spAt("totalGCTimeMs"), "totalInputBytes": spAt("totalInputBytes"),
			"totalShuffleRead": spAt("totalShuffleRead"), "totalShuffleWrite": spAt("totalShuffleWrite"),
			"isExcluded": spFlag("excluded"), "isBlacklisted": spFlag("excluded"),
			"excludedInStages": spAt("excludedInStages"), "blacklistedInStages": spAt("excludedInStages"),
			"isActive": func(sp, _ jsonObj) any { return jsonInt(sp["removedMs"]) == 0 },
		} {
			hsMapped[answer+"."+hs] = sp
		}
	}
	for _, answer := range []string{"executors", "allexecutors"} {
		for f, why := range map[string]string{
			"rddBlocks": "not kept: cached blocks", "memoryUsed": "not kept: cached blocks",
			"diskUsed": "not kept: cached blocks", "maxTasks": "not kept: the executor's task slots are its cores",
			"activeTasks":       "not kept: tasks running are the tasks without an end",
			"executorLogs":      "not kept: the executors' log links",
			"memoryMetrics":     "not kept: storage memory in use",
			"peakMemoryMetrics": "not kept: executor memory metrics",
			"attributes":        "not kept: the cluster manager's attributes",
			"resources":         "not kept: resource profiles", "resourceProfileId": "not kept: resource profiles",
			"totalDuration (driver)": "the History Server counts the app's run as the driver's task time; sparkprof sums task durations only",
			"totalGCTime (driver)":   "the History Server's driver GC time is its JVM's, from the executor metrics where the log has them (else 0); sparkprof sums the GC time of the tasks that ran in the driver (local mode)",
			"hostPort (driver)":      "in local mode the History Server shows the driver's block manager host (the machine's name), sparkprof the host of its ExecutorAdded and tasks (localhost)",
		} {
			hsDocumented[answer+"."+f] = why
		}
	}
}

// documentedAs returns the reason hsDocumented gives for field, if any.
func documentedAs(field string) (string, bool) {
	for f := field; ; {
		if why, ok := hsDocumented[f]; ok {
			return why, true
		}
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			return "", false
		}
		f = f[:i]
	}
}

// hsTimeLayout is how the History Server writes times.
const hsTimeLayout = "2006-01-02T15:04:05.000GMT"

// hsValue normalises a History Server value of field: times to Unix ms,
// the -1 or 1969 of a time not yet to nothing.
func hsValue(field string, v any) any {
	if strings.HasSuffix(field, "Epoch") && hsNorm(v) == "-1" {
		return nil
	}
	s, ok := v.(string)
	if ok {
		if tm, err := time.Parse(hsTimeLayout, s); err == nil {
			if ms := tm.UnixMilli(); ms > 0 {
				return ms
			}
			return nil
		}
	}
	return v
}

// hsNorm is a value's comparable text: numbers without a fraction as
// integers, lists element by element, nothing and empty lists as "".
func hsNorm(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case fmt.Stringer: // json.Number
		return hsNormNumber(v.String())
	case float64:
		return hsNormNumber(strconv.FormatFloat(v, 'f', -1, 64))
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return strings.TrimRight(v, "\n\t ")
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = hsNorm(x)
		}
		return strings.Join(parts, "\n")
	}
	return fmt.Sprint(v)
}

func hsNormNumber(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return s
	}
	return strconv.FormatInt(int64(f), 10)
}

// flattenJSON lists an object's fields by dotted path; lists are values.
func flattenJSON(prefix string, o jsonObj, into map[string]any) {
	for k, v := range o {
		if m, ok := v.(jsonObj); ok {
			flattenJSON(prefix+k+".", m, into)
			continue
		}
		into[prefix+k] = v
	}
}

// fieldCount is what the comparison found of one field.
type fieldCount struct {
	equal, differ, notKept int
	examples               []string
}

// unordered are the fields whose lists are sets: their order is the
// History Server's hash order.
var unordered = map[string]bool{"sql.runningJobIds": true, "sql.successJobIds": true, "sql.failedJobIds": true}

// hsTally counts, per History Server field, sparkprof's equal and
// different values.
type hsTally map[string]*fieldCount

func (ht hsTally) count(field string) *fieldCount {
	c := ht[field]
	if c == nil {
		c = &fieldCount{}
		ht[field] = c
	}
	return c
}

// compare compares every field of a History Server object (answer's, of
// what where names) with sparkprof's object.
func (ht hsTally) compare(answer, where string, hs, sp, rep jsonObj) {
	// An answer may be tagged, "taskList (resubmitted)", for documented
	// differences of some of its objects: its fields are compared as the
	// answer's, and counted apart.
	base, _, _ := strings.Cut(answer, " (")
	fields := map[string]any{}
	flattenJSON("", hs, fields)
	for f, hv := range fields {
		field, key := answer+"."+f, base+"."+f
		if (f == "totalDuration" || f == "hostPort" || f == "totalGCTime") && hs["id"] == "driver" {
			field, key = field+" (driver)", key+" (driver)"
		}
		if key == "sql.nodes" {
			continue // compareSQLNodes compares them node by node
		}
		get, mapped := hsMapped[key]
		if !mapped {
			ht.count(key).notKept++
			continue
		}
		if strings.HasPrefix(f, "hostPort") {
			hv, _, _ = strings.Cut(hv.(string), ":")
		}
		ht.compareValue(field, where, hsValue(field, hv), get(sp, rep))
	}
}

// compareValue counts one value of field.
func (ht hsTally) compareValue(field, where string, hv, sv any) {
	c := ht.count(field)
	h, s := hsNorm(hv), hsNorm(sv)
	if unordered[field] {
		h, s = strings.Join(sortedLines(h), "\n"), strings.Join(sortedLines(s), "\n")
	}
	if h == s {
		c.equal++
		return
	}
	c.differ++
	if len(c.examples) < 3 {
		c.examples = append(c.examples, fmt.Sprintf("%s: History Server %q, sparkprof %q", where, hsCut(h), hsCut(s)))
	}
}

// compareSummary compares a History Server taskSummary with sparkprof's
// stage page quantiles, of a stage whose tasks all succeeded or not.
func (ht hsTally) compareSummary(where string, hs jsonObj, quantiles []any, failures bool) {
	rows := map[string][]any{}
	for _, q := range quantiles {
		q := q.(jsonObj)
		rows[q["metric"].(string)], _ = q["values"].([]any)
	}
	fields := map[string]any{}
	flattenJSON("", hs, fields)
	for f, hv := range fields {
		field := "taskSummary." + f
		if failures && (f == "duration" || f == "schedulerDelay" || f == "gettingResultTime") {
			field += " (stage with failed tasks)"
		}
		m, ok := taskSummaryFields[f]
		if !ok {
			ht.count(field).notKept++
			continue
		}
		hs, _ := hv.([]any)
		scaled := make([]any, len(hs))
		for i, v := range hs {
			scaled[i] = int64(float64(jsonInt(v)) / m.scale)
		}
		ht.compareValue(field, where, scaled, rows[m.row])
	}
}

func hsCut(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// report logs the table of fields and fails on a difference, or a field,
// that hsDocumented does not name.
func (ht hsTally) report(t *testing.T) {
	t.Helper()
	// Fields not kept are listed by the name hsDocumented gives them
	// (peakMemoryMetrics, not each of its memory pools).
	rows := hsTally{}
	for f, c := range ht {
		if _, documented := documentedAs(f); documented && c.notKept > 0 {
			group := f
			for ; hsDocumented[group] == ""; group = group[:strings.LastIndexByte(group, '.')] {
			}
			r := rows.count(group)
			r.notKept = max(r.notKept, c.notKept)
			continue
		}
		rows[f] = c
	}
	ht = rows
	names := make([]string, 0, len(ht))
	for f := range ht {
		names = append(names, f)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "History Server field → sparkprof (values compared over every log):\n")
	fmt.Fprintf(&b, "%-62s %7s %7s %8s  %s\n", "field", "equal", "differ", "not kept", "documented difference")
	for _, f := range names {
		c := ht[f]
		why, documented := documentedAs(f)
		switch {
		case c.notKept > 0 && !documented:
			t.Errorf("History Server field %s (%d values) is neither compared nor a documented difference", f, c.notKept)
		case c.differ > 0 && !documented:
			t.Errorf("%s differs in %d of %d values; e.g.\n%s", f, c.differ, c.differ+c.equal, strings.Join(c.examples, "\n"))
		}
		if c.notKept > 0 {
			fmt.Fprintf(&b, "%-62s %7s %7s %8d  %s\n", f, "-", "-", c.notKept, why)
			continue
		}
		if c.differ == 0 {
			why = ""
		} else if len(c.examples) > 0 && documented {
			why += " (" + c.examples[0] + ")"
		}
		fmt.Fprintf(&b, "%-62s %7d %7d %8s  %s\n", f, c.equal, c.differ, "-", why)
	}
	t.Log(b.String())
}
