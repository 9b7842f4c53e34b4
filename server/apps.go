package server

import (
	"net/http"
	"strconv"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/report"
	"github.com/sparkprof/sparkprof/spark"
)

func (s *Server) handleApps(r *http.Request) (any, error) {
	return s.query.Apps(r.Context(), tenant(r))
}

// appDetail is the answer of /api/v1/apps/{id}: the analysis report with
// the tasks (for timelines).
type appDetail struct {
	*analysis.Report
	Tasks any `json:"tasks"` // []*spark.Task, or []briefTask
}

// briefTask is what the app page's timeline draws of a task: a fifth of
// the bytes of a task with its metrics, for apps of hundreds of thousands.
type briefTask struct {
	ID         int64  `json:"taskId"`
	StageID    int    `json:"stageId"`
	Partition  int    `json:"partition"`
	ExecutorID string `json:"executorId"`
	LaunchMs   int64  `json:"launchMs"`
	FinishMs   int64  `json:"finishMs"`
	Status     string `json:"status"`
}

func briefTasks(ts []*spark.Task) []briefTask {
	out := make([]briefTask, len(ts))
	for i, t := range ts {
		out[i] = briefTask{t.ID, t.StageID, t.Partition, t.ExecutorID, t.LaunchMs, t.FinishMs, t.Status}
	}
	return out
}

// handleApp answers an app's report with what the store holds of it now,
// and its tasks: all (with their metrics), brief (what a timeline draws),
// timeline (the web UI's app page: the offline report's data, tasks as
// arrays with their phases) or none (a stage page needs the app's stages
// and jobs, not its 200,000 tasks).
func (s *Server) handleApp(r *http.Request) (any, error) {
	form := r.URL.Query().Get("tasks")
	switch form {
	case "", "all", "brief", "timeline", "none":
	default:
		return nil, badRequest("tasks=%q: want all (with their metrics), brief (what a timeline draws), timeline (arrays, with their phases) or none", form)
	}
	rep, err := s.query.App(r.Context(), tenant(r), appOf(r))
	if err != nil {
		return nil, err
	}
	switch form {
	case "brief":
		return appDetail{rep, briefTasks(rep.Tasks)}, nil
	case "timeline":
		return report.NewPageData(rep, len(rep.Tasks)), nil
	case "none":
		return appDetail{rep, []briefTask{}}, nil
	}
	return appDetail{rep, rep.Tasks}, nil
}

// appOf returns the app attempt a request names: the app of its path's
// id, the attempt of its appAttempt parameter ("" for an app that names
// none), else the latest.
func appOf(r *http.Request) query.AppAttempt {
	app := query.AppAttempt{ID: r.PathValue("id")}
	if q := r.URL.Query(); q.Has("appAttempt") {
		a := q.Get("appAttempt")
		app.Attempt = &a
	}
	return app
}

// handleSlowVsRest diffs the slowest percent of a stage's tasks against the
// others: base = typical tasks, next = slow tasks, by spark_task_id labels,
// restricted to the app's samples.
func (s *Server) handleSlowVsRest(r *http.Request) (any, error) {
	stage, err := strconv.Atoi(r.PathValue("stage"))
	if err != nil {
		return nil, badRequest("stage: %v", err)
	}
	pct := 10.0
	if p := r.URL.Query().Get("percent"); p != "" {
		if pct, err = strconv.ParseFloat(p, 64); err != nil || pct <= 0 || pct >= 100 {
			return nil, badRequest("percent: want a number between 0 and 100")
		}
	}
	limit, err := maxNodes(r, 0)
	if err != nil {
		return nil, err
	}
	sr, err := s.query.SlowVsRest(r.Context(), tenant(r), appOf(r), stage, pct, r.URL.Query())
	if err != nil {
		return nil, err
	}
	return diffAnswer(sr.Rest, sr.Slow, sr.Request.Type, limit, map[string]any{
		"slowTaskIds":  sr.SlowTaskIDs,
		"restTasks":    sr.RestTasks,
		"thresholdMs":  sr.ThresholdMs,
		"restMedianMs": sr.RestMedianMs,
	})
}
