package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// Pyroscope's render answer carries the units its UI knows and a timeline
// of the selection per step, untimed samples at their upload's start.
func TestPyroscopeRenderTimeline(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	for i, v := range []int{3, 5, 7} {
		q := url.Values{"name": {"tl.cpu{}"}, "from": {fmt.Sprint(1700000000 + 20*i)}, "until": {fmt.Sprint(1700000010 + 20*i)}}
		if code := post(t, ts, q, "", []byte(fmt.Sprintf("main;work %d\n", v))); code != 200 {
			t.Fatalf("upload %d: %d", i, code)
		}
	}
	var pr struct {
		Flamebearer query.Flamebearer
		Metadata    struct {
			Units      string
			SampleRate int
			Name       string
		}
		Timeline query.Timeline
	}
	getJSON(t, ts, "/pyroscope/render?query=tl.cpu%7B%7D&from=1699999990&until=1700000090", &pr)
	tick := int64(time.Second / 100) // Pyroscope's rate of an upload that names none
	want := query.Timeline{StartTime: 1699999990, DurationDelta: 10, Samples: []int64{0, 3 * tick, 0, 5 * tick, 0, 7 * tick, 0, 0, 0, 0}}
	if !reflect.DeepEqual(pr.Timeline, want) {
		t.Errorf("timeline %+v, want %+v", pr.Timeline, want)
	}
	if pr.Metadata.Units != "samples" || pr.Metadata.SampleRate != 1e9 || pr.Metadata.Name != "cpu" || pr.Flamebearer.NumTicks != 15*tick {
		t.Errorf("metadata %+v, %d ticks", pr.Metadata, pr.Flamebearer.NumTicks)
	}
}

// TestPyroscopeTypes sends folded stacks as Pyroscope's agents do, the
// profile type in the name's suffix or the units, and reads them back with
// Pyroscope's queries, which name the type the same way.
func TestPyroscopeTypes(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	tests := []struct {
		name       string
		upload     url.Values
		query      string
		wantType   string
		wantTicks  int64
		wantOthers string // a second query, that must find nothing of this upload
	}{
		{"cpu at the default 100 Hz", url.Values{"name": {"py.cpu{}"}}, "py.cpu{}", "cpu", 3 * 10_000_000, ""},
		{"cpu at 50 Hz", url.Values{"name": {"py50.cpu{}"}, "sampleRate": {"50"}}, "py50.cpu{}", "cpu", 3 * 20_000_000, ""},
		{"itimer is cpu", url.Values{"name": {"it.itimer{}"}}, "it.cpu{}", "cpu", 3 * 10_000_000, ""},
		{"wall", url.Values{"name": {"w.wall{}"}, "sampleRate": {"1000"}}, "w.wall{}", "wall", 3 * 1_000_000, "w.cpu{}"},
		{"allocated bytes", url.Values{"name": {"go.alloc_space{}"}}, "go.alloc_space{}", "alloc_bytes", 3, "go.cpu{}"},
		{"lock time", url.Values{"name": {"lk.lock_duration{}"}}, "lk.lock_duration{}", "lock_delay", 3, ""},
		{"units say objects", url.Values{"name": {"rb{}"}, "units": {"objects"}}, "rb.alloc_objects{}", "alloc_objects", 3, "rb.alloc_space{}"},
		{"no type: samples", url.Values{"name": {"plain{}"}}, "plain{}", "samples", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.upload.Set("format", "folded")
			if code := post(t, ts, tt.upload, "", []byte("main;work 3\n")); code != 200 {
				t.Fatalf("upload: %d", code)
			}
			var pr struct {
				Flamebearer query.Flamebearer `json:"flamebearer"`
				Metadata    struct{ Name string }
			}
			getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {tt.query}, "from": {"now-7d"}, "until": {"now"}}.Encode(), &pr)
			if pr.Metadata.Name != tt.wantType || pr.Flamebearer.NumTicks != tt.wantTicks {
				t.Errorf("%s: type %q, %d ticks; want %q, %d", tt.query, pr.Metadata.Name, pr.Flamebearer.NumTicks, tt.wantType, tt.wantTicks)
			}
			if tt.wantOthers != "" {
				pr.Flamebearer.NumTicks = 0
				getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {tt.wantOthers}, "from": {"now-1h"}, "until": {"now"}}.Encode(), &pr)
				if pr.Flamebearer.NumTicks != 0 {
					t.Errorf("%s: %d ticks, want none", tt.wantOthers, pr.Flamebearer.NumTicks)
				}
			}
		})
	}
}

