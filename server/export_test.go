package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gprofile "github.com/google/pprof/profile"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// Every export format holds what the flame graph does. A pprof export
// keeps the labels without a value per task or thread unless asked for
// all; it answers the same from the head, from a block, and once the app's
// task model moves samples to other stages.
func TestExport(t *testing.T) {
	base, db, s := testServer(t, store.Options{})
	start := synth.Start
	const windows, execs = 4, 2
	for w := range windows {
		for e := range execs {
			if err := db.Append("", synth.Upload(base, start, e, w, windows)); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := exportCase{t: t, s: s, app: url.QueryEscape(`{spark_app_id="app-bench"}`)}
	whole := c.ticks(`{spark_app_id="app-bench"}`)
	if whole == 0 {
		t.Fatal("the uploads hold no wall time")
	}
	if got := foldedTotal(t, c.export("format=folded")); got != whole {
		t.Errorf("folded export holds %d, the flame graph %d", got, whole)
	}
	var sc struct{ Profiles []struct{ Weights []float64 } }
	if err := json.Unmarshal(c.export("format=speedscope"), &sc); err != nil || len(sc.Profiles) != 1 {
		t.Fatalf("speedscope export: %v, %d profiles", err, len(sc.Profiles))
	}
	var scTotal float64
	for _, w := range sc.Profiles[0].Weights {
		scTotal += w
	}
	if int64(scTotal) != whole {
		t.Errorf("speedscope export holds %.0f, the flame graph %d", scTotal, whole)
	}
	if svg := c.export("format=svg"); !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("svg export is not an SVG: %.200s", svg)
	}
	for _, bad := range []struct{ params, param string }{{"format=xml", "format"}, {"format=pprof&labels=task", "labels"}} {
		if w := c.get("/api/v1/export?query=" + c.app + "&" + bad.params); w.Code != 400 || !strings.Contains(w.Body.String(), bad.param) {
			t.Errorf("%s: %d %s, want 400 naming %s", bad.params, w.Code, w.Body, bad.param)
		}
	}

	headCoarse, headAll := c.pprofExports("head", execs)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if coarse, all := c.pprofExports("block", execs); !maps.Equal(coarse, headCoarse) || !maps.Equal(all, headAll) {
		t.Error("the pprof exports changed at compaction")
	}

	// With the app's task model, a task's samples take its stage (here
	// 100 + the window): the block's rollup, whose samples have no tasks,
	// cannot answer.
	var tasks []*spark.Task
	for w := range windows {
		for e := range execs {
			launch := (start + int64(w)*int64(10*time.Second)) / 1e6
			for i := range len(base.Threads) {
				id := int64((w*synth.Executors+e)*len(base.Threads) + i)
				tasks = append(tasks, &spark.Task{ID: id, StageID: 100 + w, ExecutorID: strconv.Itoa(e), LaunchMs: launch, FinishMs: launch + 10_000})
			}
		}
	}
	s.apps.Put("", &analysis.Report{App: spark.Summary{ID: "app-bench"}, Tasks: tasks})
	coarse, _ := c.pprofExports("joined", execs)
	stages := map[string]bool{}
	for k := range coarse {
		stages[labelIn(k, profile.LabelStageID)] = true
	}
	if !stages["100"] || !stages["103"] || stages["0"] {
		t.Errorf("joined stages in the pprof export: %v, want 100–103", slices.Sorted(maps.Keys(stages)))
	}
}

// exportCase asks a server for the renders and exports of app's samples.
type exportCase struct {
	t   *testing.T
	s   *Server
	app string // a selector, escaped for a URL
}

func (c exportCase) get(path string) *httptest.ResponseRecorder {
	c.t.Helper()
	w := httptest.NewRecorder()
	c.s.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w
}

// ticks returns the wall time of the flame graph of query.
func (c exportCase) ticks(query string) int64 {
	c.t.Helper()
	var r renderResponse
	if w := c.get("/api/v1/render?type=wall&query=" + url.QueryEscape(query)); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &r) != nil {
		c.t.Fatalf("render %s: %d %s", query, w.Code, w.Body)
	}
	return r.Flamebearer.NumTicks
}

// export returns the export of the app's wall time with params.
func (c exportCase) export(params string) []byte {
	c.t.Helper()
	w := c.get("/api/v1/export?type=wall&query=" + c.app + "&" + params)
	if w.Code != 200 {
		c.t.Fatalf("export %s: %d %s", params, w.Code, w.Body)
	}
	return w.Body.Bytes()
}

