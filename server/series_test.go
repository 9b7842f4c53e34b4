package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// TestSampleSeries checks /api/v1/series, which sums the selected samples
// as it reads them, against the sums of the same samples merged into one
// profile first (sumPerStep, as Pyroscope's render sums them): by label or
// not, per type, thread state and range, with a step widened to 5,000
// points, over uploads in the head and in blocks, whole and cut into time
// slices; and Grafana's SelectSeries (several labels, samples without a
// time at their upload) against the merge it made before.
func TestSampleSeries(t *testing.T) {
	base, err := format.Load(corpus.Path(t, "jfr", "dump2.jfr.gz"), format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	paths := seriesPaths(start)
	for _, span := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprintf("span=%v", span), func(t *testing.T) {
			db, err := store.Open(t.TempDir(), store.Options{Partition: span})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			s := newServer(t, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			for w := range 6 {
				for e := range 4 {
					u := synth.Upload(base, start, e, w, 6)
					if e == 3 {
						// Samples without a time, as folded and pprof
						// uploads have.
						for i := range u.Profile.Samples {
							u.Profile.Samples[i].Time = 0
						}
					}
					if err := db.Append("", u); err != nil {
						t.Fatal(err)
					}
				}
			}
			check := func(when string) {
				for _, path := range paths {
					r := httptest.NewRequest("GET", path, nil)
					w := httptest.NewRecorder()
					s.ServeHTTP(w, r)
					if w.Code != 200 {
						t.Fatalf("%s: %d %s", path, w.Code, w.Body)
					}
					var got seriesAnswer
					if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
						t.Fatal(err)
					}
					want := mergedSeries(t, s, r)
					g, _ := json.Marshal(got)
					m, _ := json.Marshal(want)
					if string(g) != string(m) {
						t.Errorf("%s, %s:\n got  %.400s\n want %.400s", when, path, g, m)
					}
					if len(got.Series) == 0 || got.Untimed == 0 && !strings.Contains(path, "from=") {
						t.Errorf("%s, %s: %d series, %d untimed", when, path, len(got.Series), got.Untimed)
					}
				}
			}
			// Grafana's SelectSeries: several labels, and samples without a
			// time at their upload's start, as the merge with a resolution
			// put them.
			checkGrafana := func(when string) {
				for _, by := range [][]string{nil, {"spark_executor_id", "spark_stage_id"}} {
					req := query.NewRequest(nil, "wall", 0, 0)
					sum, err := s.query.Sum(t.Context(), "", req, query.Sums{Step: 10 * time.Second, By: by, UntimedAtUpload: true})
					if err != nil {
						t.Fatal(err)
					}
					got := sum.Series
					ref := req
					if len(by) == 0 {
						ref.Keep = query.KeepNone
					}
					p := mergeWithTimes(t, s, ref, int64(10*time.Second))
					want, _, _ := sumPerStep(p, query.SampleType(p, "wall"), 10*time.Second, by, 0, 0)
					if fmt.Sprint(got) != fmt.Sprint(want) || len(got) == 0 {
						t.Errorf("%s, by %v:\n got  %.300v\n want %.300v", when, by, got, want)
					}
				}
			}
			check("head")
			checkGrafana("head")
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			check("blocks")
			checkGrafana("blocks")
		})
	}
}

