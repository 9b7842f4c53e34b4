// Package containerlog is what a Spark driver's or executor's container
// log says, as package applog reads it: the jobs, stages and tasks the
// scheduler's lines name, the errors and warnings grouped, runs of
// repeated lines, executor losses and the process's identity. Package
// spark builds an app model from it and package analysis reads its
// errors, runs and losses, neither reading the files.
package containerlog

import "time"

// Layout names a log line layout applog recognises.
type Layout string

// Recognised layouts.
const (
	// LayoutLog4j is the log4j default "yy/MM/dd HH:mm:ss LEVEL Logger: msg",
	// optionally with ".SSS" and a thread name (which may hold spaces)
	// before the level, as Spark 3 DriverLogger writes.
	LayoutLog4j Layout = "log4j"
	// LayoutLog4jLine is "yyyy-MM-dd HH:mm:ss[,SSS] LEVEL Logger:Line - msg".
	LayoutLog4jLine Layout = "log4j-line"
	// LayoutJSON is Spark 4's structured layout: one JSON object a line
	// with ts, level, logger, msg, context and exception.
	LayoutJSON Layout = "json"
)

// Job is a Spark job seen in DAGScheduler lines.
type Job struct {
	ID         int
	Name       string
	Partitions int
	Start, End time.Time
	// Took is the duration printed in "Job N finished: ... took X s".
	Took time.Duration
}

// Stage is a stage submission seen in DAGScheduler lines.
type Stage struct {
	ID        int
	Kind      string // "ResultStage" or "ShuffleMapStage"
	Name      string
	Submitted time.Time
}

// Task is one task attempt seen in TaskSetManager and Executor lines.
type Task struct {
	TID          int
	Stage        int
	StageAttempt int
	Index        int
	Executor     string
	Host         string
	Launch       time.Time
	Finish       time.Time
	// Duration is taken from the "in N ms" text of the Finished line.
	Duration time.Duration
	Status   string // "RUNNING", "SUCCESS", "FAILED" or "KILLED"
	// Failure is the reason of a lost task, as the "Lost task" line gives it.
	Failure string
	// PythonTotal is PythonRunner's "Times: total" attributed to this task
	// (by the executor thread name when present), zero if none was seen.
	PythonTotal time.Duration
}

// PythonTimes is one PythonRunner "Times:" line.
type PythonTimes struct {
	Time                      time.Time
	Total, Boot, Init, Finish time.Duration
}

// ErrorGroup is a set of ERROR/WARN records whose normalised text is equal.
type ErrorGroup struct {
	Level   string
	Logger  string
	Message string // first record's message with continuation lines
	Key     string // normalised text
	Count   int
	First   time.Time
	Last    time.Time
}

// ExecutorEvent is an executor loss, decommission or exclusion line.
type ExecutorEvent struct {
	Time     time.Time
	Kind     string // "lost", "decommission" or "excluded"
	Executor string // executor ID when the line names one
	Message  string
}

// Chunk is a pattern that repeats on consecutive lines.
type Chunk struct {
	Pattern string // "LEVEL Logger: normalised message", one line per record of a repeating block
	Example string // the first message of each pattern line
	Runs    int    // runs of two or more consecutive records
	Lines   int    // records covered by those runs
}

// Log is what one log file says.
type Log struct {
	Source string
	// Container is the YARN container directory name (applog.OpenDir).
	Container string
	// Host is the node the container ran on, from yarn-logs headers.
	Host string
	Role string // "driver", "executor" or ""
	// ExecutorID, AppID and Pod come from a Kubernetes pod log's
	// entrypoint line ("+ exec ... --executor-id 1 --app-id spark-... --podName ...").
	ExecutorID, AppID, Pod string
	// AppName and SparkVersion come from the driver's SparkContext lines;
	// AppID is also taken from the scheduler backend's lines when the log
	// prints it ("Connected to Spark cluster with app ID ...",
	// "Submitted application application_...").
	AppName, SparkVersion string
	Layout                Layout
	Lines                 int
	Start                 time.Time
	End                   time.Time
	Levels                map[string]int
	Jobs                  []Job
	Stages                []Stage
	Tasks                 []Task
	Python                []PythonTimes
	// Errors holds ERROR and WARN groups, newest first.
	Errors []ErrorGroup
	// Chunks are runs of consecutive lines with the same normalised
	// logger and message, grouped by that pattern, most lines first.
	Chunks []Chunk
	// ExecutorEvents are executor losses, decommissions and exclusions.
	ExecutorEvents []ExecutorEvent
	// Unparsed counts lines without a recognised prefix that did not
	// continue a record (for example agent output).
	Unparsed int
}