// pprofExports returns what the pprof exports hold (without and with
// labels=all) by stack and labels, in any sample order, checking them
// against each other and the flame graph of each of the execs executors.
func (c exportCase) pprofExports(when string, execs int) (coarse, all map[string]int64) {
	t := c.t
	t.Helper()
	coarse, all = pprofSums(t, c.export("format=pprof")), pprofSums(t, c.export("format=pprof&labels=all"))
	byExec := map[string]int64{}
	for k, v := range coarse {
		for _, dropped := range append(slices.Clone(store.RollupDropped), pprof.LabelThreadID) {
			if strings.Contains(k, "\x00"+dropped+"=") {
				t.Fatalf("%s: a pprof export without labels=all keeps %s: %s", when, dropped, k)
			}
		}
		byExec[labelIn(k, profile.LabelExecutorID)] += v
	}
	for e := range execs {
		if want := c.ticks(fmt.Sprintf(`{spark_app_id="app-bench",spark_executor_id="%d"}`, e)); byExec[strconv.Itoa(e)] != want {
			t.Errorf("%s: executor %d holds %d in the pprof export, %d in its flame graph", when, e, byExec[strconv.Itoa(e)], want)
		}
	}
	if !strings.Contains(strings.Join(slices.Collect(maps.Keys(all)), "\n"), profile.LabelTaskID+"=") {
		t.Errorf("%s: labels=all drops the task ids", when)
	}
	// The coarse export is the full one with the per-task and per-thread
	// labels summed away.
	if got, want := coarse, coarsen(all); !maps.Equal(got, want) {
		t.Errorf("%s: the pprof export has %d rows, labels=all summed over tasks and threads %d; they differ", when, len(got), len(want))
	}
	return coarse, all
}

// foldedTotal sums the values of folded stacks.
func foldedTotal(t *testing.T, b []byte) int64 {
	t.Helper()
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		v, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		if err != nil {
			t.Fatalf("folded line %q: %v", line, err)
		}
		total += v
	}
	return total
}

// pprofSums reads a pprof export as the sum of its first value per stack
// and labels, each a row of the stack's functions joined by ";" and then
// its sorted labels "name=value", all separated by NUL bytes.
func pprofSums(t *testing.T, b []byte) map[string]int64 {
	t.Helper()
	p, err := gprofile.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("pprof export: %v", err)
	}
	out := map[string]int64{}
	for _, s := range p.Sample {
		var frames, ls []string
		for _, l := range s.Location {
			frames = append(frames, l.Line[0].Function.Name)
		}
		for n, vs := range s.Label {
			ls = append(ls, n+"="+strings.Join(vs, ","))
		}
		for n, vs := range s.NumLabel {
			ls = append(ls, fmt.Sprint(n, "=", vs))
		}
		slices.Sort(ls)
		out[strings.Join(append([]string{strings.Join(frames, ";")}, ls...), "\x00")] += s.Value[0]
	}
	return out
}

// coarsen sums pprofSums rows over the labels of store.RollupDropped and
// thread ids.
func coarsen(rows map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range rows {
		fields := strings.Split(k, "\x00")
		fields = slices.DeleteFunc(fields, func(f string) bool {
			name, _, _ := strings.Cut(f, "=")
			return name == pprof.LabelThreadID || slices.Contains(store.RollupDropped, name)
		})
		out[strings.Join(fields, "\x00")] += v
	}
	return out
}

// labelIn returns the value of label name in a pprofSums row.
func labelIn(row, name string) string {
	for _, f := range strings.Split(row, "\x00") {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v
		}
	}
	return ""
}

