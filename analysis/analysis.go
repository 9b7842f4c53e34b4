// Package analysis explains a slow or expensive Spark application: from the
// app model (built from an event log or from container logs) it derives a
// short list of findings, each with its evidence and a suggestion, one
// verdict per stage rather than a wall of alerts.
package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// Kinds of findings.
const (
	KindStraggler         = "straggler"
	KindSkew              = "skew"
	KindGC                = "gc"
	KindSpill             = "spill"
	KindShuffleWait       = "shuffle-wait"
	KindSchedulerOverhead = "scheduler-overhead"
	KindTaskSize          = "task-size"
	KindIdleExecutors     = "idle-executors"
	KindDriverTime        = "driver-time"
	KindCriticalPath      = "critical-path"
	KindFailures          = "failures"
	KindExecutorLoss      = "executor-loss"
	KindWhatIf            = "what-if"
	KindErrors            = "errors"
	KindLogChunks         = "logChunks"
	KindWarnings          = "warnings"
)

// Severities, from the least to the most urgent.
const (
	Info     = "info"
	Warning  = "warning"
	Critical = "critical"
)

func severityRank(s string) int {
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
	Kind       string         `json:"kind"`
	Severity   string         `json:"severity"`
	StageID    *int           `json:"stageId,omitempty"`
	TaskID     *int64         `json:"taskId,omitempty"`
	ExecutorID string         `json:"executorId,omitempty"`
	Message    string         `json:"message"`
	Suggestion string         `json:"suggestion,omitempty"`
	Evidence   map[string]any `json:"evidence"`
	score      float64        // orders findings of one severity: the biggest effect first
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
	// GCShare of task run time spent in GC (warning; twice it is critical),
	// in a stage whose tasks spent at least GCMinMs in GC in all: a share of
	// a few milliseconds is nothing to act on.
	GCShare float64
	GCMinMs int64
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
	// MinStageMs: stages shorter than this get no performance verdict.
	MinStageMs int64
}

// DefaultThresholds are the thresholds sparkprof uses unless told otherwise.
var DefaultThresholds = Thresholds{
	StragglerRatio:   3,
	StragglerMinMs:   5_000,
	SkewRatio:        4,
	SkewMinBytes:     64 << 20,
	GCShare:          0.10,
	GCMinMs:          1_000,
	ShuffleWaitShare: 0.20,
	OverheadShare:    0.30,
	TinyTaskMs:       100,
	TinyTaskCount:    200,
	IdleShare:        0.50,
	IdleMinCoreMs:    5 * 60_000,
	DriverShare:      0.25,
	DriverMinMs:      30_000,
	MinStageMs:       1_000,
}

// Input is what an analysis looks at.
type Input struct {
	App *spark.App
	// Report lists problems of the event log, if one was read.
	Report *spark.Report
	// Logs are container logs, if any were read.
	Logs []*applog.Log
	// Warnings are problems met while reading the inputs.
	Warnings []string
	// Profiles are profiler records of the app, if any were read: a
	// straggler's finding says where its samples went.
	Profiles []*profile.Profile
}

// Analyze returns the findings for in, most severe first.
func Analyze(in Input, th Thresholds) []Finding {
	app := in.App
	var out []Finding
	byStage := map[[2]int][]*spark.Task{}
	for _, t := range app.Tasks {
		k := [2]int{t.StageID, t.StageAttempt}
		byStage[k] = append(byStage[k], t)
	}
	// The what-if re-schedules every task for several executor counts,
	// the costliest finding on a big log; it only reads, so it runs beside
	// the others.
	type result struct {
		f  Finding
		ok bool
	}
	what := make(chan result, 1)
	go func() {
		f, ok := whatIf(app, byStage)
		what <- result{f, ok}
	}()
	sc := stageContext{first: firstTasks(app.Tasks), config: app.Config}
	for _, st := range app.Stages {
		if f, ok := stageVerdict(st, byStage[[2]int{st.ID, st.Attempt}], sc, th); ok {
			if f.Kind == KindStraggler && f.TaskID != nil && len(in.Profiles) > 0 {
				explainStraggler(&f, in.Profiles, taskSamples(app.ID, *f.TaskID))
			}
			out = append(out, f)
		}
	}
	out = append(out, failures(app)...)
	out = append(out, executorLoss(app, in.Logs)...)
	if f, ok := idleExecutors(app, th); ok {
		out = append(out, f)
	}
	if f, ok := driverTime(app, th); ok {
		out = append(out, f)
	}
	if f, ok := criticalPath(app); ok {
		out = append(out, f)
	}
	if r := <-what; r.ok {
		out = append(out, r.f)
	}
	out = append(out, logFindings(in.Logs)...)
	if f, ok := warnings(in); ok {
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := severityRank(out[i].Severity), severityRank(out[j].Severity); a != b {
			return a > b
		}
		return out[i].score > out[j].score
	})
	return foldStages(out)
}

// maxStageFindings is how many findings of one kind and severity about
// single stages a report lists before it folds the others into one.
const maxStageFindings = 3

