package analysis

import (
	"time"

	"github.com/sparkprof/sparkprof/spark"
)

// Evidence is the numbers behind a finding: one of the *...Evidence types
// of this package, by the finding's kind (docs/analyze-json.md). Their
// fields are declared in the order of their JSON names, as a report has
// always written them.
type Evidence interface{ evidence() }

// OtherFindings lists, in the evidence of a finding about a stage attempt,
// the stage's weaker findings, "kind: message" each.
type OtherFindings struct {
	Also []string `json:"also,omitempty"`
}

// StageRef names the stage attempt of a stage finding.
type StageRef struct {
	StageAttempt int    `json:"stageAttempt"`
	StageName    string `json:"stageName"`
}

// stageEvidence is the evidence of a finding about one stage attempt.
type stageEvidence interface {
	Evidence
	others() *OtherFindings
}

func (o *OtherFindings) others() *OtherFindings { return o }
func (*OtherFindings) evidence()                {}

// StragglerEvidence is a straggler finding's: the longest task of the
// stage against its median task.
type StragglerEvidence struct {
	OtherFindings
	// Cause is why the task ran long, when its metrics tell: deserialize,
	// result, scheduler-delay, skew, gc, shuffle-wait, spill, slow-host,
	// off-cpu or compute.
	Cause     string `json:"cause,omitempty"`
	Host      string `json:"host"`
	MedianMs  int64  `json:"medianMs"`
	Partition int    `json:"partition"`
	// Profile is where the task's profile samples went, when profiles of
	// the task were read.
	Profile *Hotspot `json:"profile,omitempty"`
	Ratio   float64  `json:"ratio"` // TaskMs over MedianMs
	StageRef
	StageSpanMs int64 `json:"stageSpanMs"`
	TaskMs      int64 `json:"taskMs"`
	Tasks       int   `json:"tasks"` // the stage's successful tasks
}

// SkewEvidence is a skew finding's: the task that read the most against
// the median task.
type SkewEvidence struct {
	OtherFindings
	MaxBytes    int64   `json:"maxBytes"`
	MedianBytes int64   `json:"medianBytes"`
	MedianMs    int64   `json:"medianMs"`
	Ratio       float64 `json:"ratio"` // MaxBytes over MedianBytes
	StageRef
	TaskID int64 `json:"taskId"`
	TaskMs int64 `json:"taskMs"`
}

// GCEvidence is a gc finding's about a stage: the executors' time in GC
// while its tasks ran, and the tasks' own GC and run times.
type GCEvidence struct {
	OtherFindings
	// AppShare is ExecutorGCMs over the executors' busy time in the app.
	AppShare float64 `json:"appShare"`
	// ExecutorGCMs is the executors' estimated time in GC while the
	// stage's tasks ran; ExecutorMs the time they ran (on each executor,
	// the union of its tasks' intervals).
	ExecutorGCMs int64 `json:"executorGcMs"`
	ExecutorMs   int64 `json:"executorMs"`
	// GCMs and RunMs are the sums of the tasks' JVM GC and run times.
	GCMs  int64   `json:"gcMs"`
	RunMs int64   `json:"runMs"`
	Share float64 `json:"share"` // ExecutorGCMs over ExecutorMs
	StageRef
}

// ShuffleWaitEvidence is a shuffle-wait finding's: the stage's tasks'
// time waiting for shuffle data.
type ShuffleWaitEvidence struct {
	OtherFindings
	FetchWaitMs int64   `json:"fetchWaitMs"`
	RunMs       int64   `json:"runMs"`
	Share       float64 `json:"share"`
	StageRef
}

// SpillEvidence is a spill finding's: what the stage's tasks spilled.
type SpillEvidence struct {
	OtherFindings
	DiskBytes   int64 `json:"diskBytes"`
	MemoryBytes int64 `json:"memoryBytes"`
	StageRef
}

// SchedulerOverheadEvidence is a scheduler-overhead finding's: the
// stage's tasks' scheduler delay and (de)serialisation, in all and in the
// executors' first tasks.
type SchedulerOverheadEvidence struct {
	OtherFindings
	FirstTasksMs int64   `json:"firstTasksMs"`
	OverheadMs   int64   `json:"overheadMs"`
	Share        float64 `json:"share"`
	StageRef
	TaskMs int64 `json:"taskMs"`
}

