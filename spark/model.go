// Package spark builds the model of a Spark application — app, executors,
// jobs, stages, tasks with every task metric, SQL executions — from its
// event log, or, with task durations alone, from its container logs
// (FromLogs).
//
// Build streams the log line by line: it keeps one small record per task,
// stage, job and executor, never the decoded JSON.
package spark

import "github.com/sparkprof/sparkprof/eventlog"

// App is one application attempt.
type App struct {
	Summary

	Executors []*Executor      `json:"executors"`
	Jobs      []*Job           `json:"jobs"`
	Stages    []*Stage         `json:"stages"`
	Tasks     []*Task          `json:"-"`
	SQL       []*SQLExecution  `json:"sql"`
	Exclusion []ExclusionEvent `json:"exclusions,omitempty"`
	// Environment is the full environment of the EnvironmentUpdate event,
	// nil without one.
	Environment *Environment `json:"environment,omitempty"`
}

// Summary is the application-level part of App: identity, times, counts
// and key configuration.
type Summary struct {
	ID           string `json:"id"`
	AttemptID    string `json:"attemptId,omitempty"`
	Name         string `json:"name"`
	User         string `json:"user,omitempty"`
	SparkVersion string `json:"sparkVersion"`
	Master       string `json:"master,omitempty"`
	StartMs      int64  `json:"startMs"`
	EndMs        int64  `json:"endMs"`
	DurationMs   int64  `json:"durationMs"`
	// ExitCode is the driver's exit code, as Spark 4's ApplicationEnd
	// logs it; nil before Spark 4 and while the app runs.
	ExitCode *int `json:"exitCode,omitempty"`
	// TaskCount counts task attempts that ended; FailedTaskCount those that
	// ended with a reason other than Success (Resubmitted, TaskKilled and
	// the failures), as Spark's own tools count them.
	TaskCount       int `json:"taskCount"`
	FailedTaskCount int `json:"failedTaskCount"`
	KilledTaskCount int `json:"killedTaskCount"`
	JobCount        int `json:"jobCount"`
	SQLCount        int `json:"sqlCount"`
	// ExecutorCount counts the executors other than the driver.
	ExecutorCount int `json:"executorCount"`
	// Config holds the Spark properties that matter for performance (see
	// KeyConfig), as the EnvironmentUpdate event gives them.
	Config map[string]string `json:"config,omitempty"`
	// FailureReasons counts failed task ends by their reason class.
	FailureReasons map[string]int `json:"failureReasons"`
	// Speculation counts the speculative task attempts that ended.
	Speculation Speculation `json:"speculation"`
}

// Speculation sums up the speculative task attempts of an app (copies of a
// running task that spark.speculation launched on another executor).
type Speculation struct {
	// Attempts counts the speculative attempts that ended; Won those that
	// succeeded, whose result Spark kept.
	Attempts int `json:"attempts"`
	Won      int `json:"won"`
	// TaskMs is their executor time: the sum of their durations.
	TaskMs int64 `json:"taskMs"`
}

// KeyConfig lists the Spark properties App.Config keeps.
var KeyConfig = []string{
	"spark.master", "spark.submit.deployMode", "spark.executor.cores", "spark.executor.memory",
	"spark.executor.memoryOverhead", "spark.executor.instances", "spark.driver.memory", "spark.driver.cores",
	"spark.dynamicAllocation.enabled", "spark.dynamicAllocation.minExecutors", "spark.dynamicAllocation.maxExecutors",
	"spark.sql.shuffle.partitions", "spark.default.parallelism", "spark.sql.adaptive.enabled",
	"spark.memory.fraction", "spark.memory.offHeap.enabled", "spark.serializer", "spark.speculation",
	"spark.task.cpus", "spark.decommission.enabled", "spark.plugins", "spark.eventLog.rolling.enabled",
}