// foldStages keeps, of each kind and severity, the first maxStageFindings
// findings about single stages, and folds the others into one finding in
// the place of the first it folds, which names their stages (evidence
// "stages", and their own "messages"): a report of a hundred stages lists
// a few GC rows, not a hundred. fs is in order of importance.
func foldStages(fs []Finding) []Finding {
	type key struct{ kind, severity string }
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
				Evidence: map[string]any{"stages": []int{}, "messages": []string{}}, score: f.score})
		}
		ev := out[i].Evidence
		ev["stages"] = append(ev["stages"].([]int), *f.StageID)
		ev["messages"] = append(ev["messages"].([]string), f.Message)
	}
	for _, i := range folded {
		stages := out[i].Evidence["stages"].([]int)
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

// stageContext is what stageVerdict knows of the app beyond the stage.
type stageContext struct {
	first  map[int64]bool    // the ids of the executors' first tasks (firstTasks)
	config map[string]string // the app's key Spark properties
}

// stageVerdict finds what is wrong with one stage attempt and keeps the
// finding with the biggest effect, listing the others in its evidence.
func stageVerdict(st *spark.Stage, tasks []*spark.Task, sc stageContext, th Thresholds) (Finding, bool) {
	var ok []*spark.Task
	for _, t := range tasks {
		if t.Status == "SUCCESS" && t.FinishMs > 0 {
			ok = append(ok, t)
		}
	}
	if len(ok) == 0 {
		return Finding{}, false
	}
	span := st.CompleteMs - st.FirstLaunchMs
	if st.CompleteMs == 0 {
		span = 0
		for _, t := range ok {
			span = max(span, t.FinishMs-st.FirstLaunchMs)
		}
	}
	var cands []Finding
	stage := func(kind, sev, msg, sugg string, score float64, ev map[string]any) {
		ev["stageName"] = st.Name
		ev["stageAttempt"] = st.Attempt
		cands = append(cands, Finding{Kind: kind, Severity: sev, StageID: intp(st.ID), Message: msg, Suggestion: sugg, Evidence: ev, score: score})
	}
	durs := make([]int64, len(ok))
	var total spark.TaskMetrics
	var sumDur, overhead, warmUp int64
	longest := ok[0]
	for i, t := range ok {
		durs[i] = t.DurationMs()
		total.Add(&t.Metrics)
		sumDur += durs[i]
		o := t.SchedulerDelayMs() + t.Metrics.DeserializeMs + t.Metrics.ResultSerializationMs
		overhead += o
		if sc.first[t.ID] {
			warmUp += o
		}
		if durs[i] > longest.DurationMs() {
			longest = t
		}
	}
	med := median(slices.Clone(durs))

	// Straggler: the longest task against the median of the others.
	if len(ok) >= 3 && med > 0 {
		r := float64(longest.DurationMs()) / float64(med)
		if r >= th.StragglerRatio && longest.DurationMs() >= th.StragglerMinMs {
			sev := Warning
			if share(longest.DurationMs()-med, span) >= 0.5 {
				sev = Critical
			}
			msg := fmt.Sprintf("stage %d: task %d (partition %d, executor %s) ran %s, %.1fx the median task (%s)",
				st.ID, longest.ID, longest.Index, longest.ExecutorID, english.Millis(longest.DurationMs()), r, english.Millis(med))
			sugg := "look at what makes this partition different (data skew, a slow node, a costly record); the flame graph of this task shows where its time went"
			ev := map[string]any{
				"taskMs": longest.DurationMs(), "medianMs": med, "ratio": round2(r), "tasks": len(ok),
				"partition": longest.Index, "host": longest.Host, "stageSpanMs": span,
			}
			others := slices.DeleteFunc(slices.Clone(ok), func(t *spark.Task) bool { return t == longest })
			if kind, phrase, s, known := stragglerCause(longest, others, sc.first[longest.ID], th); known {
				msg += "; " + phrase
				sugg = s
				ev["cause"] = kind
			}
			stage(KindStraggler, sev, msg, sugg, float64(longest.DurationMs()-med), ev)
			cands[len(cands)-1].TaskID = int64p(longest.ID)
			cands[len(cands)-1].ExecutorID = longest.ExecutorID
		}
	}
	if span < th.MinStageMs && len(cands) == 0 {
		return Finding{}, false
	}
	// Skew: input plus shuffle read per task.
	if len(ok) >= 3 {
		reads := make([]int64, len(ok))
		var maxRead int64
		var maxTask *spark.Task
		for i, t := range ok {
			reads[i] = t.Metrics.InputBytes + t.Metrics.ShuffleReadBytes()
			if reads[i] > maxRead {
				maxRead, maxTask = reads[i], t
			}
		}
		m := median(reads)
		if maxRead >= th.SkewMinBytes && m > 0 && float64(maxRead)/float64(m) >= th.SkewRatio {
			r := float64(maxRead) / float64(m)
			msg := fmt.Sprintf("stage %d: task %d read %s, %.1fx the median task (%s)", st.ID, maxTask.ID, english.Bytes(maxRead), r, english.Bytes(m))
			sev, sugg := Warning, skewSuggestion
			// Skew that cost no time is worth knowing, not acting on.
			if d := maxTask.DurationMs(); med > 0 && float64(d) < 1.5*float64(med) {
				msg += fmt.Sprintf(", yet ran about as long as the others (%s against a median of %s)", english.Millis(d), english.Millis(med))
				sev, sugg = Info, "no time lost to it in this run; it may grow with the data"
			} else if med > 0 {
				msg += fmt.Sprintf(", and ran %s, %.1fx the median task (%s)", english.Millis(d), float64(d)/float64(med), english.Millis(med))
			}
			stage(KindSkew, sev, msg, sugg,
				float64(maxTask.DurationMs()-med), map[string]any{"maxBytes": maxRead, "medianBytes": m, "ratio": round2(r), "taskId": maxTask.ID, "taskMs": maxTask.DurationMs(), "medianMs": med})
		}
	}
	if total.RunTimeMs > 0 {
		if g := share(total.GCTimeMs, total.RunTimeMs); g >= th.GCShare && total.GCTimeMs >= th.GCMinMs {
			sev := Warning
			if g >= 2*th.GCShare {
				sev = Critical
			}
			stage(KindGC, sev, fmt.Sprintf("stage %d: %.0f%% of task time in GC (%s of %s)", st.ID, 100*g, english.Millis(total.GCTimeMs), english.Millis(total.RunTimeMs)),
				"give executors more memory or fewer cores each, cache less, or use more partitions so each task holds less",
				g*float64(span), map[string]any{"gcMs": total.GCTimeMs, "runMs": total.RunTimeMs, "share": round2(g)})
		}
		if w := share(total.ShuffleFetchWaitMs, total.RunTimeMs); w >= th.ShuffleWaitShare {
			stage(KindShuffleWait, Warning, fmt.Sprintf("stage %d: tasks waited %.0f%% of their run time for shuffle data (%s)", st.ID, 100*w, english.Millis(total.ShuffleFetchWaitMs)),
				"check for a slow or lost node, network limits, or too many small shuffle blocks (fewer, larger partitions; the external shuffle service)",
				w*float64(span), map[string]any{"fetchWaitMs": total.ShuffleFetchWaitMs, "runMs": total.RunTimeMs, "share": round2(w)})
		}
	}
	if total.DiskSpilled > 0 {
		stage(KindSpill, Warning, fmt.Sprintf("stage %d: spilled %s to disk (%s in memory)", st.ID, english.Bytes(total.DiskSpilled), english.Bytes(total.MemorySpilled)),
			"use more partitions or more executor memory so aggregations and sorts fit in memory",
			0.1*float64(span), map[string]any{"diskBytes": total.DiskSpilled, "memoryBytes": total.MemorySpilled})
	}
	// Tasks read from logs carry no metrics: their whole time would read as
	// overhead.
	metricsKnown := total.RunTimeMs+total.DeserializeMs+total.ResultSerializationMs > 0
	if len(ok) >= 10 && sumDur > 0 && metricsKnown {
		if o := share(overhead, sumDur); o >= th.OverheadShare {
			ev := map[string]any{"overheadMs": overhead, "taskMs": sumDur, "share": round2(o), "firstTasksMs": warmUp}
			if w := share(warmUp, overhead); w >= 0.5 {
				// A one-time cost of new executors, not of the tasks' size.
				stage(KindSchedulerOverhead, Info, fmt.Sprintf("stage %d: %.0f%% of task time is scheduling and (de)serialisation, %.0f%% of it in the executors' first tasks (loading classes and broadcasts)",
					st.ID, 100*o, 100*w),
					"a one-time warm-up of each executor: it weighs on short apps and on executors that dynamic allocation keeps replacing; keep executors longer (spark.dynamicAllocation.executorIdleTimeout)",
					o*float64(span)*(1-w), ev)
			} else {
				stage(KindSchedulerOverhead, Warning, fmt.Sprintf("stage %d: %.0f%% of task time is scheduling and (de)serialisation, not work", st.ID, 100*o),
					"use fewer, larger tasks; broadcast large closures instead of shipping them with each task",
					o*float64(span), ev)
			}
		}
	}
	if len(ok) >= th.TinyTaskCount && med < th.TinyTaskMs {
		sugg := "lower spark.sql.shuffle.partitions or coalesce; aim for tasks of 100 ms or more"
		// A shuffle's reduce side has as many tasks as shuffle partitions.
		partitions, set := sc.config["spark.sql.shuffle.partitions"]
		if !set {
			partitions = "200"
		}
		if total.ShuffleReadBytes() > 0 && strconv.Itoa(len(ok)) == partitions {
			what := "spark.sql.shuffle.partitions"
			if !set {
				what += "'s default"
			}
			sugg = fmt.Sprintf("its %s tasks are %s: lower it to fit the data (aim for tasks of 100 ms or more), or let AQE coalesce small partitions (spark.sql.adaptive.enabled)", partitions, what)
		}
		stage(KindTaskSize, Warning, fmt.Sprintf("stage %d: %d tasks with a median of %s: too many tiny tasks", st.ID, len(ok), english.Millis(med)),
			sugg, 0.2*float64(span), map[string]any{"tasks": len(ok), "medianMs": med})
	}
	if len(cands) == 0 {
		return Finding{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if a, b := severityRank(cands[i].Severity), severityRank(cands[j].Severity); a != b {
			return a > b
		}
		return cands[i].score > cands[j].score
	})
	best := cands[0]
	if len(cands) > 1 {
		var also []string
		for _, c := range cands[1:] {
			also = append(also, c.Kind+": "+c.Message)
		}
		best.Evidence["also"] = also
	}
	return best, true
}

// failures groups failed tasks by reason and top frame, and lists failed
// stages and jobs.
func failures(app *spark.App) []Finding {
	type group struct {
		reason, detail string
		tasks          []int64
		stages         map[int]bool
		executors      map[string]bool
	}
	groups := map[string]*group{}
	for _, t := range app.Tasks {
		if t.Status == "SUCCESS" || t.Status == "RUNNING" || t.FinishMs == 0 {
			continue
		}
		detail := failureDetail(t)
		k := t.Reason + "\x00" + detail
		g := groups[k]
		if g == nil {
			g = &group{reason: t.Reason, detail: detail, stages: map[int]bool{}, executors: map[string]bool{}}
			groups[k] = g
		}
		g.tasks = append(g.tasks, t.ID)
		g.stages[t.StageID] = true
		g.executors[t.ExecutorID] = true
	}
	if len(groups) == 0 {
		return nil
	}
	list := make([]*group, 0, len(groups))
	for _, g := range groups {
		list = append(list, g)
	}
	sort.Slice(list, func(i, j int) bool {
		if len(list[i].tasks) != len(list[j].tasks) {
			return len(list[i].tasks) > len(list[j].tasks)
		}
		return list[i].reason < list[j].reason
	})
	var rows []map[string]any
	var parts []string
	total := 0
	for _, g := range list {
		total += len(g.tasks)
		rows = append(rows, map[string]any{
			"reason": g.reason, "detail": g.detail, "count": len(g.tasks), "taskIds": firstN(g.tasks, 10),
			"stages": sortedKeys(g.stages), "executors": sortedStrings(g.executors),
		})
		parts = append(parts, fmt.Sprintf("%d %s", len(g.tasks), g.reason))
	}
	var failedStages, failedJobs []int
	for _, st := range app.Stages {
		if st.Status == "FAILED" {
			failedStages = append(failedStages, st.ID)
		}
	}
	for _, j := range app.Jobs {
		if j.Result == "JobFailed" {
			failedJobs = append(failedJobs, j.ID)
		}
	}
	sev := Warning
	if len(failedJobs) > 0 {
		sev = Critical
	}
	return []Finding{{
		Kind: KindFailures, Severity: sev,
		Message: fmt.Sprintf("%s did not succeed: %s%s",
			english.Plural(total, "task attempt"), strings.Join(parts, ", "), failedOf(len(failedStages), len(failedJobs))),
		Suggestion: "start with the biggest group; FetchFailed and ExecutorLostFailure point at lost executors or nodes, exceptions at the code (top frame)",
		Evidence:   map[string]any{"groups": rows, "failedStages": failedStages, "failedJobs": failedJobs, "tasks": total},
		score:      float64(total),
	}}
}

// failureDetail summarises a failure for grouping: the exception class and
// top frame, or the first line of the reason with numbers kept out.
func failureDetail(t *spark.Task) string {
	switch t.Reason {
	case "ExceptionFailure":
		cls, _, _ := strings.Cut(t.Message, ":")
		if t.TopFrame != "" {
			return cls + " at " + t.TopFrame
		}
		return cls
	case "FetchFailed":
		msg := t.Message
		if i := strings.Index(msg, "message=\n"); i >= 0 {
			msg = msg[i+len("message=\n"):]
		}
		first, _, _ := strings.Cut(msg, "\n")
		cls, _, _ := strings.Cut(first, ":")
		return cls
	case "ExecutorLostFailure":
		if _, reason, ok := strings.Cut(t.Message, "Reason: "); ok {
			return reason
		}
	}
	first, _, _ := strings.Cut(t.Message, "\n")
	return first
}

func executorLoss(app *spark.App, logs []*applog.Log) []Finding {
	var lost []map[string]any
	for _, e := range app.Executors {
		if e.RemovedMs == 0 {
			continue
		}
		r := strings.ToLower(e.RemovalReason)
		// Executors released by dynamic allocation are not losses.
		if strings.Contains(r, "killed by driver") || strings.Contains(r, "dynamic allocation") {
			continue
		}
		lost = append(lost, map[string]any{"executorId": e.ID, "host": e.Host, "timeMs": e.RemovedMs, "reason": e.RemovalReason})
	}
	kinds := map[string]int{}
	for _, l := range logs {
		for _, ev := range l.ExecutorEvents {
			kinds[ev.Kind]++
			if len(lost) < 50 {
				lost = append(lost, map[string]any{"executorId": ev.Executor, "timeMs": unixMs(ev.Time), "reason": ev.Message, "kind": ev.Kind, "source": l.Source})
			}
		}
	}
	if len(lost) == 0 {
		return nil
	}
	const named = 3
	var which []string
	for _, l := range lost[:min(named, len(lost))] {
		w := fmt.Sprintf("executor %v", l["executorId"])
		if h, _ := l["host"].(string); h != "" {
			w += " on " + h
		}
		if r, _ := l["reason"].(string); r != "" {
			w += " (" + english.Truncate(headline(r), 80) + ")"
		}
		which = append(which, w)
	}
	if len(lost) > named {
		which = append(which, fmt.Sprintf("and %d more", len(lost)-named))
	}
	return []Finding{{
		Kind: KindExecutorLoss, Severity: Warning,
		Message:    fmt.Sprintf("%s lost, decommissioned or excluded during the run: %s", english.Plural(len(lost), "executor"), strings.Join(which, ", ")),
		Suggestion: "lost executors cost their running tasks and shuffle output: check container memory (overhead), node health, or spot interruptions",
		Evidence:   map[string]any{"executors": lost, "logEvents": kinds},
		score:      float64(len(lost)),
	}}
}

// busy returns the union of task intervals, merged, in time order.
func busy(app *spark.App) [][2]int64 {
	var iv [][2]int64
	for _, t := range app.Tasks {
		if t.FinishMs > t.LaunchMs {
			iv = append(iv, [2]int64{t.LaunchMs, t.FinishMs})
		}
	}
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]int64
	for _, x := range iv {
		if n := len(out); n > 0 && x[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], x[1])
			continue
		}
		out = append(out, x)
	}
	return out
}

