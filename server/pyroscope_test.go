package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
)

// pyroscopeRender is the part of /pyroscope/render's answer the tests read.
type pyroscopeRender struct {
	Flamebearer query.Flamebearer
	Metadata    struct{ Name, Units string }
	Timeline    query.Timeline
	Groups      map[string]query.Timeline
}

// TestProfileTypeIDs reads a real recording back with the queries of
// Pyroscope 1.x and Grafana: the profile types listed as __name__ values,
// each selected by its ID before the selector or in a __name__ matcher,
// and the IDs Pyroscope's Java agent data carries (allocations inside a
// TLAB, lock contention) selecting sparkprof's type that holds them.
func TestProfileTypeIDs(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	raw := corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	if code := post(t, ts, url.Values{"name": {"kafka{}"}, "format": {"jfr"}}, "", raw); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	offline, err := format.Decode(raw, "offline", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := func(typ profile.SampleType) int64 {
		id, ok := offline.TypeIndex(typ)
		if !ok {
			t.Fatalf("the recording has no %s samples", typ)
		}
		return offline.Total(id)
	}

	var ids []string
	getJSON(t, ts, "/pyroscope/label-values?label=__name__", &ids)
	want := []string{
		"memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
		"mutex:contentions:count:mutex:count", "mutex:delay:nanoseconds:mutex:count",
		"process_cpu:cpu:nanoseconds:cpu:nanoseconds",
	}
	if !slices.Equal(ids, want) {
		t.Errorf("__name__ values %q, want %q", ids, want)
	}
	var names []string
	getJSON(t, ts, "/pyroscope/labels", &names)
	if len(names) == 0 || names[0] != "__name__" || !slices.Contains(names, "service_name") {
		t.Errorf("labels %q: want __name__ first, and service_name", names)
	}

	tests := []struct {
		query string
		typ   profile.SampleType
	}{
		{`process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="kafka"}`, profile.TypeCPU},
		{`{__name__="process_cpu:cpu:nanoseconds:cpu:nanoseconds", service_name="kafka"}`, profile.TypeCPU},
		{`memory:alloc_space:bytes:space:bytes{service_name="kafka"}`, profile.TypeAllocBytes},
		{`memory:alloc_in_new_tlab_bytes:bytes:space:bytes{service_name="kafka"}`, profile.TypeAllocBytes},
		{`memory:alloc_in_new_tlab_objects:count:space:bytes{service_name="kafka"}`, profile.TypeAllocObjects},
		{`mutex:contentions:count:mutex:count{service_name="kafka"}`, profile.TypeLockCount},
		{`block:delay:nanoseconds:block:count{service_name="kafka"}`, profile.TypeLockDelay},
		{`{__name__="kafka.alloc_space"}`, profile.TypeAllocBytes},
		{`{__profile_type__="mutex:delay:nanoseconds:mutex:count", service_name="kafka"}`, profile.TypeLockDelay},
	}
	for _, tt := range tests {
		var pr pyroscopeRender
		getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {tt.query}, "from": {"0"}, "until": {"now"}}.Encode(), &pr)
		if pr.Metadata.Name != tt.typ.Name || pr.Flamebearer.NumTicks != total(tt.typ) {
			t.Errorf("%s: type %q, %d ticks; want %q, %d", tt.query, pr.Metadata.Name, pr.Flamebearer.NumTicks, tt.typ.Name, total(tt.typ))
		}
		// The recording is years old: its timeline up to now is widened.
		if n := len(pr.Timeline.Samples); n == 0 || n > query.MaxSteps+1 {
			t.Errorf("%s: a timeline of %d steps, want 1 to %d", tt.query, n, query.MaxSteps+1)
		}
	}
	// Another service's ID selects nothing of this one.
	var pr pyroscopeRender
	getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {`process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="other"}`}}.Encode(), &pr)
	if pr.Flamebearer.NumTicks != 0 {
		t.Errorf("another service: %d ticks", pr.Flamebearer.NumTicks)
	}

	for _, bad := range []string{`process_cpu:cpu{}`, `{__name__=~"process_cpu.*"}`, `a::b:c:d{}`} {
		if code := getStatus(t, ts, "/pyroscope/render?"+url.Values{"query": {bad}}.Encode()); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}
}

func countOthers(fb query.Flamebearer) int {
	n := 0
	for _, l := range fb.Levels {
		for i := 3; i < len(l); i += 4 {
			if fb.Names[l[i]] == profile.OtherName {
				n++
			}
		}
	}
	return n
}

// countNodes counts a flamebearer's blocks below the root.
func countNodes(fb query.Flamebearer) int {
	n := 0
	for _, l := range fb.Levels[1:] {
		n += len(l) / 4
	}
	return n
}

