package flamegraph

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/ui"
)

// labelled returns a profile with two types, thread pools, stages and
// threads, for filter tests.
func labelled(t testing.TB) *profile.Profile {
	t.Helper()
	p := profile.New()
	cpu := p.AddType(profile.TypeCPU)
	alloc := p.AddType(profile.TypeAllocBytes)
	frame := func(n string) profile.FrameID { return p.AddFrame(profile.Frame{Name: n, Kind: profile.KindJava}) }
	run, task, shuffle, gc := frame("Thread.run"), frame("Task.run"), frame("Shuffle.write"), frame("GC.collect")
	samples := []struct {
		stack        []profile.FrameID
		typ          profile.TypeID
		pool, stage  string
		thread       string
		value, times int64
	}{
		{[]profile.FrameID{run, task}, cpu, "executor-task", "1", "Executor task launch worker for task 1.0", 10, 3},
		{[]profile.FrameID{run, task, shuffle}, cpu, "executor-task", "2", "Executor task launch worker for task 7.0", 20, 2},
		{[]profile.FrameID{run, gc}, cpu, "gc", "", "GC Thread#0", 5, 1},
		{[]profile.FrameID{run, task}, alloc, "executor-task", "1", "Executor task launch worker for task 1.0", 1 << 20, 1},
	}
	for _, s := range samples {
		ls := p.AddLabels(profile.FromMap(map[string]string{profile.LabelThreadPool: s.pool, profile.LabelStageID: s.stage}))
		th := p.AddThread(profile.Thread{Name: s.thread})
		for range s.times {
			p.Add(profile.Sample{Stack: p.AddStack(s.stack), Value: s.value, Type: s.typ, Labels: ls, Thread: th})
		}
	}
	return p
}

