package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

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

// driverTimeRule: the share of the app's time with no task running, and
// its longest stretches.
func driverTimeRule(a *appFacts, th Thresholds) (Finding, bool) {
	app := a.App
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
		Evidence:   &DriverTimeEvidence{NoTaskMs: idle, AppMs: app.DurationMs, Share: round2(s), Gaps: gaps},
		score:      float64(idle),
	}, true
}

// maxGaps is how many of the longest times without a task a driver-time
// finding names.
const maxGaps = 3

// longestGaps returns the n longest times of app with no task running
// (busy lists the times with one, in order), longest first. Job
// submissions cut them, so that each is named by what it was: the
// driver's work before a job, a job waiting for its first task (executors
// starting, or none free), or the time after the last task.
func longestGaps(app *spark.App, busy [][2]int64, n int) []Gap {
	var submits []*spark.Job
	for _, j := range app.Jobs {
		if j.SubmitMs > 0 {
			submits = append(submits, j)
		}
	}
	slices.SortFunc(submits, func(a, b *spark.Job) int { return cmp.Compare(a.SubmitMs, b.SubmitMs) })
	var gaps []Gap
	from := app.StartMs
	for _, b := range append(slices.Clone(busy), [2]int64{app.EndMs, app.EndMs}) {
		if from > 0 && b[0] > from {
			gaps = append(gaps, cutGap(app, submits, from, b[0])...)
		}
		from = max(from, b[1])
	}
	slices.SortStableFunc(gaps, func(a, b Gap) int { return cmp.Compare(b.EndMs-b.StartMs, a.EndMs-a.StartMs) })
	return gaps[:min(n, len(gaps))]
}

// cutGap cuts the time from–until with no task running at the job
// submissions in it (submits, in order) and names each part.
func cutGap(app *spark.App, submits []*spark.Job, from, until int64) []Gap {
	var out []Gap
	var after *spark.Job // the job submitted at the start of the part
	for _, j := range submits {
		if j.SubmitMs <= from || j.SubmitMs >= until {
			continue
		}
		g := Gap{StartMs: from, EndMs: j.SubmitMs, Before: fmt.Sprintf("before job %d", j.ID)}
		if after != nil {
			g.Before = fmt.Sprintf("from job %d to job %d", after.ID, j.ID)
		} else if from == app.StartMs {
			g.Before = fmt.Sprintf("from the app's start to job %d", j.ID)
		}
		out = append(out, g)
		from, after = j.SubmitMs, j
	}
	g := Gap{StartMs: from, EndMs: until}
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

// criticalPathRule finds the stages that bound the app's wall time. Within a
// job it is the chain of stages, along parent links, whose durations add up
// to the most; jobs that ran at the same time count once, by the longest
// chain among them; and the driver runs one group of jobs after another, so
// the app's path joins those chains in the order they ran.
func criticalPathRule(a *appFacts, _ Thresholds) (Finding, bool) {
	app := a.App
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
			Evidence:   &CriticalPathEvidence{Stages: path, Path: path, DurationMs: total, Jobs: jobIDs},
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
		Evidence:   &CriticalPathEvidence{Stages: markedStages(path, longest), Path: path, DurationMs: total, Jobs: jobIDs},
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

// whatIfRule estimates the wall time with other numbers of executors by
// replaying each stage's task durations on that many task slots (longest
// task first), keeping the time outside stages as observed.
func whatIfRule(a *appFacts, _ Thresholds) (Finding, bool) {
	app := a.App
	execs, all, cores := peakExecutors(app)
	if execs == 0 || app.DurationMs <= 0 {
		return Finding{}, false
	}
	var observedSpan int64
	type stageTasks struct {
		id   int
		durs []int64
	}
	var stages []stageTasks
	for _, st := range app.Stages {
		ts := a.byStage[[2]int{st.ID, st.Attempt}]
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
		stages = append(stages, stageTasks{st.ID, durs})
	}
	outside := max(app.DurationMs-observedSpan, 0)
	estimate := func(n int) int64 {
		total := outside
		for _, s := range stages {
			total += makespan(s.durs, n*cores)
		}
		return total
	}
	var rows []Estimate
	for _, n := range []int{max(execs/2, 1), execs, execs * 2, execs * 4} {
		rows = append(rows, Estimate{Executors: n, EstimatedMs: estimate(n)})
	}
	base := estimate(execs)
	twice := estimate(execs * 2)
	// Stages of fewer tasks than the slots there were take their longest
	// task in every estimate: more executors cannot shorten them.
	bound := []BoundStage{}
	var boundMs int64
	for _, s := range stages {
		if len(s.durs) < execs*cores {
			b := BoundStage{StageID: s.id, Tasks: len(s.durs), LongestMs: slices.Max(s.durs)}
			bound = append(bound, b)
			boundMs += b.LongestMs
		}
	}
	slices.SortStableFunc(bound, func(a, b BoundStage) int { return cmp.Compare(b.LongestMs, a.LongestMs) })
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
	if len(bound) > 0 && share(boundMs, base) >= 0.1 {
		msg += fmt.Sprintf("; %s of it is in %s with fewer tasks than the %d slots there were, which more executors cannot shorten (the longest: %s)",
			english.Millis(boundMs), english.Plural(len(bound), "stage"), execs*cores, boundNames(bound))
	}
	return Finding{
		Kind: KindWhatIf, Severity: Info,
		Message:    msg,
		Suggestion: "if doubling executors barely helps, the run is bound by a few long tasks or by the driver, not by capacity: stages of fewer tasks than slots need more partitions, not executors",
		Evidence: &WhatIfEvidence{Estimates: rows, CoresPerExecutor: cores, ObservedMs: app.DurationMs, PeakExecutors: execs, Executors: all,
			BoundStages: firstN(bound, 10)},
	}, true
}

// boundNames names the first three stages of bound: "stage 3 (2 tasks,
// 4.5 min)".
func boundNames(bound []BoundStage) string {
	var named []string
	for _, b := range firstN(bound, 3) {
		named = append(named, fmt.Sprintf("stage %d (%s, %s)", b.StageID, english.Plural(b.Tasks, "task"), english.Millis(b.LongestMs)))
	}
	return strings.Join(named, ", ")
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

// joinInts writes a path of stages: "0 → 2 → 3".
func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " → ")
}