// TestMaxNodes bounds a real recording's flame graph as Pyroscope's
// max-nodes does: the total is kept, the small frames fold into "other".
func TestMaxNodes(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	raw := corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	if code := post(t, ts, url.Values{"name": {"kafka{}"}, "format": {"jfr"}}, "", raw); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	params := url.Values{"query": {`kafka{}`}, "type": {"alloc_bytes"}}
	var all renderResponse
	getJSON(t, ts, "/api/v1/render?"+params.Encode(), &all)
	full := countNodes(*all.Flamebearer)
	if full < 1000 {
		t.Fatalf("the full flame graph has %d nodes; the test needs more", full)
	}
	for _, limit := range []int{1, 100, 1000} {
		params.Set("maxNodes", fmt.Sprint(limit))
		var r renderResponse
		getJSON(t, ts, "/api/v1/render?"+params.Encode(), &r)
		var pr pyroscopeRender
		getJSON(t, ts, "/pyroscope/render?"+params.Encode(), &pr)
		if others := countOthers(*r.Flamebearer); countNodes(*r.Flamebearer)-others+r.Folded != full {
			t.Errorf("maxNodes=%d: %d nodes with %d others, %d folded; want the %d nodes of the whole tree", limit, countNodes(*r.Flamebearer), others, r.Folded, full)
		}
		for _, fb := range []query.Flamebearer{*r.Flamebearer, pr.Flamebearer} {
			others := countOthers(fb)
			if n := countNodes(fb) - others; n > limit || n < limit/2 || others == 0 || fb.NumTicks != all.Flamebearer.NumTicks {
				t.Errorf("maxNodes=%d: %d frames and %d others, %d ticks; want at most %d frames, total %d", limit, n, others, fb.NumTicks, limit, all.Flamebearer.NumTicks)
			}
		}
	}
	params.Del("maxNodes")
	var pr pyroscopeRender
	getJSON(t, ts, "/pyroscope/render?"+params.Encode(), &pr)
	if n := countNodes(pr.Flamebearer); n != full {
		t.Errorf("/pyroscope/render by default: %d nodes, want all %d (fewer than 8,192)", n, full)
	}
	if code := getStatus(t, ts, "/api/v1/render?query=kafka%7B%7D&maxNodes=-1"); code != http.StatusBadRequest {
		t.Errorf("maxNodes=-1: %d, want 400", code)
	}
}

// TestDiffTimeRanges compares one service with itself over two time ranges,
// as Pyroscope's comparison view does: each side reads its own range.
func TestDiffTimeRanges(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	for i, body := range []string{"main;slow 2\nmain;fast 2\n", "main;slow 6\nmain;fast 2\n"} {
		q := url.Values{"name": {"svc{}"}, "from": {fmt.Sprint(1700000000 + 3600*i)}, "until": {fmt.Sprint(1700000010 + 3600*i)}}
		if code := post(t, ts, q, "", []byte(body)); code != 200 {
			t.Fatalf("upload %d: %d", i, code)
		}
	}
	var d struct{ LeftTicks, RightTicks int64 }
	for _, q := range []url.Values{
		{"leftQuery": {"svc{}"}, "rightQuery": {"svc{}"}, "leftFrom": {"1699999000"}, "leftUntil": {"1700001000"},
			"rightFrom": {"1700003000"}, "rightUntil": {"1700005000"}},
		{"base": {"svc{}"}, "next": {"svc{}"}, "baseFrom": {"1699999000"}, "baseUntil": {"1700001000"},
			"nextFrom": {"1700003000"}, "nextUntil": {"1700005000"}},
	} {
		path := "/pyroscope/render-diff?"
		if q.Has("base") {
			path = "/api/v1/diff?"
		}
		d.LeftTicks, d.RightTicks = 0, 0
		getJSON(t, ts, path+q.Encode(), &d)
		if d.LeftTicks != 4 || d.RightTicks != 8 {
			t.Errorf("%s: ticks %d/%d, want 4/8", path, d.LeftTicks, d.RightTicks)
		}
	}
}

// TestRenderGroupBy splits the render timeline by a label, as Pyroscope's
// groupBy does, "*" for samples without it.
func TestRenderGroupBy(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	for i, name := range []string{"g{spark_executor_id=1}", "g{spark_executor_id=2}", "g{}"} {
		q := url.Values{"name": {name}, "from": {"1700000000"}, "until": {"1700000010"}, "units": {"objects"}}
		if code := post(t, ts, q, "", []byte(fmt.Sprintf("main;work %d\n", i+1))); code != 200 {
			t.Fatalf("upload %d: %d", i, code)
		}
	}
	var pr pyroscopeRender
	getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {"g{}"}, "from": {"1700000000"}, "until": {"1700000010"}, "groupBy": {"spark_executor_id"}}.Encode(), &pr)
	got := map[string]int64{}
	for k, tl := range pr.Groups {
		for _, v := range tl.Samples {
			got[k] += v
		}
	}
	if fmt.Sprint(got) != "map[*:3 1:1 2:2]" || pr.Timeline.Samples[0] != 6 {
		t.Errorf("groups %v, timeline %v; want *:3 1:1 2:2, 6", got, pr.Timeline.Samples)
	}
}