// A thread_name selector and a breakdown by thread_name read the names a
// JFR gives its samples' threads, before and after compaction.
func TestThreadName(t *testing.T) {
	base, db, s := testServer(t, store.Options{})
	start := synth.Start
	want := map[string]int64{} // wall time by thread name
	wall, _ := base.FindType("wall")
	for w := range 3 {
		u := synth.Upload(base, start, 0, w, 3)
		// Threads share a label set: a sample's thread decides its name.
		stage := u.Profile.AddLabels(profile.Labels{{Name: profile.LabelStageID, Value: "0"}})
		for i := range u.Profile.Samples {
			u.Profile.Samples[i].Labels = stage
		}
		typ := mustType(t, u.Profile, wall)
		for _, smp := range u.Profile.Samples {
			if smp.Type == typ {
				want[u.Profile.Threads[smp.Thread].Name] += smp.Value
			}
		}
		if err := db.Append("", u); err != nil {
			t.Fatal(err)
		}
	}
	var name string // the thread with the most wall time
	for n, v := range want {
		if n != "" && v > want[name] {
			name = n
		}
	}
	check := func(when string) {
		t.Helper()
		var r renderResponse
		q := url.QueryEscape(fmt.Sprintf(`{thread_name=%q}`, name))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/render?type=wall&query="+q, nil))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &r) != nil || r.Flamebearer.NumTicks != want[name] {
			t.Errorf("%s: {thread_name=%q}: %d %d, want %d", when, name, w.Code, r.Flamebearer.NumTicks, want[name])
		}
		var br struct {
			Rows []struct {
				Keys  []string
				Value int64
			}
		}
		w = httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/breakdown?type=wall&by=thread_name&query="+url.QueryEscape(`{spark_app_id="app-bench"}`), nil))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &br) != nil {
			t.Fatalf("%s: breakdown: %d %s", when, w.Code, w.Body)
		}
		got := map[string]int64{}
		for _, row := range br.Rows {
			got[row.Keys[0]] = row.Value
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: wall time by thread name %v, want %v", when, got, want)
		}
	}
	check("head")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("block")
}

// A query that keeps labels and whose merge grows past MaxQuerySamples
// gets 422 naming the limit, and what to narrow; a flame graph is not
// bounded by it.
func TestMaxQuerySamples(t *testing.T) {
	base, db, _ := testServer(t, store.Options{})
	for w := range 2 {
		if err := db.Append("", synth.Upload(base, synth.Start, 0, w, 2)); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	app := url.QueryEscape(`{spark_app_id="app-bench"}`)
	get := func(s *Server, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w
	}
	// The flame graph's merge, one sample per stack, type and state, fits
	// a limit that the export of every task and thread does not.
	var r renderResponse
	if w := get(newServer(t, Config{Store: db, Logger: logger}), "/api/v1/render?query="+app); w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &r) != nil {
		t.Fatalf("render: %d %s", w.Code, w.Body)
	}
	limited := newServer(t, Config{Store: db, Logger: logger, MaxQuerySamples: r.Samples})
	if w := get(limited, "/api/v1/render?query="+app); w.Code != 200 {
		t.Errorf("render within the limit: %d %s", w.Code, w.Body)
	}
	w := get(limited, "/api/v1/export?format=pprof&labels=all&query="+app)
	if body := w.Body.String(); w.Code != 422 || !strings.Contains(body, "--max-query-samples") || !strings.Contains(body, "labels=all") {
		t.Errorf("export of every label past the limit: %d %s, want 422 naming the flag and labels=all", w.Code, body)
	}
	one := newServer(t, Config{Store: db, Logger: logger, MaxQuerySamples: 1})
	w = get(one, "/api/v1/export?format=pprof&query="+app)
	if body := w.Body.String(); w.Code != 422 || !strings.Contains(body, "narrow") || strings.Contains(body, "labels=all") {
		t.Errorf("export past the limit: %d %s, want 422 saying to narrow the selection", w.Code, body)
	}
	// A flame graph is bounded by the stacks the store holds, not by
	// the limit.
	if w := get(one, "/api/v1/render?query="+app); w.Code != 200 {
		t.Errorf("render with a limit of one sample: %d %s", w.Code, w.Body)
	}
}

