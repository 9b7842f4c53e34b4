package analysis

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// stageRule checks one thing of a stage attempt; it returns a finding
// without its stage id, which stageVerdict sets.
type stageRule func(f *stageFacts, th Thresholds) (Finding, bool)

// stageRules are the checks of a stage attempt, in the order of their
// findings among equals. Only the rules marked short apply to a stage
// shorter than Thresholds.MinStageMs, unless one of them found something.
var stageRules = []struct {
	rule  stageRule
	short bool
}{
	{stragglerRule, true},
	{skewRule, false},
	{gcRule, false},
	{shuffleWaitRule, false},
	{spillRule, false},
	{schedulerOverheadRule, false},
	{taskSizeRule, false},
	{fewTasksRule, false},
}

// stageContext is what stageVerdict knows of the app beyond the stage.
type stageContext struct {
	first  map[int64]bool    // the ids of the executors' first tasks (firstTasks)
	config map[string]string // the app's key Spark properties
	load   *taskLoad         // the executors' time and each task's neighbours
	app    *spark.App
}

// stageFacts are what the stage rules read of one stage attempt, computed
// once.
type stageFacts struct {
	stage   *spark.Stage
	tasks   []*spark.Task // its tasks that succeeded
	spanMs  int64         // from its first task's launch to its end (or its last task's)
	durs    []int64       // the tasks' durations, in the order of tasks
	median  int64         // of durs
	longest *spark.Task
	total   spark.TaskMetrics // the tasks' metrics summed
	sumMs   int64             // of durs
	// overheadMs is the tasks' scheduler delay and (de)serialisation;
	// warmUpMs that of the executors' first tasks among them.
	overheadMs, warmUpMs int64
	stageContext
}

// newStageFacts gathers the facts of stage attempt st from its tasks, or
// reports false when none of them succeeded.
func newStageFacts(st *spark.Stage, tasks []*spark.Task, sc stageContext) (*stageFacts, bool) {
	f := &stageFacts{stage: st, stageContext: sc}
	for _, t := range tasks {
		if t.Status == "SUCCESS" && t.FinishMs > 0 {
			f.tasks = append(f.tasks, t)
		}
	}
	if len(f.tasks) == 0 {
		return nil, false
	}
	f.spanMs = st.CompleteMs - st.FirstLaunchMs
	if st.CompleteMs == 0 {
		f.spanMs = 0
		for _, t := range f.tasks {
			f.spanMs = max(f.spanMs, t.FinishMs-st.FirstLaunchMs)
		}
	}
	f.durs = make([]int64, len(f.tasks))
	f.longest = f.tasks[0]
	for i, t := range f.tasks {
		f.durs[i] = t.DurationMs()
		f.total.Add(&t.Metrics)
		f.sumMs += f.durs[i]
		o := t.SchedulerDelayMs() + t.Metrics.DeserializeMs + t.Metrics.ResultSerializationMs
		f.overheadMs += o
		if sc.first[t.ID] {
			f.warmUpMs += o
		}
		if f.durs[i] > f.longest.DurationMs() {
			f.longest = t
		}
	}
	f.median = median(slices.Clone(f.durs))
	return f, true
}

// stageRef names the stage attempt in a finding's evidence.
func (f *stageFacts) stageRef() StageRef {
	return StageRef{StageAttempt: f.stage.Attempt, StageName: f.stage.Name}
}

// stageVerdict finds what is wrong with one stage attempt and keeps the
// finding with the biggest effect, listing the others in its evidence.
func stageVerdict(st *spark.Stage, tasks []*spark.Task, sc stageContext, th Thresholds) (Finding, bool) {
	f, ok := newStageFacts(st, tasks, sc)
	if !ok {
		return Finding{}, false
	}
	var found []Finding
	for _, r := range stageRules {
		if !r.short && f.spanMs < th.MinStageMs && len(found) == 0 {
			continue
		}
		if c, ok := r.rule(f, th); ok {
			c.StageID = intp(st.ID)
			found = append(found, c)
		}
	}
	if len(found) == 0 {
		return Finding{}, false
	}
	byImportance(found)
	best := found[0]
	if len(found) > 1 {
		var also []string
		for _, c := range found[1:] {
			also = append(also, string(c.Kind)+": "+c.Message)
		}
		best.Evidence.(stageEvidence).others().Also = also
	}
	return best, true
}

