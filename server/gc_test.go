package server

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/url"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// TestGCPart uploads a real async-profiler JFR with the agent's gc part and
// reads the collections back as the JFR's own GC events would be: a
// jvm.gc.pause series per collector, in nanoseconds, from the store, from
// /api/v1/metrics before and after compaction, and on the app's page.
func TestGCPart(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	if code := importFile(t, ts, url.Values{"path": {"local-1532512550423"}}, corpus.Read(t, "eventlogs", "sparklens", "local-1532512550423")); code != 200 {
		t.Fatalf("import: %d", code)
	}
	upload := func(gc string) int {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		w, _ := mw.CreateFormFile("jfr", "jfr")
		w.Write(corpus.Read(t, "jfr", "dump1.jfr.gz"))
		w, _ = mw.CreateFormFile("gc", "gc")
		w.Write([]byte(gc))
		mw.Close()
		return post(t, ts, url.Values{"name": {"app{spark_app_id=local-1532512550423,spark_executor_id=3}"}, "format": {"jfr"}, "from": {"1700000000"}, "until": {"1700000010"}}, mw.FormDataContentType(), b.Bytes())
	}
	gc := `{"name":"G1 Young Generation","cause":"G1 Evacuation Pause","startMs":1700000000123,"durationMs":4}
{"name":"G1 Young Generation","cause":"G1 Evacuation Pause","startMs":1700000002000,"durationMs":7}
{"name":"G1 Old Generation","cause":"System.gc()","startMs":1700000003000,"durationMs":31}
`
	if code := upload(gc); code != 200 {
		t.Fatalf("upload with a gc part: %d", code)
	}
	if code := upload("{\"name\":\"G1 Young Generation\"}\n"); code != 400 {
		t.Errorf("gc part without times: %d, want 400", code)
	}
	got := map[string][]profile.Point{}
	err := db.Select("", store.Query{}, func(u *store.Upload) error {
		for _, s := range u.Profile.Series {
			if s.Name == "jvm.gc.pause" && s.Unit == "nanoseconds" {
				name, _ := s.Labels.Get("gc")
				got[name] = append(got[name], s.Points...)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	young, old := got["G1 Young Generation"], got["G1 Old Generation"]
	if len(got) != 2 || len(young) != 2 || len(old) != 1 {
		t.Fatalf("series %v; want 2 young and 1 old collections", got)
	}
	if young[0] != (profile.Point{Time: 1700000000123e6, Value: 4e6}) || old[0] != (profile.Point{Time: 1700000003000e6, Value: 31e6}) {
		t.Errorf("points young %v old %v", young, old)
	}

	var m struct{ Series []metricSeries }
	for _, compacted := range []bool{false, true} {
		if compacted {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		getJSON(t, ts, "/api/v1/metrics?"+url.Values{"query": {`{spark_executor_id="3"}`}, "name": {"jvm.gc.pause"}}.Encode(), &m)
		var names []string
		for _, s := range m.Series {
			names = append(names, fmt.Sprintf("%s %s %v", s.Labels["gc"], s.Labels["spark_app_id"], s.Points))
		}
		want := "[G1 Old Generation local-1532512550423 [[1.700000003e+12 3.1e+07]] " +
			"G1 Young Generation local-1532512550423 [[1.700000000123e+12 4e+06] [1.700000002e+12 7e+06]]]"
		if fmt.Sprint(names) != want {
			t.Errorf("compacted %v: metrics %v, want %s", compacted, names, want)
		}
	}
	getJSON(t, ts, "/api/v1/metrics?"+url.Values{"query": {`{spark_executor_id="4"}`}}.Encode(), &m)
	if len(m.Series) != 0 {
		t.Errorf("another executor's metrics: %+v", m.Series)
	}
	getJSON(t, ts, "/api/v1/metrics?"+url.Values{"query": {`{spark_executor_id="3"}`}, "from": {"1700000001"}, "until": {"1700000003"}}.Encode(), &m)
	if len(m.Series) != 1 || len(m.Series[0].Points) != 1 || m.Series[0].Points[0][1] != 7e6 {
		t.Errorf("metrics from 1700000001 until 1700000003: %+v, want the one young collection at 1700000002", m.Series)
	}

	var app struct{ Metrics []analysis.Series }
	getJSON(t, ts, "/api/v1/apps/local-1532512550423", &app)
	pauses := 0
	for _, s := range app.Metrics {
		if s.Name == "jvm.gc.pause" && s.ExecutorID == "3" {
			pauses += len(s.Points)
		}
	}
	if pauses != 3 {
		t.Errorf("the app's page shows %d GC pauses of executor 3, want 3: %+v", pauses, app.Metrics)
	}
}