func driverTime(app *spark.App, th Thresholds) (Finding, bool) {
	if app.DurationMs <= 0 || len(app.Tasks) == 0 {
		return Finding{}, false
	}
	var busyMs int64
	bs := busy(app)
	for _, b := range bs {
		busyMs += b[1] - b[0]
	}
	idle := app.DurationMs - busyMs
	s := share(idle, app.DurationMs)
	if s < th.DriverShare || idle < th.DriverMinMs {
		return Finding{}, false
	}
	msg := fmt.Sprintf("%.0f%% of the application's time (%s of %s) ran no task: driver-only work, scheduling gaps or waiting", 100*s, english.Millis(idle), english.Millis(app.DurationMs))
	gaps := longestGaps(app, bs, maxGaps)
	if len(gaps) > 0 {
		named := make([]string, len(gaps))
		for i, g := range gaps {
			named[i] = english.Millis(g.EndMs-g.StartMs) + " " + g.Before
		}
		msg += "; the longest: " + strings.Join(named, ", ")
	}
	return Finding{
		Kind: KindDriverTime, Severity: Warning,
		Message:    msg,
		Suggestion: "profile the driver (collect, planning, file listing, small sequential jobs); parallelise driver-side loops",
		Evidence:   map[string]any{"noTaskMs": idle, "appMs": app.DurationMs, "share": round2(s), "gaps": gaps},
		score:      float64(idle),
	}, true
}