func TestFlamebearer(t *testing.T) {
	p, err := format.Decode([]byte("a;b 3\na;c 2\nd 1\n"), "x", format.Options{Format: "folded"})
	if err != nil {
		t.Fatal(err)
	}
	fb := query.NewFlamebearer(profile.NewTree(p, p.Types[0]))
	got := fmt.Sprint(fb.Names, fb.Levels, fb.NumTicks, fb.MaxSelf)
	want := "[total a d b c] [[0 6 0 0] [0 5 0 1 0 1 1 2] [0 3 3 3 0 2 2 4]] 6 3"
	if got != want {
		t.Errorf("flamebearer %s, want %s", got, want)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

func TestDiff(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	post(t, ts, url.Values{"name": {"yesterday"}}, "", []byte("main;slow 2\nmain;fast 2\n"))
	post(t, ts, url.Values{"name": {"today"}}, "", []byte("main;slow 6\nmain;fast 2\n"))
	var d struct {
		Flamebearer           query.Flamebearer
		LeftTicks, RightTicks int64
	}
	for _, path := range []string{
		"/api/v1/diff?" + url.Values{"base": {"yesterday{}"}, "next": {"today{}"}, "type": {"samples"}}.Encode(),
		// Pyroscope's path and parameters, as Grafana's diff view sends them.
		"/pyroscope/render-diff?" + url.Values{"leftQuery": {"yesterday{}"}, "rightQuery": {"today{}"},
			"leftFrom": {"now-1h"}, "leftUntil": {"now"}, "rightFrom": {"now-1h"}, "rightUntil": {"now"}}.Encode(),
	} {
		d.Flamebearer, d.LeftTicks, d.RightTicks = query.Flamebearer{}, 0, 0
		getJSON(t, ts, path, &d)
		if d.LeftTicks != 4 || d.RightTicks != 8 || len(d.Flamebearer.Levels) < 3 {
			t.Fatalf("%s: ticks %d/%d, %d levels", path, d.LeftTicks, d.RightTicks, len(d.Flamebearer.Levels))
		}
		// Level 2: fast then slow, each side in its own values (as
		// Pyroscope's diff: its flame graph compares each side's share of
		// its own ticks), the width their sum.
		got := fmt.Sprint(d.Flamebearer.Names, d.Flamebearer.Levels[2], d.Flamebearer.NumTicks)
		if got != "[total main fast slow] [0 2 2 0 2 2 2 0 2 2 0 6 6 3] 12" {
			t.Errorf("%s: diff level 2 and width: %s", path, got)
		}
	}
	// A missing side is a 400 naming it, not a diff against everything.
	for path, side := range map[string]string{
		"/api/v1/diff?" + url.Values{"base": {"yesterday{}"}}.Encode():                          "next",
		"/api/v1/diff?" + url.Values{"next": {"today{}"}}.Encode():                              "base",
		"/pyroscope/render-diff?" + url.Values{"rightQuery": {"today{}"}}.Encode():              "leftQuery",
		"/pyroscope/render-diff?" + url.Values{"leftQuery": {"yesterday{}"}}.Encode():           "rightQuery",
		"/api/v1/diff?" + url.Values{"base": {"yesterday{}"}, "next": {""}}.Encode():            "next",
		"/pyroscope/render-diff?" + url.Values{"leftQuery": {""}, "rightQuery": {"x"}}.Encode(): "leftQuery",
	} {
		code, body := getBody(t, ts, path)
		if code != http.StatusBadRequest || !strings.HasPrefix(body, `{"error":"`+side+`: missing`) {
			t.Errorf("%s: %d %s; want 400 naming %s", path, code, body, side)
		}
	}
}

// A range that ends before it starts is a 400 for every query that takes
// one, a diff side's own range too.
func TestRangeBackwards(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	post(t, ts, url.Values{"name": {"svc"}}, "", []byte("main;work 2\n"))
	backwards := url.Values{"from": {"1700001000"}, "until": {"1700000000"}}
	for _, path := range []string{
		"/api/v1/render?query=%7B%7D&" + backwards.Encode(),
		"/api/v1/series?query=%7B%7D&" + backwards.Encode(),
		"/api/v1/top?query=%7B%7D&" + backwards.Encode(),
		"/api/v1/labels?" + backwards.Encode(),
		"/api/v1/label-values?name=service_name&" + backwards.Encode(),
		"/pyroscope/render?query=svc%7B%7D&" + backwards.Encode(),
		"/api/v1/diff?base=%7B%7D&next=%7B%7D&baseFrom=now-1h&baseUntil=now-2h",
	} {
		code, body := getBody(t, ts, path)
		if code != http.StatusBadRequest || !strings.Contains(body, "the range ends before it starts") {
			t.Errorf("%s: %d %s; want 400", path, code, body)
		}
	}
	if code := getStatus(t, ts, "/api/v1/render?query=%7B%7D&from=now-1h&until=now"); code != http.StatusOK {
		t.Errorf("a forward range: %d, want 200", code)
	}
}

// /api/v1/top lists n functions by self or total, and counts a recursive
// function's total once per stack.
func TestTop(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	body := []byte("main;fib;fib;fib 5\nmain;fib 3\nmain;leaf 4\n")
	if code := post(t, ts, url.Values{"name": {"top{}"}, "format": {"folded"}}, "", body); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"fib", "leaf", "main"}},
		{"&n=1", []string{"fib"}},
		{"&n=0", []string{"fib", "leaf", "main"}},
		{"&sort=total", []string{"main", "fib", "leaf"}},
		{"&sort=total&n=2", []string{"main", "fib"}},
	} {
		var got struct {
			Total     int64
			Functions []struct {
				Name        string
				Self, Total int64
			}
		}
		getJSON(t, ts, "/api/v1/top?query="+url.QueryEscape(`{service_name="top"}`)+c.query, &got)
		var names []string
		for _, f := range got.Functions {
			names = append(names, f.Name)
			if f.Name == "fib" && f.Total != 8 {
				t.Errorf("%s: fib total %d, want 8 (once per stack)", c.query, f.Total)
			}
		}
		if !slices.Equal(names, c.want) || got.Total != 12 {
			t.Errorf("top%s: %v, total %d; want %v, total 12", c.query, names, got.Total, c.want)
		}
	}
	for _, bad := range []string{"n=-1", "n=x", "sort=name"} {
		if code := getStatus(t, ts, "/api/v1/top?"+bad); code != http.StatusBadRequest {
			t.Errorf("top?%s: %d, want 400", bad, code)
		}
	}
}