// Executor is an executor (or the driver, ID "driver") with its life and a
// summary of its tasks as the History Server's executors page shows it.
type Executor struct {
	ID            string `json:"id"`
	Host          string `json:"host"`
	Cores         int    `json:"cores"`
	MaxMemory     int64  `json:"maxMemory,omitempty"` // storage memory of its block manager, bytes
	AddedMs       int64  `json:"addedMs"`
	RemovedMs     int64  `json:"removedMs"`
	RemovalReason string `json:"removalReason"`
	Excluded      bool   `json:"excluded,omitempty"`
	// ExcludedInStages lists the stages it was excluded from, as the
	// History Server's excludedInStages.
	ExcludedInStages []int `json:"excludedInStages,omitempty"`

	TotalTasks      int   `json:"totalTasks"`
	CompletedTasks  int   `json:"completedTasks"`
	FailedTasks     int   `json:"failedTasks"`
	KilledTasks     int   `json:"killedTasks"`
	TotalDurationMs int64 `json:"totalDurationMs"` // sum of task durations (launch to finish)
	TotalGCTimeMs   int64 `json:"totalGCTimeMs"`
	InputBytes      int64 `json:"totalInputBytes"`
	ShuffleRead     int64 `json:"totalShuffleRead"`
	ShuffleWrite    int64 `json:"totalShuffleWrite"`
	// NoMetrics says that its tasks' metrics and its cores are unknown
	// (an executor a container log names): the sums above are not zero.
	NoMetrics bool `json:"noMetrics,omitempty"`
}

// ExclusionEvent is an executor or node excluded (blacklisted before Spark
// 3.1) or let back in, for the whole app or for one stage attempt.
type ExclusionEvent struct {
	TimeMs     int64  `json:"timeMs"`
	ExecutorID string `json:"executorId,omitempty"`
	Host       string `json:"host,omitempty"`
	StageID    int    `json:"stageId"` // -1 when app-wide
	// StageAttempt is the stage attempt of a stage's exclusion.
	StageAttempt int  `json:"stageAttempt"`
	Excluded     bool `json:"excluded"`
	// Failures is what led to an exclusion: the task failures of an
	// executor, or the excluded executors of a node.
	Failures int `json:"failures,omitempty"`
	// Reason says it in words: "4 task failures", "2 executors excluded".
	Reason string `json:"reason,omitempty"`
}

// Job is a Spark job.
type Job struct {
	ID          int    `json:"jobId"`
	StageIDs    []int  `json:"stageIds"`
	SubmitMs    int64  `json:"submitMs"`
	EndMs       int64  `json:"endMs"`
	DurationMs  int64  `json:"durationMs"`
	Result      string `json:"result"` // JobSucceeded, JobFailed, or "" while running
	Failure     string `json:"failure,omitempty"`
	SQLID       int64  `json:"sqlId"` // -1 when not part of a SQL execution
	Group       string `json:"group,omitempty"`
	Description string `json:"description,omitempty"`
	// Name is its last stage's name (the call site of the action), as the
	// History Server names a job.
	Name string `json:"name,omitempty"`
}

// Stage is one attempt of a stage, with the sums of its tasks' metrics.
type Stage struct {
	ID         int    `json:"stageId"`
	Attempt    int    `json:"attempt"`
	Name       string `json:"name"`
	NumTasks   int    `json:"numTasks"` // tasks the stage was submitted with
	Parents    []int  `json:"parentIds"`
	RDDIDs     []int  `json:"rddIds"`
	JobID      int    `json:"jobId"` // -1 when no job named it
	SQLID      int64  `json:"sqlId"` // -1 when not part of a SQL execution
	SubmitMs   int64  `json:"submitMs"`
	CompleteMs int64  `json:"completeMs"`
	DurationMs int64  `json:"durationMs"`
	// FirstLaunchMs is the launch time of its first task.
	FirstLaunchMs   int64  `json:"firstTaskLaunchMs"`
	Status          string `json:"status"` // COMPLETE, FAILED, ACTIVE, PENDING, SKIPPED
	Failure         string `json:"failure,omitempty"`
	TaskCount       int    `json:"taskCount"` // task attempts that ended
	FailedTaskCount int    `json:"failedTaskCount"`
	KilledTaskCount int    `json:"killedTaskCount"`
	// ResubmittedTaskCount counts the ends of tasks that had ended before
	// and were resubmitted, their output lost with their executor: Spark
	// posts a second TaskEnd (Resubmitted) for each, which TaskCount and
	// FailedTaskCount count, so that TaskCount less it is the number of
	// distinct task attempts, those the stage's task table lists.
	ResubmittedTaskCount int         `json:"resubmittedTaskCount,omitempty"`
	Metrics              TaskMetrics `json:"metrics"`
	// NoMetrics says that its tasks' metrics are unknown (a stage a
	// container log names): Metrics are not zero.
	NoMetrics bool `json:"noMetrics,omitempty"`
	// Accumulators are the named accumulators of the program (not Spark's
	// internal ones) and their values when the stage attempt ended, as
	// the History Server's stage page lists them.
	Accumulators []Accumulator `json:"accumulators,omitempty"`
}