var dataRE = regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`)

func pageOf(t *testing.T, page []byte) pageData {
	t.Helper()
	m := dataRE.FindSubmatch(page)
	if m == nil {
		t.Fatal("page has no data element")
	}
	var d pageData
	if err := json.Unmarshal(m[1], &d); err != nil {
		t.Fatalf("page data: %v", err)
	}
	return d
}

// folded rebuilds "a;b;c" → value from the page's encoding the way the
// page's script does, keeping rows that keep says to.
func folded(d pageData, rows []int64, keep func(r []int64) bool) map[string]int64 {
	out := map[string]int64{}
	for i := 0; i+sampleWidth <= len(rows); i += sampleWidth {
		r := rows[i : i+sampleWidth]
		if !keep(r) {
			continue
		}
		var names []string
		for s := int(r[0]); s != 0; s = d.Stacks[2*(s-1)] {
			names = append([]string{d.Frames[d.Stacks[2*(s-1)+1]]}, names...)
		}
		out[strings.Join(names, ";")] += r[5]
	}
	return out
}

// foldedOf returns p's samples of type typ as "a;b;c" → value.
func foldedOf(p *profile.Profile, typ profile.TypeID, keep func(profile.Sample) bool) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Samples {
		if s.Type != typ || !keep(s) {
			continue
		}
		var names []string
		for _, f := range p.Stack(s.Stack, nil) {
			names = append(names, p.Frames[f].Name)
		}
		out[strings.Join(names, ";")] += s.Value
	}
	return out
}

func equalMaps(t *testing.T, what string, got, want map[string]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q = %d, want %d", what, k, got[k], v)
		}
	}
}

func TestHTMLDataReproducesProfile(t *testing.T) {
	p := labelled(t)
	var buf bytes.Buffer
	if err := HTML(&buf, p, Options{Title: "t", Type: "alloc"}); err != nil {
		t.Fatal(err)
	}
	d := pageOf(t, buf.Bytes())
	if d.Types[d.Type] != "alloc_bytes:bytes" {
		t.Errorf("initial type %q, want alloc_bytes:bytes", d.Types[d.Type])
	}
	if d.Base != nil {
		t.Error("plain page has baseline samples")
	}
	// Rows with equal keys are merged: 4 distinct keys from 7 samples.
	if got := len(d.Samples) / sampleWidth; got != 4 {
		t.Errorf("%d sample rows, want 4", got)
	}
	pool := func(s profile.Sample) string { return p.Label(s, profile.LabelThreadPool) }
	stage := func(s profile.Sample) string { return p.Label(s, profile.LabelStageID) }
	tests := []struct {
		name   string
		typ    profile.TypeID
		keep   func(profile.Sample) bool
		keepPg func(r []int64) bool
	}{
		{"all cpu", 0, func(profile.Sample) bool { return true }, func([]int64) bool { return true }},
		{"all alloc", 1, func(profile.Sample) bool { return true }, func([]int64) bool { return true }},
		{"pool gc", 0, func(s profile.Sample) bool { return pool(s) == "gc" }, func(r []int64) bool { return d.Pools[r[2]] == "gc" }},
		{"stage 2", 0, func(s profile.Sample) bool { return stage(s) == "2" }, func(r []int64) bool { return d.Stages[r[3]] == "2" }},
		{"thread task 7", 0, func(s profile.Sample) bool { return strings.Contains(p.Threads[s.Thread].Name, "task 7") },
			func(r []int64) bool { return strings.Contains(d.Threads[r[4]], "task 7") }},
	}
	for _, tt := range tests {
		want := foldedOf(p, tt.typ, tt.keep)
		pt := p.Types[tt.typ].String()
		got := folded(d, d.Samples, func(r []int64) bool { return d.Types[r[1]] == pt && tt.keepPg(r) })
		equalMaps(t, tt.name, got, want)
	}
	// The tree totals agree with profile.NewTree.
	total := int64(0)
	for _, v := range folded(d, d.Samples, func(r []int64) bool { return d.Types[r[1]] == "cpu:nanoseconds" }) {
		total += v
	}
	if want := profile.NewTree(p, profile.TypeCPU).Total(); total != want {
		t.Errorf("cpu total %d, tree total %d", total, want)
	}
}

func TestDiffHTML(t *testing.T) {
	base := build(t, profile.TypeCPU, map[string]int64{"m;a": 10, "m;b": 30}, nil)
	next := build(t, profile.TypeCPU, map[string]int64{"m;a": 40, "m;c": 5}, nil)
	var buf bytes.Buffer
	if err := DiffHTML(&buf, base, next, Options{}); err != nil {
		t.Fatal(err)
	}
	d := pageOf(t, buf.Bytes())
	all := func([]int64) bool { return true }
	equalMaps(t, "base", folded(d, d.Base, all), map[string]int64{"m;a": 10, "m;b": 30})
	equalMaps(t, "next", folded(d, d.Samples, all), map[string]int64{"m;a": 40, "m;c": 5})
	// Both profiles share one frame table.
	if len(d.Frames) != 4 {
		t.Errorf("frames %q, want m a b c once each", d.Frames)
	}
}

// scriptTags counts the script elements of a page outside its own script
// (whose React code names a script element in a string).
func scriptTags(page string) int {
	return strings.Count(strings.Replace(page, ui.FlameScript(), "", 1), "<script")
}

func TestHTMLNoInjection(t *testing.T) {
	evil := `</script><script>window.pwned=1</script>`
	p := build(t, profile.TypeCPU, map[string]int64{"root;" + evil: 5, "root;a&b<$c>": 1}, nil)
	var buf bytes.Buffer
	if err := HTML(&buf, p, Options{Title: evil}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "pwned=1</script>") || scriptTags(page) != 2 {
		t.Errorf("frame or title name escaped its context:\n%s", page[:min(len(page), 2000)])
	}
	d := pageOf(t, buf.Bytes())
	if d.Title != evil {
		t.Errorf("title %q did not round-trip", d.Title)
	}
	found := false
	for _, f := range d.Frames {
		found = found || f == evil
	}
	if !found {
		t.Errorf("frame %q did not round-trip: %q", evil, d.Frames)
	}
}

func TestHTMLErrors(t *testing.T) {
	p := labelled(t)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"unknown type", HTML(&bytes.Buffer{}, p, Options{Type: "lock"}), `no sample type "lock" (has cpu:nanoseconds, alloc_bytes:bytes)`},
		{"nil profile", HTML(&bytes.Buffer{}, nil, Options{}), "nil profile"},
		{"nil base", DiffHTML(&bytes.Buffer{}, nil, p, Options{}), "nil profile"},
	}
	for _, tt := range tests {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, tt.err, tt.want)
		}
	}
}