// focus keeps the samples with a frame matching it and ignore drops them,
// in the flame graph and the top table alike (the recommendations' links
// carry focus); a bad expression is a 400 naming the parameter.
func TestFocusAndIgnore(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	body := []byte("main;parse;regex.Match 5\nmain;parse 3\nmain;write 4\n")
	if code := post(t, ts, url.Values{"name": {"focus{}"}, "format": {"folded"}}, "", body); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	sel := url.QueryEscape(`{service_name="focus"}`)
	for _, c := range []struct {
		params string
		total  int64
	}{
		{"", 12},
		{"&focus=" + url.QueryEscape(`^regex\.`), 5},
		{"&focus=parse", 8},
		{"&ignore=parse", 4},
		{"&focus=main&ignore=Match", 7},
	} {
		var r renderResponse
		getJSON(t, ts, "/api/v1/render?type=samples&query="+sel+c.params, &r)
		if got := r.Flamebearer.NumTicks; got != c.total {
			t.Errorf("render%s: total %d, want %d", c.params, got, c.total)
		}
		var top struct{ Total int64 }
		getJSON(t, ts, "/api/v1/top?type=samples&query="+sel+c.params, &top)
		if top.Total != c.total {
			t.Errorf("top%s: total %d, want %d", c.params, top.Total, c.total)
		}
	}
	for _, bad := range []string{"focus=(", "ignore=" + url.QueryEscape("a[")} {
		code, msg := getBody(t, ts, "/api/v1/render?query="+sel+"&"+bad)
		if name, _, _ := strings.Cut(bad, "="); code != http.StatusBadRequest || !strings.Contains(msg, name) {
			t.Errorf("render?%s: %d %s, want 400 naming %s", bad, code, msg, name)
		}
	}
}

