package query

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// AppSummary is one row of the apps list: an app, as its latest attempt
// tells it, with its attempts.
type AppSummary struct {
	spark.Summary
	// Status is finished, running (no ApplicationEnd), or profiles (an app
	// whose samples carry its id, from an agent, but whose event log the
	// server has not read).
	Status        string `json:"status"`
	FindingsCount int    `json:"findingsCount"`
	Critical      int    `json:"criticalFindings"`
	// Attempts are the app's attempts whose event logs the server read,
	// the latest first, as the History Server's applications list them
	// (one, without an attemptId, for an app that names none).
	Attempts []AppSummary `json:"attempts,omitempty"`
}

// Apps lists the tenant's applications, the latest start first: those
// analysed from their logs, a row for each app id with its attempts, and
// those known only from the app ids their samples carry.
func (e *Engine) Apps(ctx context.Context, tenant string) ([]AppSummary, error) {
	out := []AppSummary{}
	analysed := map[string]bool{}
	for _, rep := range e.apps.Reports(tenant) {
		if analysed[rep.App.ID] {
			continue
		}
		analysed[rep.App.ID] = true
		var row AppSummary
		for _, att := range e.apps.Attempts(tenant, rep.App.ID) {
			a := attemptSummary(att)
			if row.ID == "" {
				row = a // the latest attempt's
			}
			row.Attempts = append(row.Attempts, a)
		}
		out = append(out, row)
	}
	profiled, err := e.profiledApps(ctx, tenant, analysed)
	if err != nil {
		return nil, err
	}
	out = append(out, profiled...)
	sort.Slice(out, func(i, j int) bool { return out[i].StartMs > out[j].StartMs })
	return out, nil
}

// attemptSummary is the row of an app attempt's report.
func attemptSummary(rep *analysis.Report) AppSummary {
	row := AppSummary{Summary: rep.App, Status: "finished", FindingsCount: len(rep.Findings)}
	if rep.App.EndMs == 0 {
		row.Status = "running"
	}
	for _, f := range rep.Findings {
		if f.Severity == analysis.Critical {
			row.Critical++
		}
	}
	row.Config = nil
	return row
}