// seriesPaths are the series requests TestSampleSeries checks over the
// synthetic app that starts at start (Unix ns).
func seriesPaths(start int64) []string {
	sec := func(s int) string { return strconv.FormatInt(start+int64(s)*int64(time.Second), 10) }
	// A dashboard's range, its bounds between seconds: the uploads it
	// holds whole are read from their timelines, those it cuts from
	// their samples.
	between := func(s int) string { return strconv.FormatInt(start+int64(s)*int64(time.Second)+123456789, 10) }
	justAfter := func(s int) string { return strconv.FormatInt(start+int64(s)*int64(time.Second)+1, 10) }
	app := url.QueryEscape(`{spark_app_id="app-bench"}`)
	return []string{
		"/api/v1/series?by=spark_executor_id&step=10s&query=" + app,
		"/api/v1/series?by=spark_executor_id&step=7s&type=wall&query=" + app,
		"/api/v1/series?by=spark_stage_id&step=1s&type=wall&state=SLEEPING&query=" + app,
		"/api/v1/series?by=spark_task_id&step=3s&from=" + sec(17) + "&until=" + sec(44) + "&query=" + url.QueryEscape(`{spark_executor_id="1"}`),
		"/api/v1/series?step=1ms&type=alloc&query=" + app,
		"/api/v1/series?by=thread_name&step=20s&query=" + url.QueryEscape(`{spark_stage_id="1"}`),
		"/api/v1/series?by=spark_executor_id&step=10s&from=" + between(15) + "&until=" + between(52) + "&query=" + app,
		"/api/v1/series?step=10s&type=wall&from=" + between(-5) + "&until=" + between(200) + "&query=" + app,
		"/api/v1/series?by=spark_executor_id&step=10s&from=" + justAfter(20) + "&until=" + between(200) + "&query=" + app,
	}
}

// mergedSeries answers series request r by merging the selected samples
// into one profile and summing them per step there.
func mergedSeries(t *testing.T, s *Server, r *http.Request) seriesAnswer {
	t.Helper()
	req, err := query.ParseRequest(r.URL.Query(), "query")
	if err != nil {
		t.Fatal(err)
	}
	p := mergeWithTimes(t, s, req, 0)
	step, err := time.ParseDuration(r.URL.Query().Get("step"))
	if err != nil {
		t.Fatal(err)
	}
	by := r.URL.Query().Get("by")
	var byLabels []string
	if by != "" {
		byLabels = []string{by}
	}
	typ := query.SampleType(p, req.Type)
	ans := seriesAnswer{Type: typ, By: by}
	series, untimed, step := sumPerStep(p, typ, step, byLabels, 0, 0)
	ans.Untimed, ans.StepMs = untimed, step.Milliseconds()
	for _, ss := range series {
		vs := valueSeries{Points: ss.Points}
		if by != "" {
			vs.Key = ss.Labels[0]
		}
		ans.Series = append(ans.Series, vs)
	}
	return ans
}