// label-values with a selector lists the values among the samples it
// selects, in the head and, once compacted, from a block's rollup
// (alloc_class) or, for a label the rollup drops (thread_name), its samples.
func TestLabelValuesOfSelection(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	labels := mustGunzip(t, corpus.Read(t, "jfr", "dump1.labels.pb.gz"))
	uploads := []struct {
		app, file string
		labels    []byte // a LabelsSnapshot: its contexts name the threads
	}{
		{"a", "dump1.jfr.gz", labels},
		{"b", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz", nil},
	}
	want := map[string]map[string][]string{} // label -> app -> values
	for _, u := range uploads {
		data := corpus.Read(t, "jfr", u.file)
		q := url.Values{"name": {u.app + "{spark_executor_id=" + u.app + "1}"}, "format": {"jfr"}}
		ct, body := "", data
		if u.labels != nil {
			ct, body = multipartJFR(t, data, gzipBytes(t, u.labels))
		}
		if code := post(t, ts, q, ct, body); code != 200 {
			t.Fatalf("upload %s: %d", u.file, code)
		}
		p, err := format.Decode(mustGunzip(t, data), u.file, format.Options{JFRLabels: u.labels})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{profile.LabelThreadName, "alloc_class"} {
			seen := map[string]bool{}
			for _, s := range p.Samples {
				if v, ok := p.LabelSet(s.Labels).Get(name); ok {
					seen[v] = true
				}
			}
			if want[name] == nil {
				want[name] = map[string][]string{}
			}
			want[name][u.app] = slices.Sorted(maps.Keys(seen))
		}
	}
	if len(want[profile.LabelThreadName]["a"]) == 0 || len(want["alloc_class"]["b"]) == 0 {
		t.Fatalf("the corpus files lack the labels this test needs: %v", want)
	}
	values := func(name, sel string) []string {
		got := []string{}
		getJSON(t, ts, "/api/v1/label-values?"+url.Values{"name": {name}, "query": {sel}}.Encode(), &got)
		return got
	}
	check := func(when string) {
		if got := values("spark_executor_id", `{service_name="a"}`); !slices.Equal(got, []string{"a1"}) {
			t.Errorf("%s: executors of a: %v, want [a1]", when, got)
		}
		if got := values("spark_executor_id", `{}`); !slices.Equal(got, []string{"a1", "b1"}) {
			t.Errorf("%s: all executors: %v, want [a1 b1]", when, got)
		}
		// Label names come from the uploads a selector selects, samples'
		// labels the rollup drops among them.
		var names []string
		getJSON(t, ts, "/api/v1/labels?"+url.Values{"query": {`{service_name="a"}`}}.Encode(), &names)
		if !slices.Contains(names, profile.LabelThreadName) {
			t.Errorf("%s: label names of a: %v, want thread_name among them", when, names)
		}
		for name, byApp := range want {
			for app, w := range byApp {
				if w == nil {
					w = []string{}
				}
				if got := values(name, `{spark_executor_id="`+app+`1"}`); !slices.Equal(got, w) {
					t.Errorf("%s: %s of %s: %d values, want %d", when, name, app, len(got), len(w))
				}
			}
		}
	}
	check("in the head")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	if code := getStatus(t, ts, "/api/v1/label-values?name=x&query=%7Boops"); code != http.StatusBadRequest {
		t.Errorf("a bad selector: %d, want 400", code)
	}
}

// TestHeadRollups: a flame graph over uploads not compacted yet is read
// from their rollups (computed at the first query, counted in the head's
// memory) and equals the one their samples make, for every sample type of
// the corpus's recordings, over all time and over a range covering them; a
// range that cuts them reads their samples.
func TestHeadRollups(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	for i, name := range []string{"cortex-dev-01__kafka-0__cpu_lock0_alloc0__0", "dump2", "wall", "FastSlow_2024_01_16_180855"} {
		q := url.Values{"name": {fmt.Sprintf("rollups{spark_executor_id=%d}", i)}, "format": {"jfr"}}
		if code := post(t, ts, q, "", corpus.Read(t, "jfr", name+".jfr.gz")); code != 200 {
			t.Fatalf("%s: %d", name, code)
		}
	}
	var first, last int64
	db.Select("", store.Query{}, func(u *store.Upload) error {
		lo, hi := u.SampleSpan()
		if first == 0 || lo < first {
			first = lo
		}
		last = max(last, hi)
		return nil
	})
	before := db.Stats().HeadBytes
	get := func(sel, typ string, from, until int64) string {
		t.Helper()
		q := url.Values{"query": {sel}, "type": {typ}}
		if from != 0 {
			q.Set("from", strconv.FormatInt(from, 10))
			q.Set("until", strconv.FormatInt(until, 10))
		}
		resp, err := http.Get(ts.URL + "/api/v1/render?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct{ Flamebearer json.RawMessage }
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return string(r.Flamebearer)
	}
	// A matcher on a label the rollups drop, which every sample passes,
	// makes the server read the samples.
	const rolled, sampled = `{service_name="rollups"}`, `{service_name="rollups", spark_task_id=~".*"}`
	for _, typ := range []string{"cpu", "wall", "alloc_objects", "alloc_bytes", "lock_contentions", "lock_delay", "live_objects"} {
		for _, r := range [][2]int64{{0, 0}, {first, last + 1}} {
			got, want := get(rolled, typ, r[0], r[1]), get(sampled, typ, r[0], r[1])
			if got != want {
				t.Errorf("%s over %v: the rollups' flame graph differs from the samples'", typ, r)
			}
		}
	}
	if after := db.Stats().HeadBytes; after <= before {
		t.Errorf("head memory %d before the queries, %d after: the rollups are not counted", before, after)
	}
	// A range that cuts the uploads: the samples in it.
	mid := first + (last-first)/2
	if got, want := get(rolled, "cpu", mid, last+1), get(sampled, "cpu", mid, last+1); got != want {
		t.Error("over half the range: the flame graph differs from the samples'")
	}
	// The series the uploads' timelines answer are the samples'.
	beforeSeries := db.Stats().HeadBytes
	for _, typ := range []string{"cpu", "wall", "alloc_bytes", "lock_delay"} {
		series := func(sel string) string {
			t.Helper()
			var body json.RawMessage
			getJSON(t, ts, "/api/v1/series?"+url.Values{"query": {sel}, "type": {typ}, "by": {"spark_executor_id"}, "step": {"1s"}}.Encode(), &body)
			return string(body)
		}
		if got, want := series(rolled), series(sampled); got != want || len(got) < 100 {
			t.Errorf("%s: the timelines' series differs from the samples':\n got  %.200s\n want %.200s", typ, got, want)
		}
	}
	if after := db.Stats().HeadBytes; after <= beforeSeries {
		t.Errorf("head memory %d before the series, %d after: the timelines are not counted", beforeSeries, after)
	}
	if db.Compact(); db.Stats().HeadBytes != 0 {
		t.Errorf("head memory %d after compaction, want 0: the rollups' or timelines' memory is still counted", db.Stats().HeadBytes)
	}
}
