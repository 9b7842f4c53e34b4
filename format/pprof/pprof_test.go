package pprof

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	runtimepprof "runtime/pprof"
	"strconv"
	"strings"
	"testing"

	gprofile "github.com/google/pprof/profile"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/format/uber"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/pproftool"
	"github.com/sparkprof/sparkprof/profile"
)

// straggler decodes ProfileStraggler's Uber Stacktrace records and labels
// their samples by Spark thread name, as format.Decode does.
func straggler(t testing.TB) *profile.Profile {
	t.Helper()
	rel := []string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}
	p, err := uber.Decode(corpus.Read(t, rel...), rel[len(rel)-1])
	if err != nil {
		t.Fatal(err)
	}
	attribution.LabelThreads(p)
	return p
}

func encodePprof(t testing.TB, p *profile.Profile, opts EncodeOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, p, opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func foldedText(t testing.TB, p *profile.Profile, typ profile.SampleType) string {
	t.Helper()
	var b bytes.Buffer
	if err := folded.Encode(&b, p, folded.EncodeOptions{Type: typ}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestRoundTripStraggler encodes the Uber straggler profile, checks it
// with google/pprof, and decodes it again to the same stacks, threads,
// states and labels.
func TestRoundTripStraggler(t *testing.T) {
	p := straggler(t)
	data := encodePprof(t, p, EncodeOptions{})
	gp, err := gprofile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := gp.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range gp.Sample {
		total += s.Value[0]
	}
	if want := p.Total(0); total != want || want != 47473 {
		t.Errorf("pprof total %d, profile total %d, want 47473", total, want)
	}

	q, err := Decode(data, "straggler.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Types) != 1 || q.Types[0] != profile.TypeSamples {
		t.Errorf("types = %v", q.Types)
	}
	if got, want := foldedText(t, q, profile.TypeSamples), foldedText(t, p, profile.TypeSamples); got != want {
		t.Error("folded stacks differ after a pprof round trip")
	}
	count := func(p *profile.Profile, keep func(profile.Sample) bool) int64 {
		var n int64
		for _, s := range p.Samples {
			if keep(s) {
				n += s.Value
			}
		}
		return n
	}
	checks := []struct {
		name string
		keep func(*profile.Profile, profile.Sample) bool
	}{
		{"RUNNABLE", func(_ *profile.Profile, s profile.Sample) bool { return s.State == profile.StateRunnable }},
		{"task 0", func(p *profile.Profile, s profile.Sample) bool { return p.Label(s, profile.LabelTaskID) == "0" }},
		{"host", func(p *profile.Profile, s profile.Sample) bool {
			return p.Label(s, profile.LabelHost) == "as-MacBook-Pro"
		}},
		{"thread Finalizer", func(p *profile.Profile, s profile.Sample) bool { return p.Threads[s.Thread].Name == "Finalizer" }},
	}
	for _, c := range checks {
		want := count(p, func(s profile.Sample) bool { return c.keep(p, s) })
		got := count(q, func(s profile.Sample) bool { return c.keep(q, s) })
		if got != want || want == 0 {
			t.Errorf("%s: %d samples after round trip, %d before", c.name, got, want)
		}
	}
}

// TestGoToolPprof runs `go tool pprof -top` on encoded profiles of every
// type: it shows the natural type of each (CPU time where there is any,
// not the first type), with its total, and the period type is that type.
func TestGoToolPprof(t *testing.T) {
	asyncProfiler, err := jfr.Decode(corpus.Read(t, "jfr", "async-profiler.jfr.gz"), "async-profiler.jfr.gz")
	if err != nil {
		t.Fatal(err)
	}
	cortex, err := jfr.Decode(corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"), "cortex.jfr.gz")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		p      *profile.Profile
		types  []profile.SampleType
		want   profile.SampleType
		period int64
	}{
		{"wall before cpu", asyncProfiler, nil, profile.TypeCPU, 10_000_000},
		{"samples", straggler(t), nil, profile.TypeSamples, 1},
		{"no time: the first type", cortex, []profile.SampleType{profile.TypeLockCount, profile.TypeAllocBytes}, profile.TypeLockCount, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := encodePprof(t, tt.p, EncodeOptions{Types: tt.types})
			path := filepath.Join(t.TempDir(), "p.pb.gz")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			id, _ := tt.p.TypeIndex(tt.want)
			if r := pproftool.Top(t, path); r.Type != tt.want.Name || r.Total != tt.p.Total(id) {
				t.Errorf("go tool pprof shows %s, total %d; want %s, %d:\n%.600s", r.Type, r.Total, tt.want.Name, tt.p.Total(id), r.Text)
			}
			gp, err := gprofile.ParseData(raw)
			if err != nil {
				t.Fatal(err)
			}
			if pt := gp.PeriodType; pt == nil || pt.Type != tt.want.Name || pt.Unit != tt.want.Unit || (tt.period > 0 && gp.Period != tt.period) {
				t.Errorf("period type %v, period %d; want %v every %d", pt, gp.Period, tt.want, tt.period)
			}
		})
	}
}

// TestDecodeGoHeapProfile decodes a heap profile written by the Go
// runtime: four sample types, real mappings and inlined functions.
func TestDecodeGoHeapProfile(t *testing.T) {
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = 512 * 1024 }()
	keep := make([][]byte, 0, 100)
	for i := range 100 {
		keep = append(keep, make([]byte, 1000+i))
	}
	runtime.GC()
	var b bytes.Buffer
	if err := runtimepprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(keep)
	raw, err := gprofile.ParseData(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var uncompressed bytes.Buffer
	if err := raw.WriteUncompressed(&uncompressed); err != nil {
		t.Fatal(err)
	}
	if !Sniff(uncompressed.Bytes()) {
		t.Error("Sniff = false on an uncompressed Go heap profile")
	}
	p, err := Decode(b.Bytes(), "heap.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	want := []profile.SampleType{profile.TypeAllocObjects, profile.TypeAllocBytes, profile.TypeLiveObjects, profile.TypeLiveBytes}
	if len(p.Types) != len(want) {
		t.Fatalf("types = %v, want %v", p.Types, want)
	}
	for i := range want {
		if p.Types[i] != want[i] {
			t.Errorf("type %d = %v, want %v", i, p.Types[i], want[i])
		}
		var rawTotal int64
		for _, s := range raw.Sample {
			rawTotal += s.Value[i]
		}
		if got := p.Total(profile.TypeID(i)); got != rawTotal {
			t.Errorf("%v: total %d, want %d", want[i], got, rawTotal)
		}
	}
	found := false
	for _, f := range p.Frames {
		if strings.HasSuffix(f.Name, "TestDecodeGoHeapProfile") {
			found = true
			if f.Kind != profile.KindNative || !strings.HasSuffix(f.File, "pprof_test.go") || f.Line == 0 {
				t.Errorf("test frame = %+v, want native, in pprof_test.go with a line", f)
			}
		}
	}
	if !found {
		t.Error("no frame for this test function")
	}
}

// TestInlinedAndLabels decodes a hand-built profile with inlined
// functions, an unsymbolized location and labels.
func TestInlinedAndLabels(t *testing.T) {
	m := &gprofile.Mapping{ID: 1, File: "/usr/lib/libjvm.so"}
	run := &gprofile.Function{ID: 1, Name: "java/lang/Thread.run", Filename: "Thread.java"}
	work := &gprofile.Function{ID: 2, Name: "com/example/Work.inner", Filename: "Work.java"}
	py := &gprofile.Function{ID: 3, Name: "process", Filename: "/a/job.py"}
	gp := &gprofile.Profile{
		SampleType: []*gprofile.ValueType{{Type: "cpu", Unit: "nanoseconds"}, {Type: "custom", Unit: "widgets"}},
		Mapping:    []*gprofile.Mapping{m},
		Function:   []*gprofile.Function{run, work, py},
		Location: []*gprofile.Location{
			{ID: 1, Mapping: m, Line: []gprofile.Line{{Function: work, Line: 7}, {Function: run, Line: 833}}},
			{ID: 2, Mapping: m, Address: 0xbeef},
			{ID: 3, Line: []gprofile.Line{{Function: py, Line: 20}}},
		},
		TimeNanos:     1e18,
		DurationNanos: 5e9,
	}
	gp.Sample = []*gprofile.Sample{
		{Location: []*gprofile.Location{gp.Location[1], gp.Location[0]}, Value: []int64{10, 0},
			Label:    map[string][]string{"thread_name": {"Executor task launch worker for task 3"}, "spark_executor_id": {"1"}, "thread_state": {"RUNNABLE"}},
			NumLabel: map[string][]int64{"bytes": {4096}, "thread_id": {42}}},
		{Location: []*gprofile.Location{gp.Location[2]}, Value: []int64{0, 3}},
	}
	var b bytes.Buffer
	if err := gp.Write(&b); err != nil {
		t.Fatal(err)
	}
	p, err := Decode(b.Bytes(), "hand.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	if p.Start != 1e18 || p.End != 1e18+5e9 {
		t.Errorf("start, end = %d, %d", p.Start, p.End)
	}
	if len(p.Types) != 2 || p.Types[0] != profile.TypeCPU || p.Types[1] != (profile.SampleType{Name: "custom", Unit: "widgets"}) {
		t.Errorf("types = %v", p.Types)
	}
	if len(p.Samples) != 2 {
		t.Fatalf("%d samples, want 2 (zero values dropped)", len(p.Samples))
	}
	s := p.Samples[0]
	var names []string
	for _, f := range p.Stack(s.Stack, nil) {
		fr := p.Frames[f]
		names = append(names, fr.Name+"/"+fr.Kind.String())
	}
	if got, want := strings.Join(names, ";"), "java/lang/Thread.run/java;com/example/Work.inner/java;libjvm.so+0xbeef/native"; got != want {
		t.Errorf("stack = %s, want %s", got, want)
	}
	if th := p.Threads[s.Thread]; th.Name != "Executor task launch worker for task 3" || th.ID != 42 {
		t.Errorf("thread = %+v", th)
	}
	if s.State != profile.StateRunnable {
		t.Errorf("state = %v", s.State)
	}
	if got := p.LabelSet(s.Labels).String(); got != `{bytes="4096", spark_executor_id="1"}` {
		t.Errorf("labels = %s", got)
	}
	if f := p.Frames[p.Leaf(p.Samples[1].Stack)]; f.Kind != profile.KindPython || f.Line != 20 || f.Name != "/a/job.py:process" {
		t.Errorf("python frame = %+v", f)
	}

	// Encoding again keeps thread, state, labels and both types.
	q, err := Decode(encodePprof(t, p, EncodeOptions{}), "again")
	if err != nil {
		t.Fatal(err)
	}
	s2 := q.Samples[0]
	if q.Threads[s2.Thread] != p.Threads[s.Thread] || s2.State != s.State || q.LabelSet(s2.Labels).String() != p.LabelSet(s.Labels).String() {
		t.Errorf("after round trip: thread %+v, state %v, labels %v", q.Threads[s2.Thread], s2.State, q.LabelSet(s2.Labels))
	}
	if q.Total(1) != 3 || q.Total(0) != 10 || q.Start != p.Start || q.End != p.End {
		t.Errorf("after round trip: totals %d, %d; span %d-%d", q.Total(0), q.Total(1), q.Start, q.End)
	}
	// Selecting one type writes only that one.
	r, err := Decode(encodePprof(t, p, EncodeOptions{Types: []profile.SampleType{{Name: "custom", Unit: "widgets"}}}), "custom")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Types) != 1 || r.Total(0) != 3 {
		t.Errorf("custom only: types %v, total %d", r.Types, r.Total(0))
	}
}

func TestEncodeErrors(t *testing.T) {
	p := profile.New()
	p.AddType(profile.TypeCPU)
	tests := []struct {
		types []profile.SampleType
		want  string
	}{
		{[]profile.SampleType{profile.TypeWall}, "pprof: profile has no sample type wall:nanoseconds"},
		{[]profile.SampleType{profile.TypeCPU, profile.TypeCPU}, "pprof: sample type cpu:nanoseconds selected twice"},
	}
	for _, tt := range tests {
		err := Encode(&bytes.Buffer{}, p, EncodeOptions{Types: tt.types})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Encode(%v) = %v, want %q", tt.types, err, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good := encodePprof(t, straggler(t), EncodeOptions{})
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"text", []byte("a;b 1\n"), "x.pb: not a valid pprof profile"},
		{"bad gzip", []byte{0x1f, 0x8b, 0, 0}, "x.pb: offset 0: bad gzip header"},
		{"truncated gzip", good[:len(good)/2], "x.pb: decompressing gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode(tt.in, "x.pb")
			var de *profile.DecodeError
			if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a DecodeError starting %q", err, tt.want)
			}
			if p == nil {
				t.Fatal("nil profile")
			}
		})
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   []byte
		want bool
	}{
		{[]byte{0x0a, 0x04, 0x08, 0x01, 0x10, 0x02}, true},
		{[]byte{0x0a, 0x84, 0x01, 0x10, 0x02}, true},
		{[]byte("a;b 1"), false},
		{[]byte(`{"a":1}`), false},
		{[]byte{0x0a}, false},
	}
	for _, tt := range tests {
		if got := Sniff(tt.in); got != tt.want {
			t.Errorf("Sniff(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	// A small real profile: the first 10 samples of the straggler.
	p := straggler(f)
	p.Samples = p.Samples[:10]
	var b bytes.Buffer
	if err := Encode(&b, p, EncodeOptions{}); err != nil {
		f.Fatal(err)
	}
	gp, err := gprofile.ParseData(b.Bytes())
	if err != nil {
		f.Fatal(err)
	}
	var raw bytes.Buffer
	if err := gp.WriteUncompressed(&raw); err != nil {
		f.Fatal(err)
	}
	f.Add(raw.Bytes())
	f.Add(b.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, "fuzz")
		if p == nil {
			t.Fatal("nil profile")
		}
		if err != nil {
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *profile.DecodeError", err)
			}
			return
		}
		if err := Encode(&bytes.Buffer{}, p, EncodeOptions{}); err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
	})
}

// BenchmarkEncode writes the Uber straggler profile (47,473 samples).
func BenchmarkEncode(b *testing.B) {
	p := straggler(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := Encode(&bytes.Buffer{}, p, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeLabelled writes labelled samples as a merge leaves them:
// dump1.jfr with its task contexts' labels, as 100 executors (14,500
// samples after aggregation).
func BenchmarkEncodeLabelled(b *testing.B) {
	one, err := jfr.DecodeWithOptions(corpus.Read(b, "jfr", "dump1.jfr.gz"), "dump1.jfr",
		jfr.Options{Labels: corpus.Read(b, "jfr", "dump1.labels.pb.gz")})
	if err != nil {
		b.Fatal(err)
	}
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true})
	for e := range 100 {
		cp := *one
		cp.Labels = profile.Labels{{Name: profile.LabelExecutorID, Value: strconv.Itoa(e)}}
		m.Add(&cp)
	}
	p := m.Profile()
	b.ReportAllocs()
	for b.Loop() {
		if err := Encode(io.Discard, p, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
