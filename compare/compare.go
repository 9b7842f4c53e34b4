// Package compare tells what changed between two runs of one Spark job:
// it matches the stages of the two runs, compares each pair's metrics,
// and splits the change in the job's duration over its likely causes
// (more data, skew, fewer executors, GC, spill, slower hosts, changed code
// or configuration), so that the parts add up to the whole change.
package compare

import (
	"math"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// Run is one run of a job: its application and, when they were recorded,
// its profiles (samples labelled with their stage, for the code cause).
type Run struct {
	App      *spark.App
	Profiles []*profile.Profile
}

// Options tune a comparison.
type Options struct {
	// PricePerCoreHour and PricePerGiBHour price a run's executors: its
	// cost is their core-hours and memory-GiB-hours at these prices. Zero
	// leaves the price out.
	PricePerCoreHour float64
	PricePerGiBHour  float64
}

// Result is what changed from the old run to the new.
type Result struct {
	Old RunSummary `json:"old"`
	New RunSummary `json:"new"`
	// DurationRatio is the new run's duration over the old's; ChangeMs the
	// difference.
	DurationRatio float64 `json:"durationRatio"`
	ChangeMs      int64   `json:"changeMs"`
	// MatchedShare is the share of the stages of the run with more of them
	// that matched a stage of the other with confidence 0.7 or more: under
	// a half, the two apps share a name but not their code.
	MatchedShare float64 `json:"matchedShare"`
	// Causes split ChangeMs: their ChangeMs add up to it and their shares
	// to 1 (a cause that made the run faster has a negative share when the
	// run got slower). Largest first.
	Causes []Cause `json:"causes"`
	// Stages lists the stages that ran in either run: the matched pairs in
	// the new run's order, then those only the old run had.
	Stages []StageChange `json:"stages"`
	// Config lists the Spark properties whose values differ.
	Config []ConfigChange `json:"config"`
}

// RunSummary identifies a run and sums it up.
type RunSummary struct {
	AppID      string `json:"appId"`
	AttemptID  string `json:"attemptId,omitempty"`
	Name       string `json:"name"`
	StartMs    int64  `json:"startMs"`
	DurationMs int64  `json:"durationMs"`
	Executors  int    `json:"executors"`
	Tasks      int    `json:"tasks"`
	// StageMs is the time at least one stage ran; the rest of the run is
	// the driver's (start-up, planning, writing results, idle).
	StageMs int64 `json:"stageMs"`
	Cost    Cost  `json:"cost"`
}

// Cost is what a run's executors held: cores and memory over their
// lifetimes, and their price when prices were given.
type Cost struct {
	CoreHours      float64 `json:"coreHours"`
	MemoryGiBHours float64 `json:"memoryGiBHours"`
	// Price is CoreHours and MemoryGiBHours at the given prices; absent
	// without prices.
	Price *float64 `json:"price,omitempty"`
}

// StageRef names a stage of one run.
type StageRef struct {
	ID int `json:"id"`
}

// StageChange is a stage of either run and, when matched, its counterpart.
type StageChange struct {
	// Old and New are the stage in each run, nil in the run that lacks it.
	Old  *StageRef `json:"old"`
	New  *StageRef `json:"new"`
	Name string    `json:"name"`
	// Confidence says how sure the match is, from 1 (the same call site,
	// operators and place in the DAG) down; 0 for an unmatched stage.
	Confidence float64 `json:"confidence"`
	// MatchedBy says what the match rests on.
	MatchedBy  string        `json:"matchedBy,omitempty"`
	OldMetrics *StageMetrics `json:"oldMetrics,omitempty"`
	NewMetrics *StageMetrics `json:"newMetrics,omitempty"`
	// DurationRatio is the new stage's duration over the old's, 0 when
	// unmatched; ChangeMs the change of its share of the run's time
	// (StageMetrics.RunShareMs).
	DurationRatio float64 `json:"durationRatio"`
	ChangeMs      int64   `json:"changeMs"`
	// Causes split ChangeMs as Result.Causes split the run's.
	Causes []Cause `json:"causes"`
}

// StageMetrics are a stage's figures in one run, its attempts together.
type StageMetrics struct {
	DurationMs int64 `json:"durationMs"`
	// RunShareMs is its part of the run's time: each moment of the run is
	// shared equally by the stages running then.
	RunShareMs int64 `json:"runShareMs"`
	Tasks      int   `json:"tasks"`
	// Slots is the mean executor cores alive while it ran.
	Slots             float64 `json:"slots"`
	ExecutorMs        int64   `json:"executorMs"` // task time, summed
	CPUMs             int64   `json:"cpuMs"`      // the tasks' CPU time, summed
	GCMs              int64   `json:"gcMs"`
	InputBytes        int64   `json:"inputBytes"`
	ShuffleReadBytes  int64   `json:"shuffleReadBytes"`
	ShuffleWriteBytes int64   `json:"shuffleWriteBytes"`
	OutputBytes       int64   `json:"outputBytes"`
	// The records of the same: a stage's data, as compression does not
	// change them.
	InputRecords        int64 `json:"inputRecords"`
	ShuffleReadRecords  int64 `json:"shuffleReadRecords"`
	ShuffleWriteRecords int64 `json:"shuffleWriteRecords"`
	OutputRecords       int64 `json:"outputRecords"`
	SpillBytes          int64 `json:"spillBytes"` // to disk
	MaxTaskMs           int64 `json:"maxTaskMs"`
	MedianTaskMs        int64 `json:"medianTaskMs"`
	// Skew is the largest task's data over the mean task's (1 is even).
	Skew float64 `json:"skew"`
}

// Cause is one reason for a change, with its part of it.
type Cause struct {
	Kind Kind `json:"kind"`
	// Share is ChangeMs over the whole change it is part of.
	Share    float64 `json:"share"`
	ChangeMs int64   `json:"changeMs"`
	// Evidence says what changed, in figures.
	Evidence string `json:"evidence"`
	// Stages are the new run's stages (the old run's for a gone stage)
	// where the cause acts, largest part first.
	Stages []int `json:"stages,omitempty"`
	// Settings are the differing Spark properties behind a config cause.
	Settings []string `json:"settings,omitempty"`
	// Functions are, for a code cause, the functions whose share of the
	// stage's CPU samples grew most.
	Functions []FunctionChange `json:"functions,omitempty"`
}

// Kind is a kind of cause.
type Kind string

// The kinds of cause.
const (
	KindInput     Kind = "input"     // more or less data read
	KindSkew      Kind = "skew"      // data less evenly spread over tasks
	KindExecutors Kind = "executors" // fewer or more executor cores
	KindGC        Kind = "gc"        // more or less time collecting garbage
	KindSpill     Kind = "spill"     // data spilled to disk
	KindHosts     Kind = "hosts"     // busier or slower hosts: tasks on the CPU for less of their time
	KindCode      Kind = "code"      // more time per byte: the code or its data changed
	KindConfig    Kind = "config"    // a changed Spark property (the partition count)
	KindTasks     Kind = "tasks"     // fewer tasks than slots, or their waves
	KindPlan      Kind = "plan"      // stages new or gone
	KindDriver    Kind = "driver"    // time with no stage running
	KindOverlap   Kind = "overlap"   // stages sharing the run's time differently
)

// FunctionChange is a function's share of a stage's CPU samples in each
// run.
type FunctionChange struct {
	Name     string  `json:"name"`
	OldShare float64 `json:"oldShare"`
	NewShare float64 `json:"newShare"`
}

// ConfigChange is a Spark property that differs between the runs; a side
// without it has "".
type ConfigChange struct {
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// Compare tells what changed from the old run to the new.
func Compare(old, new Run, opt Options) *Result {
	o, n := newRunFacts(old), newRunFacts(new)
	r := &Result{
		Old:      o.summary(opt),
		New:      n.summary(opt),
		ChangeMs: n.durationMs - o.durationMs,
		Config:   configChanges(old.App, new.App),
		Stages:   []StageChange{},
	}
	r.DurationRatio = ratio(float64(n.durationMs), float64(o.durationMs))
	var parts []part
	for _, m := range matchStages(o, n) {
		sc, ps := stageChange(m, o, n, r.Config)
		r.Stages = append(r.Stages, sc)
		parts = append(parts, ps...)
	}
	parts = append(parts, part{
		kind:     KindDriver,
		ms:       float64((n.durationMs - n.stageMs) - (o.durationMs - o.stageMs)),
		evidence: "time with no stage running: " + msChange(o.durationMs-o.stageMs, n.durationMs-n.stageMs),
	})
	r.Causes = sumParts(parts, float64(r.ChangeMs))
	matched := 0
	for _, s := range r.Stages {
		if s.Old != nil && s.New != nil && s.Confidence >= 0.7 {
			matched++
		}
	}
	if most := max(len(o.stages), len(n.stages)); most > 0 {
		r.MatchedShare = round(float64(matched)/float64(most), 2)
	}
	return r
}

// ratio is a/b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return round(a/b, 3)
}

func round(f float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(f*p) / p
}

// Summarize sums a run up: its duration, executors, tasks and cost.
func Summarize(a *spark.App, opt Options) RunSummary { return newRunFacts(Run{App: a}).summary(opt) }
