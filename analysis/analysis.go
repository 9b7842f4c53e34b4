// Package analysis explains a slow or expensive Spark application: from the
// app model (built from an event log or from container logs) it derives a
// short list of findings, each with its evidence and a suggestion, one
// verdict per stage rather than a wall of alerts.
//
// Each finding is a rule: a small function of the facts of a stage
// attempt (stageRules) or of the app (appRules) and the thresholds.
package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/containerlog"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// Kind names what a finding is about.
type Kind string

// Kinds of findings.
const (
	KindStraggler           Kind = "straggler"
	KindSkew                Kind = "skew"
	KindGC                  Kind = "gc"
	KindSpill               Kind = "spill"
	KindShuffleWait         Kind = "shuffle-wait"
	KindSchedulerOverhead   Kind = "scheduler-overhead"
	KindTaskSize            Kind = "task-size"
	KindIdleExecutors       Kind = "idle-executors"
	KindDriverTime          Kind = "driver-time"
	KindCriticalPath        Kind = "critical-path"
	KindFailures            Kind = "failures"
	KindExecutorLoss        Kind = "executor-loss"
	KindWhatIf              Kind = "what-if"
	KindTooFewTasks         Kind = "too-few-tasks"
	KindSpeculation         Kind = "speculation"
	KindDecommission        Kind = "decommission"
	KindErrors              Kind = "errors"
	KindLogChunks           Kind = "log-chunks"
	KindWarnings            Kind = "warnings"
	KindRegression          Kind = "regression"
	KindPythonUDF           Kind = "python-udf"
	KindPythonSerialization Kind = "python-serialization"
	KindPythonStartup       Kind = "python-startup"
)

// Severity says how urgent a finding is.
type Severity string

// Severities, from the least to the most urgent.
const (
	Info     Severity = "info"
	Warning  Severity = "warning"
	Critical Severity = "critical"
)

// rank orders severities: the most urgent highest.
func (s Severity) rank() int {
	switch s {
	case Critical:
		return 2
	case Warning:
		return 1
	}
	return 0
}

// Finding is one thing worth knowing about the application.
type Finding struct {
	Kind       Kind     `json:"kind"`
	Severity   Severity `json:"severity"`
	StageID    *int     `json:"stageId,omitempty"`
	TaskID     *int64   `json:"taskId,omitempty"`
	ExecutorID string   `json:"executorId,omitempty"`
	Message    string   `json:"message"`
	Suggestion string   `json:"suggestion,omitempty"`
	Evidence   Evidence `json:"evidence"`
	score      float64  // orders findings of one severity: the biggest effect first
}

// Also returns the weaker findings of the stage a stage finding is about,
// "kind: message" each, or nil.
func (f Finding) Also() []string {
	if ev, ok := f.Evidence.(stageEvidence); ok {
		return ev.others().Also
	}
	return nil
}

// Thresholds decide when a measurement becomes a finding. The zero value is
// not useful; start from DefaultThresholds.
type Thresholds struct {
	// StragglerRatio: a task is a straggler when it runs this many times
	// longer than its stage's median task, and at least StragglerMinMs.
	StragglerRatio float64
	StragglerMinMs int64
	// SkewRatio: a stage is skewed when its largest task reads this many
	// times more than the median task, and at least SkewMinBytes.
	SkewRatio    float64
	SkewMinBytes int64
	// GCShare of the executors' time spent in GC while a stage's tasks ran
	// (warning; twice it is critical), when that GC comes to at least
	// GCMinMs: a share of a few milliseconds is nothing to act on. A
	// stage whose GC is under GCAppShare of the executors' busy time in
	// the whole app (a warm-up) is only info. From JVM records (Uber,
	// JFR, the agent), an executor collecting its young generation
	// GCRate times a second or more churns allocations.
	GCShare    float64
	GCMinMs    int64
	GCAppShare float64
	GCRate     float64
	// ShuffleWaitShare of task run time spent waiting for shuffle data.
	ShuffleWaitShare float64
	// OverheadShare of task time spent in scheduling and (de)serialisation.
	OverheadShare float64
	// TinyTaskMs: the median task of a stage with at least TinyTaskCount
	// tasks below this is too small.
	TinyTaskMs    int64
	TinyTaskCount int
	// IdleShare of allocated executor core time with no task running, when
	// that comes to at least IdleMinCoreMs (core-milliseconds).
	IdleShare     float64
	IdleMinCoreMs int64
	// DriverShare of the application's time with no task running, when
	// that comes to at least DriverMinMs: seconds of a short app's start
	// and stop are nothing to act on.
	DriverShare float64
	DriverMinMs int64
	// MinStageMs: stages shorter than this get no verdict but a
	// straggler.
	MinStageMs int64
	// FewTasksMinMs, FewTasksMinBytes: a stage with fewer tasks than the
	// slots free while it ran has too few partitions when its median task
	// ran at least FewTasksMinMs and read at least FewTasksMinBytes.
	FewTasksMinMs    int64
	FewTasksMinBytes int64
	// SpeculationWasteShare of the app's task time spent on task attempts
	// that lost to a speculative copy (or whose copy lost) makes the
	// speculation finding a warning.
	SpeculationWasteShare float64
	// PatternShare of a stage's or the app's samples a code pattern must
	// cost, in at least PatternMinSamples samples, to be recommended on.
	PatternShare      float64
	PatternMinSamples int64
	// RegressionRatio: a run of a job this many times longer than the
	// job's previous run regressed, when the change comes to at least
	// RegressionMinMs.
	RegressionRatio float64
	RegressionMinMs int64
	// PythonShare of a stage's task time its Python UDFs' workers spent
	// executing Python, when that comes to at least PythonMinMs.
	PythonShare float64
	PythonMinMs int64
}