// TaskSizeEvidence is a task-size finding's: how many tasks, how short.
type TaskSizeEvidence struct {
	OtherFindings
	MedianMs int64 `json:"medianMs"`
	StageRef
	Tasks int `json:"tasks"`
}

// TooFewTasksEvidence is a too-few-tasks finding's: the stage's tasks
// against the executor slots free while it ran, and the partitions that
// would fill them.
type TooFewTasksEvidence struct {
	OtherFindings
	// EstimatedMs is the stage's time with Partitions tasks on the free
	// slots, replaying its task time.
	EstimatedMs int64   `json:"estimatedMs"`
	FreeSlots   float64 `json:"freeSlots"` // mean cores no other stage's task used while it ran
	InputBytes  int64   `json:"inputBytes"`
	MedianBytes int64   `json:"medianBytes"` // the median task's input and shuffle read
	MedianMs    int64   `json:"medianMs"`
	// Partitions is the suggested count: its data in 128 MiB parts, and
	// at least the free slots.
	Partitions       int   `json:"partitions"`
	ShuffleReadBytes int64 `json:"shuffleReadBytes"`
	StageRef
	StageSpanMs int64 `json:"stageSpanMs"`
	Tasks       int   `json:"tasks"`
}

// FoldedEvidence is the evidence of the finding that stands for the
// stage findings of one kind and severity past the first few: their
// stages and their own messages, in the same order.
type FoldedEvidence struct {
	Messages []string `json:"messages"`
	Stages   []int    `json:"stages"`
}

// FailuresEvidence is a failures finding's: the failed task attempts by
// reason, and the failed stage attempts and jobs.
type FailuresEvidence struct {
	// Excluded lists the executors and nodes Spark excluded from the app
	// or a stage after task failures (excludeOnFailure, blacklisting).
	Excluded     []spark.ExclusionEvent `json:"excluded"`
	FailedJobs   []int                  `json:"failedJobs"`
	FailedStages []int                  `json:"failedStages"`
	Groups       []FailureGroup         `json:"groups"`
	Tasks        int                    `json:"tasks"`
}

// FailureGroup is the failed task attempts of one reason and detail.
type FailureGroup struct {
	Count     int      `json:"count"`
	Detail    string   `json:"detail"` // exception class and top frame, or the message's first line
	Executors []string `json:"executors"`
	Reason    string   `json:"reason"`
	Stages    []int    `json:"stages"`
	TaskIDs   []int64  `json:"taskIds"` // the first ten
}

// ExecutorLossEvidence is an executor-loss finding's: the executors lost,
// and the log lines about losses counted by kind.
type ExecutorLossEvidence struct {
	Executors []LostExecutor `json:"executors"`
	LogEvents map[string]int `json:"logEvents"`
}

// LostExecutor is an executor the event log says was removed, or one a
// container log's line says was lost, decommissioned or excluded.
type LostExecutor struct {
	ExecutorID string `json:"executorId"`
	// Host is the executor's host from the event log (possibly empty);
	// nil for a log line, which does not name it.
	Host   *string `json:"host,omitempty"`
	Kind   string  `json:"kind,omitempty"` // a log line's: lost, decommission or excluded
	Reason string  `json:"reason"`
	Source string  `json:"source,omitempty"` // the log a line is in
	TimeMs int64   `json:"timeMs"`
}

// IdleExecutorsEvidence is an idle-executors finding's: the executors'
// allocated core time against their tasks' time.
type IdleExecutorsEvidence struct {
	AllocatedCoreMs int64   `json:"allocatedCoreMs"`
	IdleShare       float64 `json:"idleShare"`
	TaskMs          int64   `json:"taskMs"`
	WastedCoreHours float64 `json:"wastedCoreHours"`
}

// DriverTimeEvidence is a driver-time finding's: the app's time with no
// task running, and its longest stretches.
type DriverTimeEvidence struct {
	AppMs    int64   `json:"appMs"`
	Gaps     []Gap   `json:"gaps"`
	NoTaskMs int64   `json:"noTaskMs"`
	Share    float64 `json:"share"`
}

// Gap is a time of the app with no task running.
type Gap struct {
	StartMs int64  `json:"startMs"`
	EndMs   int64  `json:"endMs"`
	Before  string `json:"before"` // what it was: "before job 3", "after the last task, before the app's end"
}

// CriticalPathEvidence is a critical-path finding's: the chain of stages
// that bound the wall time.
type CriticalPathEvidence struct {
	DurationMs int64 `json:"durationMs"` // the sum of Path's stages' durations
	Jobs       []int `json:"jobs"`
	Path       []int `json:"path"`
	Stages     []int `json:"stages"` // the stages to mark: Path, or the longest of a long one
}