// maxGaps is how many of the longest times without a task a driver-time
// finding names.
const maxGaps = 3

// gap is a time of the app with no task running.
type gap struct {
	StartMs int64  `json:"startMs"`
	EndMs   int64  `json:"endMs"`
	Before  string `json:"before"` // what came next: "before job 3", "before the end"
}

// longestGaps returns the n longest times of app with no task running
// (busy lists the times with one, in order), longest first. Job
// submissions cut them, so that each is named by what it was: the
// driver's work before a job, a job waiting for its first task (executors
// starting, or none free), or the time after the last task.
func longestGaps(app *spark.App, busy [][2]int64, n int) []gap {
	var submits []*spark.Job
	for _, j := range app.Jobs {
		if j.SubmitMs > 0 {
			submits = append(submits, j)
		}
	}
	slices.SortFunc(submits, func(a, b *spark.Job) int { return cmp.Compare(a.SubmitMs, b.SubmitMs) })
	var gaps []gap
	from := app.StartMs
	for _, b := range append(slices.Clone(busy), [2]int64{app.EndMs, app.EndMs}) {
		if from > 0 && b[0] > from {
			gaps = append(gaps, cutGap(app, submits, from, b[0])...)
		}
		from = max(from, b[1])
	}
	slices.SortStableFunc(gaps, func(a, b gap) int { return cmp.Compare(b.EndMs-b.StartMs, a.EndMs-a.StartMs) })
	return gaps[:min(n, len(gaps))]
}

