package server

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// importFile posts one file to /api/v1/import and returns the status.
func importFile(t *testing.T, ts *httptest.Server, q url.Values, data []byte) int {
	t.Helper()
	resp, err := http.Post(ts.URL+"/api/v1/import?"+q.Encode(), "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Phil's straggler riddle as one app: the console log (no event log), the
// Uber CPU/memory records and the Uber stacks, imported as files.
func TestImportContainerLogApp(t *testing.T) {
	dir := t.TempDir()
	ts, db := newTestServer(t, Config{EventLogDir: dir})
	files := []struct {
		path, kind string
		rel        []string
	}{
		{"JobStraggler.log", "logs", []string{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"}},
		{"CpuAndMemory.json", "", []string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz"}},
		{"Stacktrace.json", "", []string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}},
	}
	for _, f := range files {
		q := url.Values{"path": {f.path}, "app": {"ProfileStraggler"}, "kind": {f.kind}}
		if code := importFile(t, ts, q, corpus.Read(t, f.rel...)); code != 200 {
			t.Fatalf("import %s: %d", f.path, code)
		}
	}
	var detail struct {
		App struct {
			ID, Name, SparkVersion string
		}
		Findings []struct {
			Kind, Message string
			Evidence      struct{ Profile analysis.Hotspot }
		}
		Metrics         []struct{ Name string }
		Tasks           []struct{}
		Recommendations []struct {
			Pattern, Focus string
			Share          float64
		}
	}
	getJSON(t, ts, "/api/v1/apps/ProfileStraggler", &detail)
	// The app page recommends on the app's samples in the store: its task
	// thread's time is all in List appends, as the offline analysis says
	// (analysis.TestPatternsShares).
	if rs := detail.Recommendations; len(rs) != 1 || rs[0].Pattern != "list-append" || rs[0].Share < 0.99 || rs[0].Focus == "" {
		t.Errorf("recommendations %+v, want list-append on the task thread's samples", rs)
	}
	if detail.App.Name != "Profile Straggler" || detail.App.SparkVersion != "2.4.0" || len(detail.Tasks) != 3 {
		t.Errorf("app = %+v with %d tasks, want Profile Straggler, Spark 2.4.0, 3 tasks", detail.App, len(detail.Tasks))
	}
	if len(detail.Metrics) == 0 || len(detail.Findings) == 0 || detail.Findings[0].Kind != "straggler" {
		t.Fatalf("metrics %d, findings %+v: want CPU/memory series and the straggler first", len(detail.Metrics), detail.Findings)
	}
	// The straggler says where task 0's samples in the store went, as the
	// offline analysis of the same files does (analysis.TestStragglerHotspot).
	want := analysis.Hotspot{Type: "samples", Samples: 1069, Leaf: "scala.collection.TraversableOnce$class.nonEmpty", Share: 0.79,
		Code: "profile.sparkjobs.JobStraggler$$anonfun$3$$anonfun$apply$1.apply$mcVJ$sp"}
	if got := detail.Findings[0].Evidence.Profile; got != want {
		t.Errorf("straggler's profile %+v, want %+v (message %q)", got, want, detail.Findings[0].Message)
	}
	// So does the app's HTML report.
	resp, err := http.Get(ts.URL + "/apps/ProfileStraggler/report")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(page, []byte("of its 1069 stack samples end in scala.collection.TraversableOnce$class.nonEmpty")) {
		t.Errorf("the report does not say where the straggler's samples went")
	}
	// The stacks carry the app id, so the app's flame graph has all of them.
	r := render(t, ts, `{spark_app_id="ProfileStraggler"}`, "")
	if r.Type != "samples" || r.Flamebearer.NumTicks != 47473 {
		t.Errorf("app flame graph: %s, %d ticks; want samples, 47,473", r.Type, r.Flamebearer.NumTicks)
	}
	checkStragglerTasks(t, ts, db)
	// Restarted on the same directories, the app is analysed again.
	ts2 := httptest.NewServer(newServer(t, Config{Store: db, EventLogDir: dir}))
	defer ts2.Close()
	getJSON(t, ts2, "/api/v1/apps/ProfileStraggler", &detail)
	if detail.App.Name != "Profile Straggler" || len(detail.Metrics) == 0 {
		t.Errorf("after restart: %+v, %d metric series", detail.App, len(detail.Metrics))
	}
}

// checkStragglerTasks checks the riddle's tasks as ts serves them: the
// straggler against the others, and each task's samples joined to the
// app's task windows, in the head and compacted in db.
func checkStragglerTasks(t *testing.T, ts *httptest.Server, db *store.DB) {
	t.Helper()
	// The straggler (task 0) against tasks 1 and 2, by task id alone:
	// Spark 2.4 thread names carry no stage.
	var diff struct{ LeftTicks, RightTicks int64 }
	getJSON(t, ts, "/api/v1/apps/ProfileStraggler/stages/0/slow-vs-rest?percent=34", &diff)
	task0 := render(t, ts, `{spark_task_id="0"}`, "samples").Flamebearer.NumTicks
	if diff.RightTicks != int64(task0) || task0 < 1000 {
		t.Errorf("slow-vs-rest right = %d, task 0 alone = %d", diff.RightTicks, task0)
	}
	// Joined to the app's task windows: task 1's thread keeps its name for
	// 59 s after the task ended (183 samples on the thread, 124 while the
	// 122.8 s task ran), and every task sample gets its stage. Compacted
	// into a block, sample times are kept to a second, so a sample or two
	// near a task's start or end may change side; the app total may not.
	for _, c := range []struct {
		name  string
		slack int64
	}{{"head", 0}, {"compacted", 2}} {
		if c.name == "compacted" {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		if n := render(t, ts, `{spark_task_id="1"}`, "samples").Flamebearer.NumTicks; abs(n-124) > c.slack {
			t.Errorf("%s: task 1: %d samples, want the 124 taken while it ran", c.name, n)
		}
		if n := render(t, ts, `{spark_stage_id="0"}`, "samples").Flamebearer.NumTicks; abs(n-1334) > c.slack {
			t.Errorf("%s: stage 0: %d samples, want 1,334 (tasks 0, 1, 2 while they ran)", c.name, n)
		}
		if n := render(t, ts, `{spark_app_id="ProfileStraggler"}`, "").Flamebearer.NumTicks; n != 47473 {
			t.Errorf("%s: app: %d samples, want 47,473", c.name, n)
		}
	}
}

// riddleServer is a test server holding the straggler riddle's Uber stacks
// as app "riddle" (no app model: no join to task windows).
func riddleServer(t *testing.T) *httptest.Server {
	t.Helper()
	ts, _ := newTestServer(t, Config{EventLogDir: t.TempDir()})
	data := corpus.Read(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	if code := importFile(t, ts, url.Values{"path": {"Stacktrace.json"}, "app": {"riddle"}}, data); code != 200 {
		t.Fatal(code)
	}
	return ts
}

// The thread-state split of the straggler riddle's stacks equals the
// counts the corpus README gives for the file.
func TestBreakdownByState(t *testing.T) {
	ts := riddleServer(t)
	var got struct {
		Total int64
		Rows  []struct {
			Keys  []string
			Value int64
		}
	}
	getJSON(t, ts, "/api/v1/breakdown?"+url.Values{"query": {`{service_name="riddle"}`}, "by": {"state"}}.Encode(), &got)
	want := map[string]int64{"WAITING": 24459, "RUNNABLE": 12082, "TIMED_WAITING": 10928, "BLOCKED": 4}
	for _, r := range got.Rows {
		if w, ok := want[r.Keys[0]]; ok && w != r.Value {
			t.Errorf("%s = %d, want %d", r.Keys[0], r.Value, w)
		}
		delete(want, r.Keys[0])
	}
	if len(want) > 0 || got.Total != 47473 {
		t.Errorf("missing states %v; total %d, want 47,473", want, got.Total)
	}
	for _, bad := range []string{"by=", "by=state&state=RUNNING_FAST"} {
		resp, _ := http.Get(ts.URL + "/api/v1/breakdown?" + bad)
		if resp.StatusCode != 400 {
			t.Errorf("%s: %d, want 400", bad, resp.StatusCode)
		}
		resp.Body.Close()
	}
}

// The straggler's task thread is sampled for the whole job, the other
// tasks' threads only for their first minutes; all samples are counted.
func TestSeries(t *testing.T) {
	ts := riddleServer(t)
	var all struct {
		StepMs  int64
		Untimed int64
		Series  []struct {
			Key    string
			Points [][2]int64
		}
	}
	getJSON(t, ts, "/api/v1/series?"+url.Values{"query": {`{service_name="riddle"}`}, "step": {"1m"}}.Encode(), &all)
	var sum int64
	for _, p := range all.Series[0].Points {
		sum += p[1]
	}
	if all.StepMs != 60000 || sum+all.Untimed != 47473 {
		t.Errorf("step %d ms, %d samples in points + %d untimed; want 60000 ms, 47,473", all.StepMs, sum, all.Untimed)
	}
	getJSON(t, ts, "/api/v1/series?"+url.Values{"query": {`{service_name="riddle", spark_task_id=~"0|1"}`}, "step": {"1m"}, "by": {"spark_task_id"}}.Encode(), &all)
	span := map[string]int64{}
	for _, s := range all.Series {
		span[s.Key] = s.Points[len(s.Points)-1][0] - s.Points[0][0]
	}
	if len(all.Series) != 2 || span["0"] < 17*60000 || span["1"] > 4*60000 {
		t.Errorf("task spans %v ms; want task 0 over 17 min, task 1 under 4", span)
	}
	resp, _ := http.Get(ts.URL + "/api/v1/series?step=-1s")
	if resp.StatusCode != 400 {
		t.Errorf("negative step: %d", resp.StatusCode)
	}
	resp.Body.Close()
}

// Files that are neither event logs, container logs nor profiles are
// refused and create no app.
func TestImportRefusesGarbage(t *testing.T) {
	ts, _ := newTestServer(t, Config{EventLogDir: t.TempDir()})
	for _, kind := range []string{"", "logs"} {
		q := url.Values{"path": {"notes.bin"}, "kind": {kind}, "app": {"x"}}
		if code := importFile(t, ts, q, []byte("\x00\x01binary, not a log\nsecond line\n")); code != 422 {
			t.Errorf("kind %q: %d, want 422", kind, code)
		}
	}
	var apps []query.AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps)
	if len(apps) != 0 {
		t.Errorf("%d apps after refused imports", len(apps))
	}
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// A JFR imported with its LabelsSnapshot, multipart as Pyroscope's agent
// sends them, gets the snapshot's labels; a corrupt snapshot is refused
// with 422 and nothing stored.
func TestImportJFRWithLabels(t *testing.T) {
	ts, db := newTestServer(t, Config{EventLogDir: t.TempDir()})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	post := func(labels []byte) (int, string) {
		t.Helper()
		ct, body := multipartJFR(t, jfr, labels)
		resp, err := http.Post(ts.URL+"/api/v1/import?path=dump1.jfr.gz", ct, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(msg)
	}
	if code, msg := post([]byte("\x1f\x8bnot gzip")); code != 422 || !strings.Contains(msg, "labels") {
		t.Errorf("corrupt labels: %d %s, want 422 naming the labels", code, msg)
	}
	if n := db.Stats().HeadUploads; n != 0 {
		t.Errorf("%d uploads stored after a refused import", n)
	}
	if code, msg := post(corpus.Read(t, "jfr", "dump1.labels.pb.gz")); code != 200 {
		t.Fatalf("import: %d %s", code, msg)
	}
	var threads []string
	getJSON(t, ts, "/api/v1/label-values?name=thread_name", &threads)
	// dump1's four labelled contexts (README of the corpus).
	if strings.Join(threads, " ") != "pool-2-thread-1 pool-2-thread-3 pool-2-thread-5 pool-2-thread-7" {
		t.Errorf("thread_name values %v, want the snapshot's four", threads)
	}
}

// Event logs and container logs imported as such stream to disk: the body
// limit of uploads does not apply, their own does, and a refused log leaves
// nothing behind.
func TestImportLogsStream(t *testing.T) {
	eventLog := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	driverLog := corpus.Read(t, "applogs", "nvidia", "driverlog")
	for _, tt := range []struct {
		name, kind, app string
		data            []byte
		maxBody, maxLog int64
		want            int
	}{
		{"event log over the body limit", "eventlog", "local-1642039451826", eventLog, int64(len(eventLog)) / 10, 0, 200},
		{"event log over its limit", "eventlog", "", eventLog, 0, int64(len(eventLog)) / 10, 413},
		{"container log over the body limit", "logs", "driverlog", driverLog, int64(len(driverLog)) / 10, 0, 200},
		{"container log over its limit", "logs", "", driverLog, 0, int64(len(driverLog)) / 10, 413},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ts, _ := newTestServer(t, Config{EventLogDir: dir, MaxBodyBytes: tt.maxBody, MaxLogBytes: tt.maxLog})
			q := url.Values{"path": {"driverlog"}, "kind": {tt.kind}}
			if tt.kind == "eventlog" {
				q.Set("path", "local-1642039451826")
			}
			resp, err := http.Post(ts.URL+"/api/v1/import?"+q.Encode(), "application/octet-stream", bytes.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("%d %s, want %d", resp.StatusCode, msg, tt.want)
			}
			var apps []query.AppSummary
			getJSON(t, ts, "/api/v1/apps", &apps)
			var files []string
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					files = append(files, p)
				}
				return err
			})
			if tt.want == 200 {
				if len(apps) != 1 || apps[0].ID != tt.app || len(files) != 1 {
					t.Errorf("apps %+v, files %q; want app %s and the log saved", apps, files, tt.app)
				}
				return
			}
			if !strings.Contains(string(msg), "--max-log-gb") || len(apps) != 0 || len(files) != 0 {
				t.Errorf("answer %s, apps %+v, files %q; want the limit named, no app, no file", msg, apps, files)
			}
		})
	}
}