// stragglerRule: the longest task against the median task.
func stragglerRule(f *stageFacts, th Thresholds) (Finding, bool) {
	longest, med, st := f.longest, f.median, f.stage
	if len(f.tasks) < 3 || med <= 0 {
		return Finding{}, false
	}
	r := float64(longest.DurationMs()) / float64(med)
	if r < th.StragglerRatio || longest.DurationMs() < th.StragglerMinMs {
		return Finding{}, false
	}
	sev := Warning
	if share(longest.DurationMs()-med, f.spanMs) >= 0.5 {
		sev = Critical
	}
	msg := fmt.Sprintf("stage %d: task %d (partition %d, executor %s) ran %s, %.1fx the median task (%s)",
		st.ID, longest.ID, longest.Index, longest.ExecutorID, english.Millis(longest.DurationMs()), r, english.Millis(med))
	sugg := "look at what makes this partition different (data skew, a slow node, a costly record); the flame graph of this task shows where its time went"
	ev := &StragglerEvidence{
		TaskMs: longest.DurationMs(), MedianMs: med, Ratio: round2(r), Tasks: len(f.tasks),
		Partition: longest.Index, Host: longest.Host, StageSpanMs: f.spanMs, StageRef: f.stageRef(),
	}
	others := slices.DeleteFunc(slices.Clone(f.tasks), func(t *spark.Task) bool { return t == longest })
	if kind, phrase, s, known := stragglerCause(longest, others, f.first[longest.ID], th); known {
		msg += "; " + phrase
		sugg = s
		ev.Cause = kind
	}
	return Finding{Kind: KindStraggler, Severity: sev, TaskID: int64p(longest.ID), ExecutorID: longest.ExecutorID,
		Message: msg, Suggestion: sugg, Evidence: ev, score: float64(longest.DurationMs() - med)}, true
}

// skewRule: the task that read the most (input and shuffle) against the
// median task.
func skewRule(f *stageFacts, th Thresholds) (Finding, bool) {
	if len(f.tasks) < 3 {
		return Finding{}, false
	}
	reads := make([]int64, len(f.tasks))
	var maxRead int64
	var maxTask *spark.Task
	for i, t := range f.tasks {
		reads[i] = t.Metrics.InputBytes + t.Metrics.ShuffleReadBytes()
		if reads[i] > maxRead {
			maxRead, maxTask = reads[i], t
		}
	}
	m, med := median(reads), f.median
	if maxRead < th.SkewMinBytes || m <= 0 || float64(maxRead)/float64(m) < th.SkewRatio {
		return Finding{}, false
	}
	r := float64(maxRead) / float64(m)
	msg := fmt.Sprintf("stage %d: task %d read %s, %.1fx the median task (%s)", f.stage.ID, maxTask.ID, english.Bytes(maxRead), r, english.Bytes(m))
	sev, sugg := Warning, skewSuggestion
	// Skew that cost no time is worth knowing, not acting on.
	if d := maxTask.DurationMs(); med > 0 && float64(d) < 1.5*float64(med) {
		msg += fmt.Sprintf(", yet ran about as long as the others (%s against a median of %s)", english.Millis(d), english.Millis(med))
		sev, sugg = Info, "no time lost to it in this run; it may grow with the data"
	} else if med > 0 {
		msg += fmt.Sprintf(", and ran %s, %.1fx the median task (%s)", english.Millis(d), float64(d)/float64(med), english.Millis(med))
	}
	return Finding{Kind: KindSkew, Severity: sev, Message: msg, Suggestion: sugg, score: float64(maxTask.DurationMs() - med),
		Evidence: &SkewEvidence{MaxBytes: maxRead, MedianBytes: m, Ratio: round2(r), TaskID: maxTask.ID, TaskMs: maxTask.DurationMs(), MedianMs: med, StageRef: f.stageRef()}}, true
}