// cutGap cuts the time from–until with no task running at the job
// submissions in it (submits, in order) and names each part.
func cutGap(app *spark.App, submits []*spark.Job, from, until int64) []gap {
	var out []gap
	var after *spark.Job // the job submitted at the start of the part
	for _, j := range submits {
		if j.SubmitMs <= from || j.SubmitMs >= until {
			continue
		}
		g := gap{StartMs: from, EndMs: j.SubmitMs, Before: fmt.Sprintf("before job %d", j.ID)}
		if after != nil {
			g.Before = fmt.Sprintf("from job %d to job %d", after.ID, j.ID)
		} else if from == app.StartMs {
			g.Before = fmt.Sprintf("from the app's start to job %d", j.ID)
		}
		out = append(out, g)
		from, after = j.SubmitMs, j
	}
	g := gap{StartMs: from, EndMs: until}
	switch {
	case app.EndMs > 0 && until >= app.EndMs:
		g.Before = "after the last task, before the app's end"
	case after != nil:
		g.Before = fmt.Sprintf("with job %d waiting for its first task", after.ID)
	case from == app.StartMs:
		g.Before = "from the app's start to the first task"
	default:
		g.Before = "between tasks"
	}
	return append(out, g)
}

func idleExecutors(app *spark.App, th Thresholds) (Finding, bool) {
	var allocated, used int64
	for _, e := range app.Executors {
		if e.ID == "driver" || e.Cores == 0 || e.AddedMs == 0 {
			continue
		}
		end := e.RemovedMs
		if end == 0 {
			end = app.EndMs
		}
		if end <= e.AddedMs {
			continue
		}
		allocated += (end - e.AddedMs) * int64(e.Cores)
		used += e.TotalDurationMs
	}
	if allocated == 0 {
		return Finding{}, false
	}
	idle := share(allocated-used, allocated)
	if idle < th.IdleShare || allocated-used < th.IdleMinCoreMs {
		return Finding{}, false
	}
	wastedHours := float64(allocated-used) / 3.6e6
	return Finding{
		Kind: KindIdleExecutors, Severity: Warning,
		Message:    fmt.Sprintf("executor cores were idle %.0f%% of the time they were allocated: %.2f core-hours wasted", 100*idle, wastedHours),
		Suggestion: "enable dynamic allocation (or lower its idle timeout), use fewer or smaller executors, or give the job more partitions to fill them",
		Evidence:   map[string]any{"allocatedCoreMs": allocated, "taskMs": used, "idleShare": round2(idle), "wastedCoreHours": round2(wastedHours)},
		score:      float64(allocated - used),
	}, true
}

