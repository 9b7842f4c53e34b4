package server

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
)

// TestStageEndpoints imports a real event log and asks for a stage's page,
// its tasks a page at a time, and the app's timeline form.
func TestStageEndpoints(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	if code := importFile(t, ts, url.Values{"path": {"local-1642039451826"}}, corpus.Read(t, "eventlogs", "apache", "local-1642039451826")); code != 200 {
		t.Fatalf("import: %d", code)
	}
	var stage query.StagePage
	getJSON(t, ts, "/api/v1/apps/local-1642039451826/stages/0", &stage)
	if stage.Stage == nil || stage.Stage.ID != 0 || stage.Tasks != 8 || len(stage.Quantiles) == 0 || len(stage.Executors) != 1 {
		t.Fatalf("stage page %+v", stage)
	}
	var tasks query.TaskPage
	getJSON(t, ts, "/api/v1/apps/local-1642039451826/stages/0/tasks?sort=duration&desc=true&limit=3&offset=1", &tasks)
	if tasks.Total != 8 || len(tasks.Tasks) != 3 || tasks.Tasks[0].DurationMs < tasks.Tasks[2].DurationMs {
		t.Errorf("tasks 1-3 by duration, longest first: %+v", tasks)
	}
	for _, bad := range []struct {
		path string
		code int
	}{
		{"/api/v1/apps/local-1642039451826/stages/x", 400},
		{"/api/v1/apps/local-1642039451826/stages/0?attempt=-2", 400},
		{"/api/v1/apps/local-1642039451826/stages/0/tasks?limit=5000", 400},
		{"/api/v1/apps/local-1642039451826/stages/0/tasks?desc=maybe", 400},
		{"/api/v1/apps/local-1642039451826/stages/0/tasks?sort=colour", 400},
		{"/api/v1/apps/local-1642039451826/stages/42/tasks", 404},
		{"/api/v1/apps/nope/stages/0", 404},
	} {
		resp, err := http.Get(ts.URL + bad.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != bad.code {
			t.Errorf("%s: %d, want %d", bad.path, resp.StatusCode, bad.code)
		}
	}
	// The timeline form: the offline report's data, with the environment
	// and the SQL plans.
	var tl struct {
		Origin      int64
		Lanes       []string
		Tasks       [][13]int64
		Environment struct{ Spark [][2]string }
		SQL         []struct{ PlanDescription string }
		Stages      []struct{ StageID int }
	}
	getJSON(t, ts, "/api/v1/apps/local-1642039451826?tasks=timeline", &tl)
	var none struct {
		Stages []struct{ StageID int }
		Tasks  []any
	}
	getJSON(t, ts, "/api/v1/apps/local-1642039451826?tasks=none", &none)
	if len(none.Stages) == 0 || len(none.Stages) != len(tl.Stages) || none.Tasks == nil || len(none.Tasks) != 0 {
		t.Errorf("tasks=none: %d stages, tasks %v", len(none.Stages), none.Tasks)
	}
	if tl.Origin == 0 || len(tl.Lanes) != 1 || len(tl.Tasks) != 35 || len(tl.Environment.Spark) == 0 || len(tl.SQL) != 2 || tl.SQL[0].PlanDescription == "" {
		t.Errorf("timeline form: origin %d, lanes %v, %d tasks, %d Spark properties, %d SQL executions",
			tl.Origin, tl.Lanes, len(tl.Tasks), len(tl.Environment.Spark), len(tl.SQL))
	}
}