// gcRule: the share of the executors' time in GC while the stage's tasks
// ran (taskLoad.executorGC), not of the sum of the tasks' times: a task's
// GC time is its JVM's, which the tasks running beside it count too. A
// stage whose GC is a small part of the executors' time in the app, such
// as an app's first stage warming the JVMs up, is only info.
func gcRule(f *stageFacts, th Thresholds) (Finding, bool) {
	total := &f.total
	if total.GCTimeMs < th.GCMinMs || f.load == nil {
		return Finding{}, false
	}
	gcMs, execMs := f.load.executorGC(f.tasks)
	g := share(gcMs, execMs)
	if g < th.GCShare || gcMs < th.GCMinMs {
		return Finding{}, false
	}
	sev := Warning
	if g >= 2*th.GCShare {
		sev = Critical
	}
	app := share(gcMs, f.load.busyMs)
	msg := fmt.Sprintf("stage %d: executors spent %.0f%% of their time in GC while its tasks ran (%s of %s; the tasks' own GC times add up to %s, each counting every collection of its JVM)",
		f.stage.ID, 100*g, english.Millis(gcMs), english.Millis(execMs), english.Millis(total.GCTimeMs))
	sugg := "give executors more memory or fewer cores each, cache less, or use more partitions so each task holds less"
	if app < th.GCAppShare {
		sev = Info
		msg += fmt.Sprintf(", %.1f%% of the executors' busy time in the app", 100*app)
		sugg = "little of the app's executor time: worth acting on only if the stage grows (a JVM warming up, loading classes and growing its heap, collects more at first)"
	}
	return Finding{Kind: KindGC, Severity: sev, Message: msg, Suggestion: sugg,
		Evidence: &GCEvidence{GCMs: total.GCTimeMs, RunMs: total.RunTimeMs, ExecutorGCMs: gcMs, ExecutorMs: execMs,
			Share: round2(g), AppShare: round2(app), StageRef: f.stageRef()},
		score: g * float64(f.spanMs)}, true
}

// shuffleWaitRule: the share of the tasks' run time spent waiting for
// shuffle data.
func shuffleWaitRule(f *stageFacts, th Thresholds) (Finding, bool) {
	total := &f.total
	if total.RunTimeMs <= 0 {
		return Finding{}, false
	}
	w := share(total.ShuffleFetchWaitMs, total.RunTimeMs)
	if w < th.ShuffleWaitShare {
		return Finding{}, false
	}
	return Finding{Kind: KindShuffleWait, Severity: Warning,
		Message:    fmt.Sprintf("stage %d: tasks waited %.0f%% of their run time for shuffle data (%s)", f.stage.ID, 100*w, english.Millis(total.ShuffleFetchWaitMs)),
		Suggestion: "check for a slow or lost node, network limits, or too many small shuffle blocks (fewer, larger partitions; the external shuffle service)",
		Evidence:   &ShuffleWaitEvidence{FetchWaitMs: total.ShuffleFetchWaitMs, RunMs: total.RunTimeMs, Share: round2(w), StageRef: f.stageRef()},
		score:      w * float64(f.spanMs)}, true
}

// spillRule: any spill to disk.
func spillRule(f *stageFacts, _ Thresholds) (Finding, bool) {
	total := &f.total
	if total.DiskSpilled <= 0 {
		return Finding{}, false
	}
	return Finding{Kind: KindSpill, Severity: Warning,
		Message:    fmt.Sprintf("stage %d: spilled %s to disk (%s in memory)", f.stage.ID, english.Bytes(total.DiskSpilled), english.Bytes(total.MemorySpilled)),
		Suggestion: "use more partitions or more executor memory so aggregations and sorts fit in memory",
		Evidence:   &SpillEvidence{DiskBytes: total.DiskSpilled, MemoryBytes: total.MemorySpilled, StageRef: f.stageRef()},
		score:      0.1 * float64(f.spanMs)}, true
}