// criticalPath finds the stages that bound the app's wall time. Within a
// job it is the chain of stages, along parent links, whose durations add up
// to the most; jobs that ran at the same time count once, by the longest
// chain among them; and the driver runs one group of jobs after another, so
// the app's path joins those chains in the order they ran.
func criticalPath(app *spark.App) (Finding, bool) {
	dur := map[int]int64{}
	parents := map[int][]int{}
	type span struct {
		job        int
		start, end int64
		stages     []int
	}
	jobs := map[int]*span{}
	for _, st := range app.Stages {
		if st.DurationMs > dur[st.ID] {
			dur[st.ID] = st.DurationMs
		}
		if len(st.Parents) > 0 {
			parents[st.ID] = st.Parents
		}
		if st.DurationMs <= 0 {
			continue // skipped, or never finished
		}
		key := st.JobID
		if key < 0 {
			key = -1 - st.ID // a stage no job named is a job of its own
		}
		j := jobs[key]
		if j == nil {
			j = &span{job: st.JobID, start: st.SubmitMs, end: st.CompleteMs}
			jobs[key] = j
		}
		j.start, j.end = min(j.start, st.SubmitMs), max(j.end, st.CompleteMs)
		j.stages = append(j.stages, st.ID)
	}
	if len(dur) < 2 || len(jobs) == 0 {
		return Finding{}, false
	}
	order := make([]*span, 0, len(jobs))
	for _, j := range jobs {
		order = append(order, j)
	}
	sort.Slice(order, func(a, b int) bool {
		if order[a].start != order[b].start {
			return order[a].start < order[b].start
		}
		return order[a].job < order[b].job
	})

	var path, jobIDs []int
	var total int64
	groups := 0
	for i := 0; i < len(order); {
		// A group: the jobs that ran while an earlier one of it still ran.
		groupEnd, best, bestMs := order[i].end, []int(nil), int64(-1)
		bestJob := order[i].job
		for ; i < len(order) && (best == nil || order[i].start < groupEnd); i++ {
			groupEnd = max(groupEnd, order[i].end)
			chain, ms := longestChain(order[i].stages, dur, parents)
			if ms > bestMs {
				best, bestMs, bestJob = chain, ms, order[i].job
			}
		}
		path, total = append(path, best...), total+bestMs
		groups++
		if bestJob >= 0 {
			jobIDs = append(jobIDs, bestJob)
		}
	}
	if total == 0 {
		return Finding{}, false
	}
	if groups == 1 {
		return Finding{
			Kind: KindCriticalPath, Severity: Info,
			Message:    fmt.Sprintf("critical path through the stage graph: %s %s, %s", english.Nouns(len(path), "stage"), joinInts(path), english.Millis(total)),
			Suggestion: "only these stages bound the wall time: speed them up first",
			Evidence:   map[string]any{"stages": path, "path": path, "durationMs": total, "jobs": jobIDs},
		}, true
	}
	// Over many jobs the path is long: name its longest stages.
	longest := slices.Clone(path)
	sort.SliceStable(longest, func(a, b int) bool { return dur[longest[a]] > dur[longest[b]] })
	longest = longest[:min(len(longest), maxCriticalStages)]
	named := make([]string, len(longest))
	for i, id := range longest {
		named[i] = fmt.Sprintf("stage %d (%s)", id, english.Millis(dur[id]))
	}
	return Finding{
		Kind: KindCriticalPath, Severity: Info,
		Message: fmt.Sprintf("critical path: %s of stages%s in %s that ran one after another (%s on the path); the longest: %s",
			english.Millis(total), shareOfRun(total, app.DurationMs), english.Plural(groups, "job"), english.Plural(len(path), "stage"), strings.Join(named, ", ")),
		Suggestion: "these stages bound the jobs' wall time: speed up the longest first; the time between jobs is the driver's",
		Evidence:   map[string]any{"stages": markedStages(path, longest), "path": path, "durationMs": total, "jobs": jobIDs},
	}, true
}

// shareOfRun says what part of the app's run ms is, or nothing when the
// run's length is unknown.
func shareOfRun(ms, runMs int64) string {
	if runMs <= 0 || ms > runMs {
		return ""
	}
	return fmt.Sprintf(" (%.0f%% of the %s run)", 100*float64(ms)/float64(runMs), english.Millis(runMs))
}