// Accumulator is a named accumulator and its value, as Spark prints it.
type Accumulator struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Task is one task attempt.
type Task struct {
	ID           int64  `json:"taskId"`
	Index        int    `json:"index"`
	Attempt      int    `json:"attempt"`
	Partition    int    `json:"partition"` // -1 before Spark 3.3 logged it
	StageID      int    `json:"stageId"`
	StageAttempt int    `json:"stageAttempt"`
	ExecutorID   string `json:"executorId"`
	Host         string `json:"host"`
	Locality     string `json:"locality,omitempty"`
	Speculative  bool   `json:"speculative,omitempty"`
	LaunchMs     int64  `json:"launchMs"`
	FinishMs     int64  `json:"finishMs"` // 0 while running
	// FetchStartMs is when the driver started fetching an indirect result.
	FetchStartMs int64  `json:"fetchStartMs,omitempty"`
	Status       string `json:"status"` // SUCCESS, FAILED, KILLED, RUNNING
	// Reason is the end reason's class for a task that did not succeed:
	// ExceptionFailure, FetchFailed, ExecutorLostFailure, TaskKilled,
	// Resubmitted, TaskResultLost, TaskCommitDenied, UnknownReason.
	Reason string `json:"reason,omitempty"`
	// Message details the reason: the exception class and message, the
	// fetch failure, the loss reason.
	Message string `json:"message,omitempty"`
	// TopFrame is the first stack frame of an ExceptionFailure.
	TopFrame string      `json:"topFrame,omitempty"`
	Metrics  TaskMetrics `json:"metrics"`
	// NoMetrics says that the task's metrics are unknown, not zero: a
	// container log's "Finished task" line gives its times alone.
	NoMetrics bool `json:"noMetrics,omitempty"`
	// accums are the task's updates of accumulators (SQL metrics among
	// them) while the builder reads its end: it drops them after.
	accums []accumUpdate
}

// DurationMs is the task's wall time from launch to finish.
func (t *Task) DurationMs() int64 {
	if t.FinishMs == 0 {
		return 0
	}
	return t.FinishMs - t.LaunchMs
}

// GettingResultMs is the time the driver spent fetching the task's result.
func (t *Task) GettingResultMs() int64 {
	if t.FetchStartMs == 0 || t.FinishMs == 0 {
		return 0
	}
	return t.FinishMs - t.FetchStartMs
}

// SchedulerDelayMs is the part of the task's time not spent running,
// deserialising, serialising the result or fetching it: scheduling and
// shipping, computed as the History Server does; 0 when the task's
// metrics are unknown (NoMetrics), as its time may have gone to any.
func (t *Task) SchedulerDelayMs() int64 {
	d := t.DurationMs() - t.Metrics.RunTimeMs - t.Metrics.DeserializeMs - t.Metrics.ResultSerializationMs - t.GettingResultMs()
	if t.FinishMs == 0 || d < 0 || t.NoMetrics {
		return 0
	}
	return d
}

// TaskMetrics are the metrics of a task, or their sum over tasks. Times
// are in ms unless named Ns.
type TaskMetrics struct {
	RunTimeMs             int64 `json:"executorRunTime"`
	CPUTimeNs             int64 `json:"executorCpuTime"`
	DeserializeMs         int64 `json:"executorDeserializeTime"`
	DeserializeCPUNs      int64 `json:"executorDeserializeCpuTime"`
	ResultSerializationMs int64 `json:"resultSerializationTime"`
	GCTimeMs              int64 `json:"jvmGcTime"`
	ResultSize            int64 `json:"resultSize"`
	PeakExecutionMemory   int64 `json:"peakExecutionMemory"`
	MemorySpilled         int64 `json:"memoryBytesSpilled"`
	DiskSpilled           int64 `json:"diskBytesSpilled"`
	InputBytes            int64 `json:"inputBytes"`
	InputRecords          int64 `json:"inputRecords"`
	OutputBytes           int64 `json:"outputBytes"`
	OutputRecords         int64 `json:"outputRecords"`
	ShuffleRemoteBlocks   int64 `json:"shuffleRemoteBlocksFetched"`
	ShuffleLocalBlocks    int64 `json:"shuffleLocalBlocksFetched"`
	ShuffleFetchWaitMs    int64 `json:"shuffleFetchWaitTime"`
	ShuffleRemoteBytes    int64 `json:"shuffleRemoteBytesRead"`
	ShuffleRemoteToDisk   int64 `json:"shuffleRemoteBytesReadToDisk"`
	ShuffleLocalBytes     int64 `json:"shuffleLocalBytesRead"`
	ShuffleReadRecords    int64 `json:"shuffleReadRecords"`
	ShuffleWriteBytes     int64 `json:"shuffleWriteBytes"`
	ShuffleWriteTimeNs    int64 `json:"shuffleWriteTime"`
	ShuffleWriteRecords   int64 `json:"shuffleWriteRecords"`
}