// testServer returns the recording the tests make their uploads of
// (synth.Base), a store with opts in a temporary directory, closed when the
// test ends, and a server over it that logs nothing.
func testServer(t *testing.T, opts store.Options) (*profile.Profile, *store.DB, *Server) {
	t.Helper()
	db := synth.Store(t, opts)
	return synth.Base(t), db, newServer(t, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// The /flame page merges only what it filters by (thread pool, stage,
// thread name), and holds the same rows as the page of the selection with
// every label and thread.
func TestFlamePage(t *testing.T) {
	base, db, s := testServer(t, store.Options{})
	for w := range 3 {
		for e := range 2 {
			u := synth.Upload(base, synth.Start, e, w, 3)
			p := u.Profile
			// Each executor's JVM numbers its threads its own way; half
			// of them are in one pool.
			p.Threads = slices.Clone(p.Threads)
			for i := range p.Threads[1:] {
				p.Threads[i+1].ID += int64(e) * 1000
			}
			for i, smp := range p.Samples {
				pool := profile.Labels{{Name: profile.LabelThreadPool, Value: fmt.Sprint("pool-", smp.Thread%2)}}
				p.Samples[i].Labels = p.AddLabels(p.LabelSet(smp.Labels).Merge(pool))
			}
			if err := db.Append("", u); err != nil {
				t.Fatal(err)
			}
		}
	}
	sel := `{spark_app_id="app-bench"}`
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", "/flame?type=wall&query="+url.QueryEscape(sel), nil))
	if w.Code != 200 {
		t.Fatalf("/flame: %d %s", w.Code, w.Body)
	}
	ms, _, err := query.ParseSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.query.Merge(t.Context(), "", query.NewRequest(ms, "wall", 0, 0)) // every label and thread
	if err != nil {
		t.Fatal(err)
	}
	var ref bytes.Buffer
	if err := flamegraph.HTML(&ref, all, flamegraph.Options{Title: sel, Type: "wall"}); err != nil {
		t.Fatal(err)
	}
	got, want := pageRows(t, w.Body.Bytes()), pageRows(t, ref.Bytes())
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Errorf("the page has %d rows, the page of every label %d; they differ", len(got), len(want))
	}
	req := query.NewRequest(ms, "wall", 0, 0)
	req.Keep = query.KeepPage
	page, err := s.query.Merge(t.Context(), "", req)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Threads) != len(base.Threads) || len(all.Threads) <= len(base.Threads) || len(page.Samples) >= len(all.Samples) {
		t.Errorf("the page's merge has %d threads and %d samples, every label's %d and %d; want the %d names and fewer samples",
			len(page.Threads), len(page.Samples), len(all.Threads), len(all.Samples), len(base.Threads))
	}
}

// pageRows reads the rows of a flamegraph page's data as the value of
// each stack (its frames joined by ";"), type, pool, stage and thread.
func pageRows(t *testing.T, html []byte) map[string]int64 {
	t.Helper()
	_, rest, _ := bytes.Cut(html, []byte(`<script type="application/json" id="data">`))
	data, _, ok := bytes.Cut(rest, []byte("</script>"))
	if !ok {
		t.Fatal("no data in the page")
	}
	var d struct {
		Types, Frames, Pools, Stages, Threads []string
		Stacks                                []int
		Samples                               []int64
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	path := func(st int) string {
		var fs []string
		for ; st != 0; st = d.Stacks[2*(st-1)] {
			fs = append(fs, d.Frames[d.Stacks[2*(st-1)+1]])
		}
		return strings.Join(fs, ";")
	}
	out := map[string]int64{}
	for i := 0; i+5 < len(d.Samples); i += 6 {
		r := d.Samples[i : i+6]
		out[strings.Join([]string{path(int(r[0])), d.Types[r[1]], d.Pools[r[2]], d.Stages[r[3]], d.Threads[r[4]]}, "\x00")] += r[5]
	}
	return out
}

// The task ids of a range that cuts a block are those of the time slices
// it reads, as their bounds tell, not every task of the block.
func TestTaskValuesInRange(t *testing.T) {
	base, db, s := testServer(t, store.Options{Partition: time.Minute})
	for w := range 6 {
		for e := range 3 {
			if err := db.Append("", synth.Upload(base, synth.Start, e, w, 6)); err != nil {
				t.Fatal(err)
			}
		}
	}
	values := func(from, until int) []string {
		t.Helper()
		path := "/api/v1/label-values?name=spark_task_id"
		if until > 0 {
			path += fmt.Sprintf("&from=%d&until=%d", synth.Start+int64(from)*int64(time.Second), synth.Start+int64(until)*int64(time.Second))
		}
		var vs []string
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &vs) != nil {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		return vs
	}
	exact := values(15, 31) // the uploads of windows 1-3, in the head
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Blocks != 1 {
		t.Fatalf("%d blocks, want one", st.Blocks)
	}
	got, all := values(15, 31), values(0, 0)
	for _, v := range exact {
		if !slices.Contains(got, v) {
			t.Errorf("task %s of the range is missing from the block's values for it", v)
		}
	}
	if len(got) >= len(all) || len(exact) == 0 {
		t.Errorf("the range lists %d tasks once compacted (%d in the head), the whole block %d; want fewer than the block's", len(got), len(exact), len(all))
	}
}