// mergeWithTimes merges the samples req selects into one profile, read
// from every upload's samples, with their times: all of them (res 0), or
// to res nanoseconds, with samples without a time at their upload's
// start, as Pyroscope's timeline puts them: each upload's samples, with
// its labels, joined to their tasks' windows and filtered, as the query
// engine reads them without its shortcuts (rollups, timelines, narrowed
// ranges). It is the reference series are checked against.
func mergeWithTimes(t *testing.T, s *Server, req query.Request, res int64) *profile.Profile {
	t.Helper()
	m := profile.NewMerger(profile.MergeOptions{Aggregate: res != 0, Resolution: res, DropLabels: req.Keep == query.KeepNone, DropThreads: req.Keep == query.KeepNone})
	tasksOf := func(app, attempt string) map[int64]*spark.Task { return s.apps.Tasks("", app, attempt) }
	err := s.cfg.Store.Select("", req.Query, func(u *store.Upload) error {
		stored, err := u.Load()
		if err != nil {
			return err
		}
		p := *stored
		p.Labels = p.Labels.Merge(u.Labels)
		join, keep := attribution.NewJoiner(&p, tasksOf), req.Filter.Selector(&p)
		m.AddFunc(&p, func(smp *profile.Sample) bool {
			join(smp)
			if !keep(smp) {
				return false
			}
			if smp.Time == 0 && res != 0 {
				smp.Time = u.From
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m.Profile()
}

// sumPerStep, the reference query.Engine.Sum is checked against, sums p's samples of type t per time step, one series per
// combination of the values of the labels by ("" where a sample lacks
// one), ordered by those values. The step is widened to keep the span
// from–until (Unix ns; an open end is the samples' first or last time)
// under query.MaxSteps points; samples without a time add up in untimed.
func sumPerStep(p *profile.Profile, t profile.SampleType, step time.Duration, by []string, from, until int64) (series []query.StepSeries, untimed int64, widened time.Duration) {
	id, ok := p.TypeIndex(t)
	if !ok {
		return nil, 0, step
	}
	lo, hi := from, until
	for _, smp := range p.Samples {
		if smp.Type == id && smp.Time > 0 {
			if from == 0 && (lo == 0 || smp.Time < lo) {
				lo = smp.Time
			}
			if until == 0 {
				hi = max(hi, smp.Time)
			}
		}
	}
	if span := time.Duration(hi - lo); span/step > query.MaxSteps {
		step = (span/query.MaxSteps + time.Second - 1).Truncate(time.Second)
	}
	type group struct {
		labels []string
		sums   map[int64]int64
	}
	groups := map[string]*group{}
	for _, smp := range p.Samples {
		if smp.Type != id {
			continue
		}
		if smp.Time == 0 {
			untimed += smp.Value
			continue
		}
		labels := make([]string, len(by))
		for i, name := range by {
			labels[i] = labelOrState(p, smp, name)
		}
		key := strings.Join(labels, "\x00")
		g := groups[key]
		if g == nil {
			g = &group{labels: labels, sums: map[int64]int64{}}
			groups[key] = g
		}
		g.sums[smp.Time/int64(step)*int64(step)] += smp.Value
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		ss := query.StepSeries{Labels: g.labels}
		for at, v := range g.sums {
			ss.Points = append(ss.Points, [2]int64{at / 1e6, v})
		}
		slices.SortFunc(ss.Points, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		series = append(series, ss)
	}
	return series, untimed, step
}

// TestAppSeriesAmongOtherUploads: the app page's series of one app (no
// range given) keeps the step it asks for when the store also holds
// uploads of other times whose samples carry no app id: their times do
// not widen the step, which a range spanning years did (one point per 12
// hours for an 18-minute app, the demo's ProfileStraggler).
func TestAppSeriesAmongOtherUploads(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	for _, f := range []struct {
		app, kind string
		rel       []string
	}{
		// The console log makes the app, whose id the stacks then get.
		{"ProfileStraggler", "logs", []string{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"}},
		{"ProfileStraggler", "", []string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}},
		{"", "", []string{"jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"}}, // 2023
		{"", "", []string{"jfr", "FastSlow_2024_01_16_180855.jfr.gz"}},                  // 2024
	} {
		q := url.Values{"path": {strings.TrimSuffix(f.rel[len(f.rel)-1], ".gz")}, "app": {f.app}, "kind": {f.kind}}
		if code := importFile(t, ts, q, corpus.Read(t, f.rel...)); code != 200 {
			t.Fatalf("import %s: %d", f.rel[len(f.rel)-1], code)
		}
	}
	var ans seriesAnswer
	getJSON(t, ts, "/api/v1/series?by=spark_executor_id&step=5s&query="+url.QueryEscape(`{spark_app_id="ProfileStraggler"}`), &ans)
	var total int64
	for _, s := range ans.Series {
		for _, pt := range s.Points {
			total += pt[1]
		}
	}
	if ans.StepMs != 5000 || total != 47473 {
		t.Errorf("series: step %d ms, %d samples; want 5,000 ms and the app's 47,473", ans.StepMs, total)
	}
}

// labelOrState returns the value of label name of sample smp of p, its
// thread state for "state", and for thread_name, which a sample may lack,
// the name of its thread.
func labelOrState(p *profile.Profile, smp profile.Sample, name string) string {
	switch v := p.Label(smp, name); {
	case name == "state":
		return smp.State.String()
	case v == "" && name == profile.LabelThreadName && int(smp.Thread) < len(p.Threads):
		return p.Threads[smp.Thread].Name
	default:
		return v
	}
}