// DefaultThresholds are the thresholds sparkprof uses unless told otherwise.
var DefaultThresholds = Thresholds{
	StragglerRatio:   3,
	StragglerMinMs:   5_000,
	SkewRatio:        4,
	SkewMinBytes:     64 << 20,
	GCShare:          0.10,
	GCMinMs:          1_000,
	GCAppShare:       0.01,
	GCRate:           10,
	ShuffleWaitShare: 0.20,
	OverheadShare:    0.30,
	TinyTaskMs:       100,
	TinyTaskCount:    200,
	IdleShare:        0.50,
	IdleMinCoreMs:    5 * 60_000,
	DriverShare:      0.25,
	DriverMinMs:      30_000,
	MinStageMs:       1_000,

	FewTasksMinMs:         60_000,
	FewTasksMinBytes:      512 << 20,
	SpeculationWasteShare: 0.10,
	PatternShare:          0.05,
	PatternMinSamples:     20,
	RegressionRatio:       1.25,
	RegressionMinMs:       60_000,
	PythonShare:           0.30,
	PythonMinMs:           60_000,
}

// Input is what an analysis looks at.
type Input struct {
	App *spark.App
	// Report lists problems of the event log, if one was read.
	Report *spark.Report
	// Logs are container logs, if any were read.
	Logs []*containerlog.Log
	// Warnings are problems met while reading the inputs.
	Warnings []string
	// Profiles are profiler records of the app, if any were read: a
	// straggler's finding says where its samples went.
	Profiles []*profile.Profile
}

// Analyze returns the findings for in, most severe first.
func Analyze(in Input, th Thresholds) []Finding {
	app := in.App
	facts := &appFacts{Input: in, byStage: map[[2]int][]*spark.Task{}}
	for _, t := range app.Tasks {
		k := [2]int{t.StageID, t.StageAttempt}
		facts.byStage[k] = append(facts.byStage[k], t)
	}
	// The app rules only read; the what-if among them re-schedules every
	// task for several executor counts, the costliest rule on a big log,
	// so they run beside the stage rules.
	appFound := make(chan []Finding, 1)
	go func() { appFound <- appFindings(facts, th) }()
	var out []Finding
	sc := stageContext{first: firstTasks(app.Tasks), config: app.Config, load: newTaskLoad(app.Tasks), app: app}
	for _, st := range app.Stages {
		if f, ok := stageVerdict(st, facts.byStage[[2]int{st.ID, st.Attempt}], sc, th); ok {
			if t := stragglerTask(f, facts.byStage[[2]int{st.ID, st.Attempt}]); t != nil && len(in.Profiles) > 0 {
				explainStraggler(&f, in.Profiles, attribution.TaskSamples(app.ID, t))
			}
			out = append(out, f)
		}
	}
	out = append(out, <-appFound...)
	byImportance(out)
	return foldStages(out)
}

// stragglerTask returns the task of straggler finding f among its stage's
// tasks, nil for another finding.
func stragglerTask(f Finding, tasks []*spark.Task) *spark.Task {
	if f.Kind != KindStraggler || f.TaskID == nil {
		return nil
	}
	for _, t := range tasks {
		if t.ID == *f.TaskID {
			return t
		}
	}
	return nil
}

// byImportance sorts findings most severe first, then by their effect,
// keeping the order of equals.
func byImportance(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if a, b := fs[i].Severity.rank(), fs[j].Severity.rank(); a != b {
			return a > b
		}
		return fs[i].score > fs[j].score
	})
}

// maxStageFindings is how many findings of one kind and severity about
// single stages a report lists before it folds the others into one.
const maxStageFindings = 3

// foldStages keeps, of each kind and severity, the first maxStageFindings
// findings about single stages, and folds the others into one finding in
// the place of the first it folds, which names their stages (evidence
// FoldedEvidence): a report of a hundred stages lists a few GC rows, not a
// hundred. fs is in order of importance.
func foldStages(fs []Finding) []Finding {
	type key struct {
		kind     Kind
		severity Severity
	}
	seen := map[key]int{}
	folded := map[key]int{} // where in out a kind's folded finding is
	var out []Finding
	for _, f := range fs {
		k := key{f.Kind, f.Severity}
		if f.StageID == nil || seen[k] < maxStageFindings {
			if f.StageID != nil {
				seen[k]++
			}
			out = append(out, f)
			continue
		}
		i, ok := folded[k]
		if !ok {
			i = len(out)
			folded[k] = i
			out = append(out, Finding{Kind: f.Kind, Severity: f.Severity, Suggestion: f.Suggestion,
				Evidence: &FoldedEvidence{Messages: []string{}, Stages: []int{}}, score: f.score})
		}
		ev := out[i].Evidence.(*FoldedEvidence)
		ev.Stages = append(ev.Stages, *f.StageID)
		ev.Messages = append(ev.Messages, f.Message)
	}
	for _, i := range folded {
		stages := out[i].Evidence.(*FoldedEvidence).Stages
		names := make([]string, len(stages))
		for j, id := range stages {
			names[j] = strconv.Itoa(id)
		}
		out[i].Message = fmt.Sprintf("%d more %s alike: %s", len(stages), english.Nouns(len(stages), "stage"), strings.Join(names, ", "))
	}
	return out
}

func intp(v int) *int       { return &v }
func int64p(v int64) *int64 { return &v }

// median returns the median of xs (sorted in place).
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func share(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// firstN returns the first n of xs, or all when there are fewer.
func firstN[T any](xs []T, n int) []T { return xs[:min(n, len(xs))] }
