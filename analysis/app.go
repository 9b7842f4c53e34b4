package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// appRule checks one thing of the whole app.
type appRule func(a *appFacts, th Thresholds) (Finding, bool)

// appRules are the checks of the app, in the order of their findings
// among equals.
var appRules = []appRule{
	failuresRule,
	executorLossRule,
	decommissionRule,
	speculationRule,
	gcRecordsRule,
	idleExecutorsRule,
	driverTimeRule,
	criticalPathRule,
	whatIfRule,
	errorsRule,
	logChunksRule,
	warningsRule,
}

// appFacts are what the app rules read: the input, and the app's tasks by
// stage attempt.
type appFacts struct {
	Input
	byStage map[[2]int][]*spark.Task
}

// appFindings runs the app rules.
func appFindings(a *appFacts, th Thresholds) []Finding {
	var out []Finding
	for _, rule := range appRules {
		if f, ok := rule(a, th); ok {
			out = append(out, f)
		}
	}
	out = append(out, pythonUDFRule(a, th)...)
	return append(out, pythonStartupRule(a, th)...)
}

// failuresRule groups failed tasks by reason and top frame, and lists
// failed stages and jobs.
func failuresRule(a *appFacts, _ Thresholds) (Finding, bool) {
	type group struct {
		reason, detail string
		tasks          []int64
		stages         map[int]bool
		executors      map[string]bool
	}
	groups := map[string]*group{}
	for _, t := range a.App.Tasks {
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
	excluded := exclusions(a.App)
	if len(groups) == 0 && len(excluded) == 0 {
		return Finding{}, false
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
	ev := &FailuresEvidence{Excluded: excluded}
	var parts []string
	for _, g := range list {
		ev.Tasks += len(g.tasks)
		ev.Groups = append(ev.Groups, FailureGroup{
			Reason: g.reason, Detail: g.detail, Count: len(g.tasks), TaskIDs: firstN(g.tasks, 10),
			Stages: sortedKeys(g.stages), Executors: sortedKeys(g.executors),
		})
		parts = append(parts, fmt.Sprintf("%d %s", len(g.tasks), g.reason))
	}
	for _, st := range a.App.Stages {
		if st.Status == "FAILED" {
			ev.FailedStages = append(ev.FailedStages, st.ID)
		}
	}
	for _, j := range a.App.Jobs {
		if j.Result == "JobFailed" {
			ev.FailedJobs = append(ev.FailedJobs, j.ID)
		}
	}
	sev := Warning
	if len(ev.FailedJobs) > 0 {
		sev = Critical
	}
	return Finding{
		Kind: KindFailures, Severity: sev,
		Message: fmt.Sprintf("%s did not succeed: %s%s%s",
			english.Plural(ev.Tasks, "task attempt"), strings.Join(parts, ", "), failedOf(len(ev.FailedStages), len(ev.FailedJobs)), excludedPhrase(excluded)),
		Suggestion: failuresSuggestion(excluded),
		Evidence:   ev,
		score:      float64(ev.Tasks),
	}, true
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

// executorLossRule lists the executors removed for reasons other than
// dynamic allocation, and the container logs' lines on losses,
// decommissioning and exclusion.
func executorLossRule(a *appFacts, _ Thresholds) (Finding, bool) {
	var lost []LostExecutor
	for _, e := range a.App.Executors {
		if e.RemovedMs == 0 {
			continue
		}
		r := strings.ToLower(e.RemovalReason)
		// Executors released by dynamic allocation are not losses, and
		// those the cluster took back are the decommission finding's.
		if strings.Contains(r, "killed by driver") || strings.Contains(r, "dynamic allocation") || reclaimed(e.RemovalReason) {
			continue
		}
		host := e.Host
		lost = append(lost, LostExecutor{ExecutorID: e.ID, Host: &host, TimeMs: e.RemovedMs, Reason: e.RemovalReason})
	}
	kinds := map[string]int{}
	for _, l := range a.Logs {
		for _, ev := range l.ExecutorEvents {
			if ev.Kind == "decommission" {
				continue
			}
			kinds[ev.Kind]++
			if len(lost) < 50 {
				lost = append(lost, LostExecutor{ExecutorID: ev.Executor, TimeMs: unixMs(ev.Time), Reason: ev.Message, Kind: ev.Kind, Source: l.Source})
			}
		}
	}
	if len(lost) == 0 {
		return Finding{}, false
	}
	const named = 3
	var which []string
	for _, l := range lost[:min(named, len(lost))] {
		w := "executor " + l.ExecutorID
		if l.Host != nil && *l.Host != "" {
			w += " on " + *l.Host
		}
		if l.Reason != "" {
			w += " (" + english.Truncate(headline(l.Reason), 80) + ")"
		}
		which = append(which, w)
	}
	if len(lost) > named {
		which = append(which, fmt.Sprintf("and %d more", len(lost)-named))
	}
	return Finding{
		Kind: KindExecutorLoss, Severity: Warning,
		Message:    fmt.Sprintf("%s lost or excluded during the run: %s", english.Plural(len(lost), "executor"), strings.Join(which, ", ")),
		Suggestion: "lost executors cost their running tasks and shuffle output: check container memory (overhead), node health, or spot interruptions",
		Evidence:   &ExecutorLossEvidence{Executors: lost, LogEvents: kinds},
		score:      float64(len(lost)),
	}, true
}

// idleExecutorsRule: the share of the executors' allocated core time with
// no task running.
func idleExecutorsRule(a *appFacts, th Thresholds) (Finding, bool) {
	app := a.App
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
		Evidence:   &IdleExecutorsEvidence{AllocatedCoreMs: allocated, TaskMs: used, IdleShare: round2(idle), WastedCoreHours: round2(wastedHours)},
		score:      float64(allocated - used),
	}, true
}

// errorsRule: the container logs' ERROR and WARN lines, deduplicated,
// newest first.
func errorsRule(a *appFacts, _ Thresholds) (Finding, bool) {
	var errs []LogError
	var lines int
	for _, l := range a.Logs {
		for _, e := range l.Errors {
			lines += e.Count
			errs = append(errs, LogError{Level: e.Level, Logger: e.Logger, Message: headline(e.Message),
				Count: e.Count, First: e.First, Last: e.Last, Source: l.Source})
		}
	}
	if len(errs) == 0 {
		return Finding{}, false
	}
	// Newest first, by the time as the logs wrote it.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Last.String() > errs[j].Last.String() })
	sev := Info
	if slices.ContainsFunc(errs, func(e LogError) bool { return e.Level == "ERROR" }) {
		sev = Warning
	}
	distinct := fmt.Sprintf("%d distinct errors and warnings", len(errs))
	if len(errs) == 1 {
		distinct = "1 error or warning"
	}
	return Finding{
		Kind: KindErrors, Severity: sev,
		Message: fmt.Sprintf("%s in the logs (%s), newest first: %s",
			distinct, english.Plural(lines, "line"), errs[0].Message),
		Suggestion: "read the newest ERROR first; repeated WARN lines often explain slow stages",
		Evidence:   &ErrorsEvidence{Errors: firstN(errs, 20)},
	}, true
}

// logChunksRule: the runs of log lines that repeat most.
func logChunksRule(a *appFacts, _ Thresholds) (Finding, bool) {
	var chunks []LogChunk
	var lines int
	for _, l := range a.Logs {
		lines += l.Lines
		for _, c := range l.Chunks {
			chunks = append(chunks, LogChunk{Pattern: c.Pattern, Example: c.Example, Runs: c.Runs, Lines: c.Lines, Source: l.Source})
		}
	}
	if len(chunks) == 0 {
		return Finding{}, false
	}
	sort.SliceStable(chunks, func(i, j int) bool { return chunks[i].Lines > chunks[j].Lines })
	top := chunks[0]
	return Finding{
		Kind: KindLogChunks, Severity: Info,
		Message:  fmt.Sprintf("the most repeated run of log lines covers %d of %d lines: %s", top.Lines, lines, top.Pattern),
		Evidence: &LogChunksEvidence{Chunks: firstN(chunks, 10), Lines: lines},
	}, true
}

// warningsRule lists the problems met reading the inputs.
func warningsRule(a *appFacts, _ Thresholds) (Finding, bool) {
	ws := slices.Clone(a.Warnings)
	if r := a.Report; r != nil {
		ws = append(ws, eventLogProblems(r)...)
	}
	if len(ws) == 0 {
		return Finding{}, false
	}
	return Finding{
		Kind: KindWarnings, Severity: Info,
		Message:  english.Plural(len(ws), "problem") + " with the inputs; results cover what could be read",
		Evidence: &WarningsEvidence{Warnings: ws},
	}, true
}

// eventLogProblems says what was wrong with an event log.
func eventLogProblems(r *spark.Report) []string {
	var ws []string
	for i, p := range r.Malformed {
		if i == 20 {
			ws = append(ws, fmt.Sprintf("... and %d more malformed lines", r.MalformedLines-20))
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
	return ws
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

// sortedKeys returns the keys of m in order.
func sortedKeys[K cmp.Ordered](m map[K]bool) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// unixMs returns t in Unix milliseconds, or 0 for the zero time (a log
// line without a time).
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