// markedStages returns the stages of a critical path a UI marks: all of a
// short path, the longest of a long one.
func markedStages(path, longest []int) []int {
	if len(path) <= 2*maxCriticalStages {
		return path
	}
	return longest
}

// maxCriticalStages is how many of a critical path's longest stages a
// finding over many jobs names.
const maxCriticalStages = 5

// longestChain returns the chain of stages among ids, following parent links
// within ids, whose durations add up to the most, root first, and its sum.
func longestChain(ids []int, dur map[int]int64, parents map[int][]int) ([]int, int64) {
	in := make(map[int]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	memo := map[int]int64{}
	next := map[int]int{}
	busy := map[int]bool{} // on the current path: a damaged log's cycle ends there
	var longest func(id int) int64
	longest = func(id int) int64 {
		if v, ok := memo[id]; ok {
			return v
		}
		busy[id] = true
		best, via := int64(0), -1
		for _, p := range parents[id] {
			if !in[p] || busy[p] {
				continue
			}
			if v := longest(p); v > best {
				best, via = v, p
			}
		}
		busy[id] = false
		memo[id] = best + dur[id]
		next[id] = via
		return memo[id]
	}
	end, total := -1, int64(-1)
	for _, id := range ids {
		if v := longest(id); v > total || (v == total && id < end) {
			end, total = id, v
		}
	}
	var chain []int
	for id := end; id >= 0; id = next[id] {
		chain = append(chain, id)
	}
	slices.Reverse(chain)
	return chain, total
}

// whatIf estimates the wall time with other numbers of executors by
// replaying each stage's task durations on that many task slots (longest
// task first), keeping the time outside stages as observed.
func whatIf(app *spark.App, byStage map[[2]int][]*spark.Task) (Finding, bool) {
	execs, all, cores := peakExecutors(app)
	if execs == 0 || app.DurationMs <= 0 {
		return Finding{}, false
	}
	var observedSpan int64
	type stageTasks struct{ durs []int64 }
	var stages []stageTasks
	for _, st := range app.Stages {
		ts := byStage[[2]int{st.ID, st.Attempt}]
		var first, last int64
		var durs []int64
		for _, t := range ts {
			if t.FinishMs == 0 {
				continue
			}
			if first == 0 || t.LaunchMs < first {
				first = t.LaunchMs
			}
			last = max(last, t.FinishMs)
			durs = append(durs, t.DurationMs())
		}
		if len(durs) == 0 {
			continue
		}
		observedSpan += last - first
		stages = append(stages, stageTasks{durs})
	}
	outside := max(app.DurationMs-observedSpan, 0)
	estimate := func(n int) int64 {
		total := outside
		for _, s := range stages {
			total += makespan(s.durs, n*cores)
		}
		return total
	}
	var rows []map[string]any
	for _, n := range []int{max(execs/2, 1), execs, execs * 2, execs * 4} {
		rows = append(rows, map[string]any{"executors": n, "estimatedMs": estimate(n)})
	}
	base := estimate(execs)
	twice := estimate(execs * 2)
	now := strconv.Itoa(execs)
	if all > execs {
		now += fmt.Sprintf(" (the most that ran at once, of %d in all)", all)
	}
	msg := fmt.Sprintf("with %d executors instead of %s the run would take about %s instead of %s (replaying the observed task times)",
		execs*2, now, english.Millis(twice), english.Millis(base))
	if english.Millis(twice) == english.Millis(base) {
		msg = fmt.Sprintf("%d executors instead of %s would not shorten the run: about %s either way (replaying the observed task times)",
			execs*2, now, english.Millis(base))
	}
	if diff := base - app.DurationMs; 10*max(diff, -diff) > app.DurationMs {
		// The replay packs each stage's tasks longest first, which can beat
		// the schedule Spark ran: past a tenth apart, say so, or the two run
		// times disagree.
		msg = strings.TrimSuffix(msg, ")") + fmt.Sprintf(": %s on %s, where the run took %s)",
			english.Millis(base), english.Plural(execs, "executor"), english.Millis(app.DurationMs))
	}
	return Finding{
		Kind: KindWhatIf, Severity: Info,
		Message:    msg,
		Suggestion: "if doubling executors barely helps, the run is bound by a few long tasks or by the driver, not by capacity",
		Evidence:   map[string]any{"estimates": rows, "coresPerExecutor": cores, "observedMs": app.DurationMs, "peakExecutors": execs, "executors": all},
	}, true
}

// peakExecutors returns the most executors that ran at once, how many
// ran in all (more, when dynamic allocation or losses replaced some), and
// the most cores one had.
func peakExecutors(app *spark.App) (peak, all, cores int) {
	type change struct {
		at    int64
		delta int
	}
	var changes []change
	for _, e := range app.Executors {
		if e.ID == "driver" || e.Cores <= 0 {
			continue
		}
		all++
		cores = max(cores, e.Cores)
		changes = append(changes, change{e.AddedMs, 1})
		if e.RemovedMs > 0 {
			changes = append(changes, change{e.RemovedMs, -1})
		}
	}
	// Removals first at a tie: a replacement is not two at once.
	slices.SortFunc(changes, func(a, b change) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	n := 0
	for _, c := range changes {
		n += c.delta
		peak = max(peak, n)
	}
	return peak, all, cores
}

// makespan schedules durations longest first onto slots and returns when
// the last one ends.
func makespan(durs []int64, slots int) int64 {
	if slots <= 0 {
		slots = 1
	}
	ds := slices.Clone(durs)
	slices.SortFunc(ds, func(a, b int64) int { return cmp.Compare(b, a) })
	if len(ds) <= slots {
		return ds[0]
	}
	free := make([]int64, slots)
	for _, d := range ds {
		i := 0
		for j := range free {
			if free[j] < free[i] {
				i = j
			}
		}
		free[i] += d
	}
	return slices.Max(free)
}

func logFindings(logs []*applog.Log) []Finding {
	var out []Finding
	var errs []map[string]any
	var chunks []map[string]any
	var errCount, lines int
	for _, l := range logs {
		lines += l.Lines
		for _, e := range l.Errors {
			errCount += e.Count
			errs = append(errs, map[string]any{"level": e.Level, "logger": e.Logger, "message": headline(e.Message),
				"count": e.Count, "first": e.First, "last": e.Last, "source": l.Source})
		}
		for _, c := range l.Chunks {
			chunks = append(chunks, map[string]any{"pattern": c.Pattern, "example": c.Example, "runs": c.Runs, "lines": c.Lines, "source": l.Source})
		}
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool {
			return fmt.Sprint(errs[i]["last"]) > fmt.Sprint(errs[j]["last"])
		})
		sev := Info
		for _, e := range errs {
			if e["level"] == "ERROR" {
				sev = Warning
			}
		}
		distinct := fmt.Sprintf("%d distinct errors and warnings", len(errs))
		if len(errs) == 1 {
			distinct = "1 error or warning"
		}
		out = append(out, Finding{
			Kind: KindErrors, Severity: sev,
			Message: fmt.Sprintf("%s in the logs (%s), newest first: %s",
				distinct, english.Plural(errCount, "line"), errs[0]["message"]),
			Suggestion: "read the newest ERROR first; repeated WARN lines often explain slow stages",
			Evidence:   map[string]any{"errors": firstNMaps(errs, 20)},
		})
	}
	if len(chunks) > 0 {
		sort.SliceStable(chunks, func(i, j int) bool { return chunks[i]["lines"].(int) > chunks[j]["lines"].(int) })
		top := chunks[0]
		out = append(out, Finding{
			Kind: KindLogChunks, Severity: Info,
			Message:  fmt.Sprintf("the most repeated run of log lines covers %d of %d lines: %s", top["lines"], lines, top["pattern"]),
			Evidence: map[string]any{"chunks": firstNMaps(chunks, 10), "lines": lines},
		})
	}
	return out
}

func warnings(in Input) (Finding, bool) {
	ws := slices.Clone(in.Warnings)
	if r := in.Report; r != nil {
		for i, p := range r.Malformed {
			if i == 20 {
				ws = append(ws, fmt.Sprintf("... and %d more malformed lines", len(r.Malformed)-20))
				break
			}
			ws = append(ws, "malformed line skipped at "+p.String())
		}
		for _, t := range r.Truncations {
			ws = append(ws, fmt.Sprintf("log ends early at %s: %v (analysed everything before)", t.Pos, t.Err))
		}
		if r.MissingEnd {
			ws = append(ws, "no ApplicationEnd event: the application was still running, crashed, or the log is incomplete")
		}
		if r.Orphans > 0 {
			ws = append(ws, fmt.Sprintf("%d task ends without a task start", r.Orphans))
		}
		if n := r.JobsWithoutStart; n > 0 {
			ws = append(ws, fmt.Sprintf("%s ended without a JobStart (Spark drops events when a listener queue is full): their stages and submission times are unknown",
				english.Plural(n, "job")))
		}
		var unknown []string
		for name, n := range r.Unknown {
			unknown = append(unknown, fmt.Sprintf("%s (%d)", name, n))
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			ws = append(ws, "events not modelled: "+strings.Join(unknown, ", "))
		}
	}
	if len(ws) == 0 {
		return Finding{}, false
	}
	return Finding{
		Kind: KindWarnings, Severity: Info,
		Message:  english.Plural(len(ws), "problem") + " with the inputs; results cover what could be read",
		Evidence: map[string]any{"warnings": ws},
	}, true
}

// failedOf says how many stage attempts and jobs failed, or nothing when
// none did.
func failedOf(stages, jobs int) string {
	var parts []string
	if stages > 0 {
		parts = append(parts, english.Plural(stages, "stage attempt"))
	}
	if jobs > 0 {
		parts = append(parts, english.Plural(jobs, "job"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, " and ") + " failed"
}

// headline returns the first line of s that is not blank: a log message
// can start on the line after its header (RAPIDS's plan explanations).
func headline(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

func firstN(xs []int64, n int) []int64 { return xs[:min(n, len(xs))] }

func firstNMaps(xs []map[string]any, n int) []map[string]any { return xs[:min(n, len(xs))] }

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

func sortedStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " → ")
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// unixMs returns t in Unix milliseconds, or 0 for the zero time (a log
// line without a time).
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