// ShuffleReadBytes is the bytes a task read from shuffle, remote and local.
func (m *TaskMetrics) ShuffleReadBytes() int64 { return m.ShuffleRemoteBytes + m.ShuffleLocalBytes }

// Add adds o to m, field by field.
func (m *TaskMetrics) Add(o *TaskMetrics) {
	m.RunTimeMs += o.RunTimeMs
	m.CPUTimeNs += o.CPUTimeNs
	m.DeserializeMs += o.DeserializeMs
	m.DeserializeCPUNs += o.DeserializeCPUNs
	m.ResultSerializationMs += o.ResultSerializationMs
	m.GCTimeMs += o.GCTimeMs
	m.ResultSize += o.ResultSize
	m.PeakExecutionMemory += o.PeakExecutionMemory
	m.MemorySpilled += o.MemorySpilled
	m.DiskSpilled += o.DiskSpilled
	m.InputBytes += o.InputBytes
	m.InputRecords += o.InputRecords
	m.OutputBytes += o.OutputBytes
	m.OutputRecords += o.OutputRecords
	m.ShuffleRemoteBlocks += o.ShuffleRemoteBlocks
	m.ShuffleLocalBlocks += o.ShuffleLocalBlocks
	m.ShuffleFetchWaitMs += o.ShuffleFetchWaitMs
	m.ShuffleRemoteBytes += o.ShuffleRemoteBytes
	m.ShuffleRemoteToDisk += o.ShuffleRemoteToDisk
	m.ShuffleLocalBytes += o.ShuffleLocalBytes
	m.ShuffleReadRecords += o.ShuffleReadRecords
	m.ShuffleWriteBytes += o.ShuffleWriteBytes
	m.ShuffleWriteTimeNs += o.ShuffleWriteTimeNs
	m.ShuffleWriteRecords += o.ShuffleWriteRecords
}

// SQLExecution is a Spark SQL query execution.
type SQLExecution struct {
	ID          int64  `json:"sqlId"`
	Description string `json:"description"`
	StartMs     int64  `json:"startMs"`
	EndMs       int64  `json:"endMs"`
	DurationMs  int64  `json:"durationMs"`
	JobIDs      []int  `json:"jobIds"`
	Error       string `json:"error,omitempty"`
	// PlanDescription is the physical plan as Spark prints it (EXPLAIN
	// FORMATTED), and Plan its operators as a tree: the plan that ran, after
	// adaptive query execution changed it. Cut to 64 KiB and 2,000 operators.
	PlanDescription string    `json:"planDescription,omitempty"`
	Plan            *PlanNode `json:"plan,omitempty"`
}

// MaxMalformed is the most malformed lines a Report lists, and
// MaxUnknown the most names of events not modelled it counts apart: a
// log of nothing else would cost tens of times its size.
const (
	MaxMalformed = 100
	MaxUnknown   = 100
)

// OtherUnknown is the name Report.Unknown counts the events not modelled
// past the first MaxUnknown names under.
const OtherUnknown = "(other events)"

// Report lists what was missing or wrong in the log.
type Report struct {
	// Malformed holds the positions of the first lines that are not JSON
	// events, up to MaxMalformed of them; MalformedLines counts them all.
	Malformed      []eventlog.Pos
	MalformedLines int
	// Unknown counts events of types Build does not model, by name: the
	// first MaxUnknown names, then OtherUnknown counts the others.
	Unknown map[string]int
	// Truncations lists the parts whose data ended early.
	Truncations []eventlog.Truncation
	// MissingEnd is true when no SparkListenerApplicationEnd was seen.
	MissingEnd bool
	// Orphans counts task ends without a task start (their launch time is
	// taken from the end event).
	Orphans int
	// JobsWithoutStart counts jobs that ended without a JobStart: their
	// stages are not tied to them, nor is their submission time known.
	JobsWithoutStart int
}