// WhatIfEvidence is a what-if finding's: the wall time estimated for
// other numbers of executors.
type WhatIfEvidence struct {
	// BoundStages are the stages with fewer tasks than the app's slots,
	// longest first (the first ten): more executors cannot shorten them.
	BoundStages      []BoundStage `json:"boundStages"`
	CoresPerExecutor int          `json:"coresPerExecutor"`
	Estimates        []Estimate   `json:"estimates"`
	Executors        int          `json:"executors"` // all the app had
	ObservedMs       int64        `json:"observedMs"`
	PeakExecutors    int          `json:"peakExecutors"` // the most at once
}

// BoundStage is a stage that cannot use more executors: its tasks, and
// the time its longest one takes in every estimate.
type BoundStage struct {
	LongestMs int64 `json:"longestMs"`
	StageID   int   `json:"stageId"`
	Tasks     int   `json:"tasks"`
}

// SpeculationEvidence is a speculation finding's: the app's speculative
// task attempts, and the time of the attempts that lost a race.
type SpeculationEvidence struct {
	spark.Speculation
	// LostMs is the executor time of the attempts, speculative or not, of
	// speculated tasks that did not succeed: work thrown away.
	LostMs int64 `json:"lostMs"`
	Stages []int `json:"stages"`
	// TaskShare is LostMs over the app's task time.
	TaskShare float64 `json:"taskShare"`
}

// DecommissionEvidence is a decommission finding's: the executors the
// cluster took back (decommissioned, preempted), and what it cost.
type DecommissionEvidence struct {
	// DriverHost is the driver's host when it was taken back too.
	DriverHost string         `json:"driverHost,omitempty"`
	Executors  []LostExecutor `json:"executors"`
	// FetchFailures counts the fetch failures of shuffle blocks on them.
	FetchFailures int            `json:"fetchFailures"`
	LogEvents     map[string]int `json:"logEvents,omitempty"`
	// RerunTasks counts their task attempts that did not succeed and ran
	// again; RerunMs is the time those attempts had run.
	RerunMs      int64   `json:"rerunMs"`
	RerunTaskIDs []int64 `json:"rerunTaskIds"` // the first ten
	RerunTasks   int     `json:"rerunTasks"`
}

// Estimate is the wall time a replay of the tasks on a number of
// executors gives.
type Estimate struct {
	EstimatedMs int64 `json:"estimatedMs"`
	Executors   int   `json:"executors"`
}

// ErrorsEvidence is an errors finding's: the logs' ERROR and WARN lines,
// deduplicated, newest first (the first twenty).
type ErrorsEvidence struct {
	Errors []LogError `json:"errors"`
}

// LogError is one message of the logs at ERROR or WARN, and how often.
type LogError struct {
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Level   string    `json:"level"`
	Logger  string    `json:"logger"`
	Message string    `json:"message"` // its first line that is not blank
	Source  string    `json:"source"`
}

// LogChunksEvidence is a log-chunks finding's: the runs of log lines
// that repeat, most lines covered first (the first ten), and the logs'
// lines in all.
type LogChunksEvidence struct {
	Chunks []LogChunk `json:"chunks"`
	Lines  int        `json:"lines"`
}

// LogChunk is a run of log lines that repeats.
type LogChunk struct {
	Example string `json:"example"`
	Lines   int    `json:"lines"`
	Pattern string `json:"pattern"`
	Runs    int    `json:"runs"`
	Source  string `json:"source"`
}

// WarningsEvidence is a warnings finding's: the problems met reading the
// inputs.
type WarningsEvidence struct {
	Warnings []string `json:"warnings"`
}

func (*FoldedEvidence) evidence()        {}
func (*FailuresEvidence) evidence()      {}
func (*ExecutorLossEvidence) evidence()  {}
func (*IdleExecutorsEvidence) evidence() {}
func (*DriverTimeEvidence) evidence()    {}
func (*CriticalPathEvidence) evidence()  {}
func (*WhatIfEvidence) evidence()        {}
func (*ErrorsEvidence) evidence()        {}
func (*LogChunksEvidence) evidence()     {}
func (*WarningsEvidence) evidence()      {}
func (*SpeculationEvidence) evidence()   {}
func (*DecommissionEvidence) evidence()  {}
