package analysis

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// PythonStartupEvidence is a python-startup finding's: the time a stage's
// tasks spent before their Python workers read their first record,
// starting the workers and setting the tasks up (reading their Python
// functions and unpickling them with what they capture), against the
// stage's task time.
type PythonStartupEvidence struct {
	StageRef
	// StartupMs is the tasks' time starting workers and setting up; from
	// Spark's metrics (Spark 4: "time to start Python workers" and "time
	// to initialize Python workers") or, Sampled, from the workers'
	// samples, which see the setting up alone.
	StartupMs int64 `json:"startupMs"`
	Sampled   bool  `json:"sampled,omitempty"`
	Tasks     int   `json:"tasks"`
	PerTaskMs int64 `json:"perTaskMs"`
	TaskMs    int64 `json:"taskMs"`
	// Share is StartupMs over TaskMs.
	Share float64 `json:"share"`
	// WorkerReuse is spark.python.worker.reuse as the app set it ("" when
	// it did not: true).
	WorkerReuse string `json:"workerReuse,omitempty"`
}

func (*PythonStartupEvidence) evidence() {}

// pythonStartupRule finds, from the SQL metrics of Spark 4's Python
// operators, the stages whose tasks spent at least th.PythonShare of
// their time, and th.PythonMinMs, starting Python workers and setting
// them up, when the app did not reuse its workers. A reused worker's
// metrics are no measure: it takes its start time before it waits for its
// next task, so Spark drops its start-up, negative, and counts the wait in
// its initialisation. The workers' samples measure those
// (pythonStartupFindings).
func pythonStartupRule(a *appFacts, th Thresholds) []Finding {
	reuse := workerReuse(a.App)
	if reuse != "false" {
		return nil
	}
	startup := map[int]int64{} // by stage
	for _, sql := range a.App.SQL {
		sql.Plan.Walk(func(n *spark.PlanNode) {
			if ev, stage, ok := pythonEvidence(a, sql, n); ok {
				startup[stage] += ev.StartupMs
			}
		})
	}
	var out []Finding
	// By stage: findings of equal cost keep this order.
	for _, stage := range slices.Sorted(maps.Keys(startup)) {
		ms := startup[stage]
		ev := &PythonStartupEvidence{StageRef: stageRef(a.App, stage), StartupMs: ms, WorkerReuse: reuse}
		for _, t := range a.byStage[[2]int{stage, ev.StageAttempt}] {
			ev.TaskMs += t.DurationMs()
			ev.Tasks++
		}
		if f, ok := pythonStartupFinding(stage, ev, th); ok {
			out = append(out, f)
		}
	}
	return out
}

// pythonStartupFindings finds, from the workers' samples, the stages
// whose workers spent at least th.PythonShare of the stage's task time,
// and th.PythonMinMs, setting up its tasks, unless findings has a
// python-startup finding for the stage already (from Spark's metrics).
func pythonStartupFindings(py *PythonTime, app *spark.App, findings []Finding, th Thresholds) []Finding {
	has := stagesWith(findings, KindPythonStartup)
	tasks := map[int]int{}
	if app != nil {
		for _, t := range app.Tasks {
			tasks[t.StageID]++
		}
	}
	var out []Finding
	for _, s := range py.Stages {
		if has[s.StageID] {
			continue
		}
		ev := &PythonStartupEvidence{StageRef: stageRef(app, s.StageID), StartupMs: s.SetupMs, Sampled: true,
			Tasks: tasks[s.StageID], TaskMs: s.TaskMs, WorkerReuse: workerReuse(app)}
		if f, ok := pythonStartupFinding(s.StageID, ev, th); ok {
			out = append(out, f)
		}
	}
	return out
}

// pythonStartupFinding words a stage's python-startup finding, when its
// start-up time passes th.
func pythonStartupFinding(stage int, ev *PythonStartupEvidence, th Thresholds) (Finding, bool) {
	if ev.TaskMs <= 0 || ev.StartupMs < th.PythonMinMs || share(ev.StartupMs, ev.TaskMs) < th.PythonShare {
		return Finding{}, false
	}
	ev.Share = round2(share(ev.StartupMs, ev.TaskMs))
	ev.PerTaskMs = ev.StartupMs / int64(max(ev.Tasks, 1))
	what := "starting Python workers and setting up its tasks"
	if ev.Sampled {
		what = "setting up its tasks"
	}
	msg := fmt.Sprintf("stage %d: its Python workers spent %s %s before their first record (%s a task over %d tasks: reading "+
		"the tasks' Python functions and unpickling them with what they capture), %.0f%% of the stage's %s task time",
		stage, english.Millis(ev.StartupMs), what, english.Millis(ev.PerTaskMs), ev.Tasks, 100*ev.Share, english.Millis(ev.TaskMs))
	var do []string
	if ev.WorkerReuse == "false" {
		do = append(do, "spark.python.worker.reuse is false: every task starts a new worker, which imports again all its "+
			"functions need; set it to true")
	}
	do = append(do, fmt.Sprintf("every task unpickles its Python functions together with everything they capture (%s a task "+
		"here): a function that closes over a large object (a lookup table, a model) ships it with each task; broadcast the "+
		"object (sc.broadcast) and read its .value in the function, which a reused worker loads once, or load it once per "+
		"worker into a module-level cache", english.Millis(ev.PerTaskMs)))
	return Finding{Kind: KindPythonStartup, Severity: Warning, StageID: intp(stage), Message: msg,
		Suggestion: strings.Join(do, "; "), Evidence: ev, score: float64(ev.StartupMs)}, true
}

// workerReuse returns spark.python.worker.reuse as app set it, or "".
func workerReuse(app *spark.App) string {
	if app == nil || app.Environment == nil {
		return ""
	}
	for _, kv := range app.Environment.Spark {
		if kv[0] == "spark.python.worker.reuse" {
			return kv[1]
		}
	}
	return ""
}

// stagesWith returns the stages findings of kind are about.
func stagesWith(findings []Finding, kind Kind) map[int]bool {
	out := map[int]bool{}
	for _, f := range findings {
		if f.Kind == kind && f.StageID != nil {
			out[*f.StageID] = true
		}
	}
	return out
}