// profiledApps returns a row for each app id the tenant's samples carry
// (an agent's uploads name their app) that is not among the analysed
// apps: a user who set up the agent but not the event logs finds the app
// in the list, with the span of its uploads and its service name.
func (e *Engine) profiledApps(ctx context.Context, tenant string, analysed map[string]bool) ([]AppSummary, error) {
	ids, err := e.LabelValues(ctx, tenant, profile.LabelAppID, store.Query{})
	if err != nil {
		return nil, err
	}
	var out []AppSummary
	for id := range ids[profile.LabelAppID] {
		if analysed[id] || id == "" {
			continue
		}
		row := AppSummary{Summary: spark.Summary{ID: id}, Status: "profiles"}
		m := []profile.Matcher{{Name: profile.LabelAppID, Op: profile.MatchEqual, Value: id}}
		err := e.store.Select(tenant, store.Query{Matchers: m, SampleMatchers: m}, func(u *store.Upload) error {
			if u.From > 0 && (row.StartMs == 0 || u.From/1e6 < row.StartMs) {
				row.StartMs = u.From / 1e6
			}
			row.EndMs = max(row.EndMs, u.Until/1e6)
			if row.Name == "" {
				row.Name = serviceName(u)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		// Still receiving, or not: there is no end event to tell.
		row.DurationMs, row.EndMs = max(row.EndMs-row.StartMs, 0), 0
		out = append(out, row)
	}
	return out, nil
}

// serviceName returns the service name of upload u: its own label, or for
// a compacted block the one its samples carry, when they carry one only.
func serviceName(u *store.Upload) string {
	if name, ok := u.Labels.Get(profile.LabelServiceName); ok {
		return name
	}
	if names := u.LabelValues()[profile.LabelServiceName]; len(names) == 1 {
		return names[0]
	}
	return ""
}

// AppAttempt names an application and one of its attempts.
type AppAttempt struct {
	ID string
	// Attempt is the attempt's id ("" for an app that names none); nil
	// names the latest attempt.
	Attempt *string
}

// report returns the report of the tenant's app attempt; an app or attempt
// the server has not analysed is an errkind.NotFound error.
func (e *Engine) report(tenant string, app AppAttempt) (*analysis.Report, error) {
	rep := e.apps.Report(tenant, app.ID)
	if rep == nil {
		return nil, errkind.Errorf(errkind.NotFound, "no application %q: import its event log first", app.ID)
	}
	if app.Attempt == nil {
		return rep, nil
	}
	if rep = e.apps.Attempt(tenant, app.ID, *app.Attempt); rep == nil {
		var have []string
		for _, a := range e.apps.Attempts(tenant, app.ID) {
			have = append(have, strconv.Quote(a.App.AttemptID))
		}
		return nil, errkind.Errorf(errkind.NotFound, "application %q has no attempt %q: its attempts are %s", app.ID, *app.Attempt, strings.Join(have, ", "))
	}
	return rep, nil
}

// App returns the report of the tenant's app attempt with what the store
// holds of the app now: its live uploads' metric series, and stragglers
// explained from their tasks' samples. An app or attempt the server has
// not analysed is an errkind.NotFound error.
func (e *Engine) App(ctx context.Context, tenant string, app AppAttempt) (*analysis.Report, error) {
	rep, err := e.report(tenant, app)
	if err != nil {
		return nil, err
	}
	live := *rep
	live.Metrics = e.withLiveMetrics(tenant, rep)
	live.Findings = e.explainStragglers(ctx, tenant, rep)
	if f, ok := e.regression(tenant, rep); ok {
		live.Findings = analysis.WithFinding(live.Findings, f)
	}
	live.Recommendations, live.Python = e.fromSamples(ctx, tenant, rep)
	sparkApp := &spark.App{Summary: rep.App, Stages: rep.Stages, Tasks: rep.Tasks, Environment: rep.Environment}
	live.Findings = analysis.WithPython(live.Findings, live.Python, sparkApp, e.apps.Thresholds())
	return &live, nil
}

// fromSamples returns the recommendations of the app's samples in the
// store (analysis.Recommend) and its Python workers' time
// (analysis.Python), or rep's when the store holds none or the merge
// fails. The merge keeps stages and thread pools, as a block's rollup
// does, so a stored app reads its blocks' rollups.
func (e *Engine) fromSamples(ctx context.Context, tenant string, rep *analysis.Report) ([]analysis.Recommendation, *analysis.PythonTime) {
	m, err := profile.NewMatcher(profile.LabelAppID, profile.MatchEqual, rep.App.ID)
	if err != nil {
		return rep.Recommendations, rep.Python
	}
	req := NewRequest([]profile.Matcher{m}, "", 0, 0)
	req.Keep = KeepCoarse
	p, err := e.Merge(ctx, tenant, req)
	if err != nil {
		e.log.Warn("recommendations: reading the app's samples failed", "app", rep.App.ID, "err", err)
		return rep.Recommendations, rep.Python
	}
	if len(p.Samples) == 0 {
		return rep.Recommendations, rep.Python
	}
	app := &spark.App{Summary: rep.App, Tasks: rep.Tasks}
	in := analysis.Input{App: app, Profiles: []*profile.Profile{p}}
	return analysis.Recommend(in, e.apps.Thresholds()), analysis.Python(in.Profiles, app)
}

// withLiveMetrics returns rep's metrics and those of the app's live
// uploads (the agent's GC, heap and CPU load), as report series.
func (e *Engine) withLiveMetrics(tenant string, rep *analysis.Report) []analysis.Series {
	m, err := profile.NewMatcher(profile.LabelAppID, profile.MatchEqual, rep.App.ID)
	if err != nil {
		return rep.Metrics
	}
	ss, err := e.MetricSeries(tenant, store.Query{Matchers: []profile.Matcher{m}}, "")
	if err != nil {
		e.log.Warn("reading the app's metric series failed", "app", rep.App.ID, "err", err)
		return rep.Metrics
	}
	return append(slices.Clip(rep.Metrics), analysis.ReportSeries(ss, "", "")...)
}

// explainStragglers returns the findings of rep, each straggler's saying
// where its task's samples in the store went, if any are there (agents
// may send them after the event log came). It reads only the task's
// window (attribution.TaskSpan); a query that fails leaves the finding as
// it was.
func (e *Engine) explainStragglers(ctx context.Context, tenant string, rep *analysis.Report) []analysis.Finding {
	var out []analysis.Finding // a copy, once a finding changes: rep is shared
	tasks := e.apps.Tasks(tenant, rep.App.ID, rep.App.AttemptID)
	for i, f := range rep.Findings {
		if ev, ok := f.Evidence.(*analysis.StragglerEvidence); !ok || f.TaskID == nil || ev.Profile != nil {
			continue
		}
		task := tasks[*f.TaskID]
		if task == nil {
			continue
		}
		p, err := e.TaskSamples(ctx, tenant, rep.App.ID, task)
		if err != nil {
			e.log.Warn("straggler samples", "app", rep.App.ID, "task", task.ID, "err", err)
			continue
		}
		if analysis.ExplainStraggler(&f, p) {
			if out == nil {
				out = slices.Clone(rep.Findings)
			}
			out[i] = f
		}
	}
	if out == nil {
		return rep.Findings
	}
	return out
}

// TaskSamples merges the stored samples of task t of the tenant's app
// appID (stacks, types and states): those of its id taken in its window,
// the rule attribution.TaskSamples states.
func (e *Engine) TaskSamples(ctx context.Context, tenant, appID string, t *spark.Task) (*profile.Profile, error) {
	ms := []profile.Matcher{
		{Name: profile.LabelAppID, Op: profile.MatchEqual, Value: appID},
		{Name: profile.LabelTaskID, Op: profile.MatchEqual, Value: strconv.FormatInt(t.ID, 10)},
	}
	from, until := attribution.TaskSpan([]*spark.Task{t})
	req := NewRequest(ms, "", from, until)
	req.Keep = KeepNone
	return e.Merge(ctx, tenant, req)
}

// SlowVsRest is the split of a stage's tasks into the slowest and the
// others, with the samples of each.
type SlowVsRest struct {
	Slow, Rest *profile.Profile // the merged samples of each side
	Request    Request          // the selection of the stage's tasks
	// SlowTaskIDs are the slow tasks, the slowest first.
	SlowTaskIDs []int64
	// RestTasks counts the others; ThresholdMs is the shortest slow
	// task's duration and RestMedianMs the others' median.
	RestTasks                 int
	ThresholdMs, RestMedianMs int64
}

// SlowVsRest splits the finished tasks of a stage of the tenant's app into
// the slowest pct percent and the others, and merges the samples of each,
// restricted to the app's and further by q (type, state, from, until).
func (e *Engine) SlowVsRest(ctx context.Context, tenant string, app AppAttempt, stage int, pct float64, q url.Values) (*SlowVsRest, error) {
	rep, err := e.report(tenant, app)
	if err != nil {
		return nil, err
	}
	var tasks []*spark.Task
	for _, t := range rep.Tasks {
		if t.StageID == stage && t.FinishMs > 0 {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) < 2 {
		return nil, errkind.Errorf(errkind.NotFound, "stage %d has %d finished tasks; a diff needs two", stage, len(tasks))
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].DurationMs() > tasks[j].DurationMs() })
	nSlow := min(max(1, int(float64(len(tasks))*pct/100+0.5)), len(tasks)-1) // neither side empty
	ids := func(ts []*spark.Task) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = strconv.FormatInt(t.ID, 10)
		}
		return strings.Join(parts, "|")
	}
	q = maps.Clone(q) // Set replaces values, never changes them
	// Task ids are unique within an app, and Spark 2.x thread names carry
	// no stage: select by task id alone, the stage's tasks in one pass,
	// split into the slow and the rest.
	q.Set("query", fmt.Sprintf(`{spark_app_id="%s", spark_task_id=~"%s"}`, rep.App.ID, ids(tasks)))
	slowTasks, err := profile.NewMatcher(profile.LabelTaskID, profile.MatchRegexp, ids(tasks[:nSlow]))
	if err != nil {
		return nil, err
	}
	// Only the time the stage's tasks ran holds their samples (the join
	// to task windows takes a task's labels off samples outside its
	// window): a range narrowed to it reads a stage of a long app from
	// the blocks' time slices it overlaps, not from every block.
	if from, until, err := ParseRange(q, ""); err == nil {
		lo, hi := attribution.TaskSpan(tasks)
		from, until = narrowRange(from, until, lo, hi)
		for name, t := range map[string]int64{"from": from, "until": until} {
			if t != 0 {
				q.Set(name, strconv.FormatInt(t, 10))
			}
		}
	}
	req, err := ParseRequest(q, "query")
	if err != nil {
		return nil, err
	}
	slow, rest, err := e.SplitMerge(ctx, tenant, req, slowTasks)
	if err != nil {
		return nil, err
	}
	ans := &SlowVsRest{Slow: slow, Rest: rest, Request: req, RestTasks: len(tasks) - nSlow,
		ThresholdMs:  tasks[nSlow-1].DurationMs(), // the shortest slow task
		RestMedianMs: tasks[nSlow+(len(tasks)-nSlow)/2].DurationMs()}
	for _, t := range tasks[:nSlow] {
		ans.SlowTaskIDs = append(ans.SlowTaskIDs, t.ID)
	}
	return ans, nil
}
