package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/query"
)

// TestJobsAndCompare imports a real event log and a later, twice as slow
// run of it: the jobs list has both runs of their job in order, the
// comparison matches every stage and splits the change, the later run
// has the regression finding, and bad parameters are refused.
func TestJobsAndCompare(t *testing.T) {
	th := analysis.DefaultThresholds
	th.RegressionMinMs = 1000
	ts, _ := newTestServer(t, Config{Thresholds: th})
	const first, later = "local-1532512550423", "local-1532512550424"
	log := corpus.Read(t, "eventlogs", "sparklens", first)
	for _, f := range []struct {
		name string
		data []byte
	}{{first, log}, {later, synth.LaterRun(log, first, later, 2)}} {
		if code := importFile(t, ts, url.Values{"path": {f.name}}, f.data); code != 200 {
			t.Fatalf("import %s: %d", f.name, code)
		}
	}
	var jobs []query.JobRuns
	getJSON(t, ts, "/api/v1/jobs?priceCoreHour=0.05", &jobs)
	if len(jobs) != 1 || len(jobs[0].Runs) != 2 || jobs[0].Runs[0].AppID != first || jobs[0].Runs[1].AppID != later {
		t.Fatalf("jobs %+v, want one of two runs, %s then %s", jobs, first, later)
	}
	if r := jobs[0].Runs[1]; r.Cost.CoreHours <= 0 || r.Cost.Price == nil || *r.Cost.Price != round4(r.Cost.CoreHours*0.05) {
		t.Errorf("cost %+v at 0.05 a core-hour", r.Cost)
	}
	var c query.Comparison
	getJSON(t, ts, "/api/v1/compare?new="+later, &c)
	if c.Old.AppID != first || c.DurationRatio < 1.99 || c.DurationRatio > 2.01 || len(c.Stages) != 2 {
		t.Fatalf("compare: old %s, ratio %v, %d stages", c.Old.AppID, c.DurationRatio, len(c.Stages))
	}
	var sum int64
	for _, k := range c.Causes {
		sum += k.ChangeMs
	}
	if sum != c.ChangeMs {
		t.Errorf("causes add up to %d ms of %d", sum, c.ChangeMs)
	}
	for _, s := range c.Stages {
		if s.Old == nil || s.New == nil || s.Old.ID != s.New.ID || s.Confidence != 1 {
			t.Errorf("stage %+v matched to %+v at %v", s.New, s.Old, s.Confidence)
		}
	}
	var app struct {
		Findings []struct{ Kind analysis.Kind }
	}
	getJSON(t, ts, "/api/v1/apps/"+later+"?tasks=none", &app)
	if !hasKind(app.Findings, analysis.KindRegression) {
		t.Errorf("the later run's findings %v have no regression", app.Findings)
	}
	getJSON(t, ts, "/api/v1/apps/"+first+"?tasks=none", &app)
	if hasKind(app.Findings, analysis.KindRegression) {
		t.Error("the first run regressed from nothing")
	}
	for q, want := range map[string]string{
		"":                                   "new:",
		"?new=" + first:                      "first run",
		"?new=nope":                          "no application",
		"?new=" + later + "&priceCoreHour=x": "priceCoreHour",
	} {
		resp, err := http.Get(ts.URL + "/api/v1/compare" + q)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error string }
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode < 400 || !strings.Contains(e.Error, want) {
			t.Errorf("compare%s: %d %q, want an error saying %q", q, resp.StatusCode, e.Error, want)
		}
	}
}

func hasKind(fs []struct{ Kind analysis.Kind }, k analysis.Kind) bool {
	for _, f := range fs {
		if f.Kind == k {
			return true
		}
	}
	return false
}

func round4(f float64) float64 { return float64(int64(f*1e4+0.5)) / 1e4 }
