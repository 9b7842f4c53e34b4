package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
)

// TestProfiledApps: an app whose agent sent profiles but whose event log
// the server has not read is listed, with its service name and the start
// of its uploads; once its event log is imported, it is listed once, as
// analysed.
func TestProfiledApps(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	send := func(app string, from int64) {
		t.Helper()
		q := url.Values{"name": {"myjob{spark_app_id=" + app + ",spark_executor_id=1}"}, "format": {"jfr"},
			"from": {strconv.FormatInt(from, 10)}, "until": {strconv.FormatInt(from+10_000, 10)}}
		if code := post(t, ts, q, "", jfr); code != 200 {
			t.Fatalf("upload for %s: %d", app, code)
		}
	}
	send("app-x", 1764000000000)
	send("app-x", 1764000010000)
	send("local-1532512550423", 1532512550000)
	if code := importFile(t, ts, url.Values{"path": {"local-1532512550423"}}, corpus.Read(t, "eventlogs", "sparklens", "local-1532512550423")); code != 200 {
		t.Fatalf("import: %d", code)
	}
	var apps []query.AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps)
	got := map[string]query.AppSummary{}
	for _, a := range apps {
		got[a.ID] = a
	}
	if x := got["app-x"]; len(apps) != 2 || x.Status != "profiles" || x.Name != "myjob" || x.StartMs != 1764000000000 || x.DurationMs != 20_000 {
		t.Errorf("apps %+v; want app-x from its profiles (myjob, from 1764000000000 for 20 s) and the analysed app", apps)
	}
	if a := got["local-1532512550423"]; a.Status != "finished" || a.TaskCount != 8 {
		t.Errorf("the analysed app: %+v", a)
	}
	// Compacted, the uploads' labels are their samples': the row stays.
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	var after []query.AppSummary
	getJSON(t, ts, "/api/v1/apps", &after)
	if !reflect.DeepEqual(after, apps) {
		t.Errorf("apps after compaction %+v, before %+v", after, apps)
	}
}

// TestAppsAndSlowVsRest imports a real event log, lists and opens the app,
// then diffs the slowest task of a stage against the others with profiles
// labelled per task.
func TestAppsAndSlowVsRest(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	if code := importFile(t, ts, url.Values{"path": {"local-1532512550423"}}, corpus.Read(t, "eventlogs", "sparklens", "local-1532512550423")); code != 200 {
		t.Fatalf("import: %d", code)
	}
	var apps []query.AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps)
	if len(apps) != 1 || apps[0].ID != "local-1532512550423" || apps[0].TaskCount != 8 || apps[0].Status != "finished" {
		t.Fatalf("apps %+v", apps)
	}
	var app struct {
		Stages []struct{ StageID int }
		Tasks  []struct {
			TaskID             int64
			StageID            int
			LaunchMs, FinishMs int64
		}
	}
	getJSON(t, ts, "/api/v1/apps/local-1532512550423", &app)
	if len(app.Stages) != 2 || len(app.Tasks) != 8 {
		t.Fatalf("app detail: %d stages, %d tasks", len(app.Stages), len(app.Tasks))
	}
	// The UI's brief tasks: the same tasks, what a timeline draws, without
	// their metrics.
	var full, brief struct{ Tasks []map[string]any }
	getJSON(t, ts, "/api/v1/apps/local-1532512550423", &full)
	getJSON(t, ts, "/api/v1/apps/local-1532512550423?tasks=brief", &brief)
	if len(brief.Tasks) != 8 || len(brief.Tasks[0]) != 7 || brief.Tasks[0]["metrics"] != nil ||
		brief.Tasks[3]["taskId"] != full.Tasks[3]["taskId"] || brief.Tasks[3]["finishMs"] != full.Tasks[3]["finishMs"] {
		t.Errorf("brief tasks %v, full %v", brief.Tasks, full.Tasks)
	}
	resp, err := http.Get(ts.URL + "/api/v1/apps/local-1532512550423?tasks=some")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("tasks=some: %d, want 400", resp.StatusCode)
	}
	// One profile per task of stage 0; the slowest task runs "slow".
	var slowest int64 = -1
	var longest int64
	for _, tk := range app.Tasks {
		if tk.StageID == 0 && tk.FinishMs-tk.LaunchMs > longest {
			slowest, longest = tk.TaskID, tk.FinishMs-tk.LaunchMs
		}
	}
	for _, tk := range app.Tasks {
		if tk.StageID != 0 {
			continue
		}
		body := "main;fast 10\n"
		if tk.TaskID == slowest {
			body = "main;slow 30\n"
		}
		name := fmt.Sprintf("app{spark_app_id=local-1532512550423,spark_stage_id=0,spark_task_id=%d}", tk.TaskID)
		if code := post(t, ts, url.Values{"name": {name}}, "", []byte(body)); code != 200 {
			t.Fatal(code)
		}
	}
	var d struct {
		Flamebearer           query.Flamebearer
		LeftTicks, RightTicks int64
		SlowTaskIDs           []int64 `json:"slowTaskIds"`
		RestTasks             int
		ThresholdMs           int64
	}
	getJSON(t, ts, "/api/v1/apps/local-1532512550423/stages/0/slow-vs-rest?percent=10&type=samples", &d)
	if d.RightTicks != 30 || d.LeftTicks != 30 || !contains(d.Flamebearer.Names, "slow") {
		t.Errorf("slow-vs-rest: left %d right %d names %v; want the slow task (30) against 3 typical tasks (30)", d.LeftTicks, d.RightTicks, d.Flamebearer.Names)
	}
	if fmt.Sprint(d.SlowTaskIDs) != fmt.Sprint([]int64{slowest}) || d.RestTasks != 3 || d.ThresholdMs != longest {
		t.Errorf("slow-vs-rest: slow tasks %v, %d others, threshold %d ms; want [%d], 3, %d", d.SlowTaskIDs, d.RestTasks, d.ThresholdMs, slowest, longest)
	}
	// Nearly all tasks slow still leaves one to compare with.
	d.SlowTaskIDs = nil
	getJSON(t, ts, "/api/v1/apps/local-1532512550423/stages/0/slow-vs-rest?percent=99&type=samples", &d)
	if len(d.SlowTaskIDs) != 3 || d.RestTasks != 1 {
		t.Errorf("99 %%: %d slow tasks, %d others; want 3 and 1", len(d.SlowTaskIDs), d.RestTasks)
	}
	resp, _ = http.Get(ts.URL + "/apps/local-1532512550423/report")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte(`"data-testid":"timeline"`)) {
		t.Errorf("report page: %d", resp.StatusCode)
	}
	resp, _ = http.Get(ts.URL + "/api/v1/apps/nope")
	if resp.StatusCode != 404 {
		t.Errorf("unknown app: %d", resp.StatusCode)
	}
}