// schedulerOverheadRule: the share of task time in scheduling and
// (de)serialisation; when mostly the executors' first tasks', their
// warm-up.
func schedulerOverheadRule(f *stageFacts, th Thresholds) (Finding, bool) {
	// Tasks read from logs carry no metrics: their whole time would read
	// as overhead.
	metricsKnown := f.total.RunTimeMs+f.total.DeserializeMs+f.total.ResultSerializationMs > 0
	if len(f.tasks) < 10 || f.sumMs <= 0 || !metricsKnown {
		return Finding{}, false
	}
	o := share(f.overheadMs, f.sumMs)
	if o < th.OverheadShare {
		return Finding{}, false
	}
	ev := &SchedulerOverheadEvidence{OverheadMs: f.overheadMs, TaskMs: f.sumMs, Share: round2(o), FirstTasksMs: f.warmUpMs, StageRef: f.stageRef()}
	if w := share(f.warmUpMs, f.overheadMs); w >= 0.5 {
		// A one-time cost of new executors, not of the tasks' size.
		return Finding{Kind: KindSchedulerOverhead, Severity: Info,
			Message: fmt.Sprintf("stage %d: %.0f%% of task time is scheduling and (de)serialisation, %.0f%% of it in the executors' first tasks (loading classes and broadcasts)",
				f.stage.ID, 100*o, 100*w),
			Suggestion: "a one-time warm-up of each executor: it weighs on short apps and on executors that dynamic allocation keeps replacing; keep executors longer (spark.dynamicAllocation.executorIdleTimeout)",
			Evidence:   ev, score: o * float64(f.spanMs) * (1 - w)}, true
	}
	return Finding{Kind: KindSchedulerOverhead, Severity: Warning,
		Message:    fmt.Sprintf("stage %d: %.0f%% of task time is scheduling and (de)serialisation, not work", f.stage.ID, 100*o),
		Suggestion: "use fewer, larger tasks; broadcast large closures instead of shipping them with each task",
		Evidence:   ev, score: o * float64(f.spanMs)}, true
}

// taskSizeRule: many tasks of a short median; for a shuffle's reduce side
// of as many tasks as spark.sql.shuffle.partitions, that setting.
func taskSizeRule(f *stageFacts, th Thresholds) (Finding, bool) {
	if len(f.tasks) < th.TinyTaskCount || f.median >= th.TinyTaskMs {
		return Finding{}, false
	}
	sugg := "lower spark.sql.shuffle.partitions or coalesce; aim for tasks of 100 ms or more"
	// A shuffle's reduce side has as many tasks as shuffle partitions.
	partitions, set := f.config["spark.sql.shuffle.partitions"]
	if !set {
		partitions = "200"
	}
	if f.total.ShuffleReadBytes() > 0 && strconv.Itoa(len(f.tasks)) == partitions {
		what := "spark.sql.shuffle.partitions"
		if !set {
			what += "'s default"
		}
		sugg = fmt.Sprintf("its %s tasks are %s: lower it to fit the data (aim for tasks of 100 ms or more), or let AQE coalesce small partitions (spark.sql.adaptive.enabled)", partitions, what)
	}
	return Finding{Kind: KindTaskSize, Severity: Warning,
		Message:    fmt.Sprintf("stage %d: %d tasks with a median of %s: too many tiny tasks", f.stage.ID, len(f.tasks), english.Millis(f.median)),
		Suggestion: sugg,
		Evidence:   &TaskSizeEvidence{Tasks: len(f.tasks), MedianMs: f.median, StageRef: f.stageRef()},
		score:      0.2 * float64(f.spanMs)}, true
}

// firstTasks returns the ids of each executor's first tasks: its first
// task and those launched beside it before it ended (one per core), which
// load the classes and broadcasts the executor's later tasks find loaded.
func firstTasks(tasks []*spark.Task) map[int64]bool {
	first := map[string]*spark.Task{}
	for _, t := range tasks {
		if f := first[t.ExecutorID]; f == nil || t.LaunchMs < f.LaunchMs {
			first[t.ExecutorID] = t
		}
	}
	out := map[int64]bool{}
	for _, t := range tasks {
		if f := first[t.ExecutorID]; t == f || (f.FinishMs > 0 && t.LaunchMs < f.FinishMs) {
			out[t.ID] = true
		}
	}
	return out
}
