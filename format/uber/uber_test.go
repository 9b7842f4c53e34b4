package uber

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

const stopwatch = "jvm-profiler/phil_stopwatch"

func decodeCorpus(t testing.TB, rel ...string) *profile.Profile {
	t.Helper()
	data := corpus.Read(t, rel...)
	if !Sniff(data[:min(len(data), 512)]) {
		t.Fatalf("Sniff(%s) = false", rel[len(rel)-1])
	}
	p, err := Decode(data, rel[len(rel)-1])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	return p
}

func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestCombinedStackGolden folds phil_stopwatch's CombinedStack.json, Uber
// Stacktrace records followed by PySpark stack records, and compares the
// result with the folded output phil_stopwatch checked in.
func TestCombinedStackGolden(t *testing.T) {
	p := decodeCorpus(t, stopwatch, "profile_slacker", "CombinedStack.json.gz")
	var out bytes.Buffer
	if err := folded.Encode(&out, p, folded.EncodeOptions{Lines: true}); err != nil {
		t.Fatal(err)
	}
	got := lines(out.Bytes())
	want := lines(corpus.Read(t, stopwatch, "profile_slacker", "CombinedStack.folded.gz"))
	slices.Sort(want)
	if len(want) != 43 {
		t.Fatalf("golden has %d lines, want 43", len(want))
	}
	if !slices.Equal(got, want) {
		for _, l := range got {
			if !slices.Contains(want, l) {
				t.Errorf("extra line: %.200s", l)
			}
		}
		for _, l := range want {
			if !slices.Contains(got, l) {
				t.Errorf("missing line: %.200s", l)
			}
		}
	}
	if total := p.Total(0); total != 42329 {
		t.Errorf("total %d samples, want 42329", total)
	}
}

// TestStragglerHotFrame checks the README's verdict on ProfileStraggler: of
// the RUNNABLE samples off idle frames, ~99% are in JobStraggler's closure
// appending to an immutable List with SeqLike's $colon$plus, whose hottest
// self frame is TraversableOnce$class.nonEmpty.
func TestStragglerHotFrame(t *testing.T) {
	p := decodeCorpus(t, stopwatch, "ProfileStraggler", "Stacktrace.json.gz")
	if len(p.Samples) != 47473 {
		t.Errorf("%d samples, want 47473", len(p.Samples))
	}
	states := map[profile.ThreadState]int{}
	empty := 0
	for _, s := range p.Samples {
		states[s.State]++
		if s.Stack == profile.NoStack {
			empty++
		}
	}
	wantStates := map[profile.ThreadState]int{profile.StateWaiting: 24459, profile.StateRunnable: 12082, profile.StateTimedWaiting: 10928, profile.StateBlocked: 4}
	for st, n := range wantStates {
		if states[st] != n {
			t.Errorf("%v: %d samples, want %d", st, states[st], n)
		}
	}
	if empty != 1078 {
		t.Errorf("%d empty stacks, want 1078", empty)
	}

	// Keep the RUNNABLE samples whose leaf is not a known idle frame.
	idle := []string{"socketAccept", "socketRead0", "epollWait", "kevent0", "poll0", "accept0", "dumpThreads0", "readBytes"}
	busy := profile.New()
	busy.Types = nil
	typ := busy.AddType(profile.TypeSamples)
	var buf []profile.FrameID
	var inJob, total int64
	for _, s := range p.Samples {
		if s.State != profile.StateRunnable || s.Stack == profile.NoStack {
			continue
		}
		leaf := p.Frames[p.Leaf(s.Stack)]
		if slices.ContainsFunc(idle, func(m string) bool { return leaf.Method() == m }) {
			continue
		}
		buf = p.Stack(s.Stack, buf[:0])
		ids := make([]profile.FrameID, len(buf))
		has := false
		for i, f := range buf {
			ids[i] = busy.AddFrame(p.Frames[f])
			if strings.Contains(p.Frames[f].Name, "JobStraggler$$anonfun$3.apply") {
				has = true
			}
		}
		busy.Add(profile.Sample{Stack: busy.AddStack(ids), Value: s.Value, Type: typ})
		total += s.Value
		if has {
			inJob += s.Value
		}
	}
	if share := float64(inJob) / float64(total); share < 0.98 {
		t.Errorf("JobStraggler on %.1f%% of %d busy samples, want ~99%%", 100*share, total)
	}
	top := profile.NewTree(busy, profile.TypeSamples).Top(1)
	// The hottest frame is the immutable append or what it spends its time in.
	tree := profile.NewTree(busy, profile.TypeSamples)
	var appendTotal int64
	for _, f := range tree.Top(0) {
		if f.Name == "scala.collection.SeqLike$class.$colon$plus" {
			appendTotal = f.Total
		}
	}
	if float64(appendTotal) < 0.95*float64(total) {
		t.Errorf("SeqLike$class.$colon$plus on %d of %d busy samples, want ~99%%", appendTotal, total)
	}
	// The README: leaf TraversableOnce$class.nonEmpty in 1,044 samples.
	if len(top) == 0 || top[0].Name != "scala.collection.TraversableOnce$class.nonEmpty" || top[0].Self != 1044 {
		t.Errorf("top self frame = %v, want TraversableOnce$class.nonEmpty with 1044", top)
	}
	t.Logf("top self frame %s: %d of %d busy samples", top[0].Name, top[0].Self, total)

	if h, _ := p.Labels.Get(profile.LabelHost); h != "as-MacBook-Pro" {
		t.Errorf("host label %q, want as-MacBook-Pro", h)
	}
}

func seriesByName(p *profile.Profile, name, label, value string) *profile.Series {
	for i, s := range p.Series {
		if s.Name != name {
			continue
		}
		if v, _ := s.Labels.Get(label); label == "" || v == value {
			return &p.Series[i]
		}
	}
	return nil
}

func TestCPUAndMemoryCorpus(t *testing.T) {
	p := decodeCorpus(t, stopwatch, "ProfileStraggler", "CpuAndMemory.json.gz")
	last := func(name, label, value string) float64 {
		s := seriesByName(p, name, label, value)
		if s == nil {
			t.Fatalf("no series %s{%s=%q}", name, label, value)
		}
		return s.Points[len(s.Points)-1].Value
	}
	tests := []struct {
		name, label, value string
		points             int
		last               float64
	}{
		{SeriesProcessCPULoad, "", "", 10758, math.NaN()},
		{SeriesSystemCPULoad, "", "", 10758 - 4657, math.NaN()},
		{SeriesGCCount, LabelGC, "PS Scavenge", 10758, 2892},
		{SeriesGCTime, LabelGC, "PS Scavenge", 10758, 30722e6},
		{SeriesGCCount, LabelGC, "PS MarkSweep", 10758, 4},
		{SeriesGCTime, LabelGC, "PS MarkSweep", 10758, 289e6},
		{SeriesBufferUsed, LabelPool, "direct", 10758, math.NaN()},
		{SeriesPoolUsed, LabelPool, "PS Old Gen", 10758, math.NaN()},
	}
	for _, tt := range tests {
		s := seriesByName(p, tt.name, tt.label, tt.value)
		if s == nil {
			t.Errorf("no series %s{%s=%q}", tt.name, tt.label, tt.value)
			continue
		}
		if len(s.Points) != tt.points {
			t.Errorf("%s{%s}: %d points, want %d", tt.name, tt.value, len(s.Points), tt.points)
		}
		if !math.IsNaN(tt.last) && last(tt.name, tt.label, tt.value) != tt.last {
			t.Errorf("%s{%s}: last %v, want %v", tt.name, tt.value, last(tt.name, tt.label, tt.value), tt.last)
		}
	}
	var sum, maxHeap float64
	cpu := seriesByName(p, SeriesProcessCPULoad, "", "")
	for _, pt := range cpu.Points {
		sum += pt.Value
	}
	// processCpuLoad is a share of the 8 CPUs; ~1.44 cores on average.
	if cores := 8 * sum / float64(len(cpu.Points)); math.Abs(cores-1.44) > 0.05 {
		t.Errorf("mean process CPU %.2f cores, want ~1.44", cores)
	}
	for _, pt := range seriesByName(p, SeriesHeapUsed, "", "").Points {
		maxHeap = max(maxHeap, pt.Value)
	}
	if mib := maxHeap / (1 << 20); math.Abs(mib-517) > 1 {
		t.Errorf("max heap used %.1f MiB, want ~517", mib)
	}
	if d := float64(p.End-p.Start) / 1e9; math.Abs(d-1075.6) > 0.5 {
		t.Errorf("recording spans %.1f s, want 1,075.6", d)
	}
}

func TestProcessInfoCorpus(t *testing.T) {
	p := decodeCorpus(t, stopwatch, "profile_straggler", "ProcessInfo.json.gz")
	if got := p.Labels.String(); got != `{host="as-MacBook-Pro.local"}` {
		t.Errorf("labels = %s, want host only (appId is null)", got)
	}
	s := seriesByName(p, SeriesXmx, "", "")
	if s == nil || len(s.Points) != 1 || s.Points[0].Value != 1073741824 {
		t.Errorf("xmx series = %+v, want one point 1073741824", s)
	}
}

// TestPySparkStraggler checks the README's expectations for the PySpark
// straggler's JVM: 28,519 records of 29,160 samples, the task 0 thread
// RUNNABLE in socketRead0 (waiting for Python) for ~566 samples, and a
// nearly idle JVM.
func TestPySparkStraggler(t *testing.T) {
	p := decodeCorpus(t, stopwatch, "profile_straggler", "Stacktrace.json.gz")
	if n, total := len(p.Samples), p.Total(0); n != 28519 || total != 29160 {
		t.Errorf("%d records of %d samples, want 28519 of 29160", n, total)
	}
	var read int64
	for _, s := range p.Samples {
		if s.State == profile.StateRunnable && s.Stack != profile.NoStack &&
			p.Frames[p.Leaf(s.Stack)].Name == "java.net.SocketInputStream.socketRead0" &&
			p.Threads[s.Thread].Name == "Executor task launch worker for task 0" {
			read += s.Value
		}
	}
	if read < 550 || read > 580 {
		t.Errorf("task 0 RUNNABLE in socketRead0 for %d samples, want ~566", read)
	}

	m := decodeCorpus(t, stopwatch, "profile_straggler", "CpuAndMemory.json.gz")
	cpu := seriesByName(m, SeriesProcessCPULoad, "", "")
	if cpu == nil || len(cpu.Points) != 5700 {
		t.Fatalf("process CPU series = %v, want 5,700 points", cpu)
	}
	var sum float64
	for _, pt := range cpu.Points {
		sum += pt.Value
	}
	if mean := sum / float64(len(cpu.Points)); mean > 0.01 {
		t.Errorf("mean process CPU load %.4f, want ~0.004", mean)
	}
}

// TestNoRecords decodes phil_stopwatch's Spark console log, which holds
// agent start-up lines but no records (the File reporter wrote those).
func TestNoRecords(t *testing.T) {
	data := corpus.Read(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz")
	if Sniff(data[:512]) {
		t.Error("Sniff = true on a Spark console log")
	}
	_, err := Decode(data, "JobStraggler.log")
	want := "JobStraggler.log: offset 0: no Stacktrace, CpuAndMemory or ProcessInfo records in 161 lines"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %q...", err, want)
	}
}

// TestConsoleReporter decodes a log in which Console reporter lines are
// mixed with other output.
func TestConsoleReporter(t *testing.T) {
	log := strings.Join([]string{
		"Java Agent 1.0.0 premain args: reporter=com.uber.profiling.reporters.ConsoleOutputReporter",
		`ConsoleOutputReporter - Stacktrace: {"stacktrace":["java.lang.Thread.sleep","Main.main"],"endEpoch":1550400755483,"appId":"app-1","host":"h1","name":"1@h1","threadState":"TIMED_WAITING","count":2,"startEpoch":1550400754659,"threadName":"main"}`,
		"2019-02-17 10:52:40 INFO SparkContext:54 - Running Spark version 2.4.0",
		`[main] ConsoleOutputReporter - CpuAndMemory: {"epochMillis":1550400755468,"processCpuLoad":0.5,"systemCpuLoad":"NaN","name":"1@h1","host":"h1","gc":[]}`,
		`ConsoleOutputReporter - MethodDuration: {"metricName":"duration.count","metricValue":1}`,
		`ConsoleOutputReporter - Stacktrace: {"stacktrace":[],"endEpoch":1550400756483,"appId":"app-1","host":"h1","name":"1@h1","threadState":"RUNNABLE","count":1,"threadName":"Executor task launch worker for task 7"}`,
		`ConsoleOutputReporter - Stacktrace: {"stacktrace":[`,
	}, "\r\n")
	if !Sniff([]byte(log)) {
		t.Error("Sniff = false")
	}
	p, err := Decode([]byte(log), "console.log")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := folded.Encode(&out, p, folded.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), " 1\nMain.main;java.lang.Thread.sleep 2\n"; got != want {
		t.Errorf("folded = %q, want %q", got, want)
	}
	wantWarn := []string{
		"line 7: not a jvm-profiler record: cannot parse JSON: cannot parse object: cannot parse object value: cannot parse array: missing ']'; unparsed tail: \"\"",
		"skipped 2 lines that are not jvm-profiler records",
		"skipped 1 records of unsupported kinds",
	}
	if !slices.Equal(p.Warnings, wantWarn) {
		t.Errorf("warnings = %q, want %q", p.Warnings, wantWarn)
	}
	if got := p.Labels.String(); got != `{host="h1", spark_app_id="app-1"}` {
		t.Errorf("labels = %s", got)
	}
	s := p.Samples[1]
	if s.State != profile.StateRunnable || s.Time != 1550400756483e6 || p.Threads[s.Thread].Name != "Executor task launch worker for task 7" {
		t.Errorf("sample = %+v, labels %v", s, p.SampleLabels(s))
	}
	if cpu := seriesByName(p, SeriesProcessCPULoad, "", ""); cpu == nil || cpu.Points[0].Value != 0.5 {
		t.Errorf("process CPU series = %+v", cpu)
	}
	if seriesByName(p, SeriesSystemCPULoad, "", "") != nil {
		t.Error("a NaN-only system CPU series was kept")
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "t.json: offset 0: no Stacktrace, CpuAndMemory or ProcessInfo records in 0 lines"},
		{"log only", "hello\nworld\n", "t.json: offset 0: no Stacktrace, CpuAndMemory or ProcessInfo records in 2 lines"},
		{"unsupported only", "x ConsoleOutputReporter - IO: {\"a\":1}", "t.json: offset 0: no Stacktrace, CpuAndMemory or ProcessInfo records in 1 lines"},
		{"bad json", "{\"stacktrace\":[1}\n", "t.json:1: not a jvm-profiler record: cannot parse JSON"},
		{"frame not a string", "{\"stacktrace\":[1],\"count\":1}\n", `t.json:1: "stacktrace"[0]: expected a string, found 1`},
		{"count not an integer", "{\"stacktrace\":[],\"count\":1.5}\n", `t.json:1: "count": expected an integer, found 1.5`},
		{"thread not a string", "{\"stacktrace\":[],\"count\":1,\"threadName\":{}}\n", `t.json:1: "threadName": expected a string, found {}`},
		{"gc not an array", "{\"gc\":3}\n", `t.json:1: "gc": expected an array, found 3`},
		{"gc element", "{\"gc\":[{\"name\":\"G1\",\"collectionCount\":true}]}\n", `t.json:1: "gc"[0]: "collectionCount": expected a number, found true`},
		{"no count", "\n{\"stacktrace\":[],\"threadName\":\"x\"}", "t.json:2: missing \"count\" in Stacktrace record"},
		{"negative", `{"stacktrace":[],"count":-3}`, "t.json:1: negative count -3 in Stacktrace record"},
		{"bad number", `{"processCpuLoad":"high"}`, `t.json:1: "processCpuLoad": expected a number, found "high"`},
		{"unknown", `{"metricName":"x"}`, "t.json:1: not a Stacktrace, CpuAndMemory or ProcessInfo record"},
		{"console no fields", `ConsoleOutputReporter - Stacktrace: {"a":1}`, "t.json:1: Stacktrace record without its fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.in), "t.json")
			var de *profile.DecodeError
			if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want a DecodeError starting %q", err, tt.wantErr)
			}
			if p == nil {
				t.Fatal("nil profile")
			}
		})
	}
}

func TestSkipBadLines(t *testing.T) {
	var b strings.Builder
	for i := range 150 {
		fmt.Fprintf(&b, "{\"stacktrace\":[\"A.b\"],\"count\":%d,\"threadName\":\"t\"}\n{bad\n", i)
	}
	p, err := Decode([]byte(b.String()), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 150 {
		t.Errorf("%d samples, want 150", len(p.Samples))
	}
	const shown = 100 // profile.BadLines warns of the first hundred
	if len(p.Warnings) != shown+1 || !strings.HasPrefix(p.Warnings[0], "line 2: not a jvm-profiler record") || p.Warnings[shown] != "50 more bad lines not shown" {
		t.Errorf("warnings: %d, first %q, last %q", len(p.Warnings), p.Warnings[0], p.Warnings[len(p.Warnings)-1])
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"stacktrace":[],"endEpoch":1,"threadName":"main"}`, true},
		{`{"nonHeapMemoryTotalUsed":1.0,"heapMemoryTotalUsed":2.0}`, true},
		{`{"jvmInputArguments":"-Xmx1g","xmxBytes":1}`, true},
		{"x\n2019 ConsoleOutputReporter - Stacktrace: {}", true},
		{`{"stacktrace":[],"count":1,"i_d":"1_id"}`, false},
		{`{"stacktrace":["java.lang.Object.wait","java.lang.ref.ReferenceQ`, true},
		{`{"Event":"SparkListenerLogStart"}`, false},
		{"a;b 1\n", false},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.in)); got != tt.want {
			t.Errorf("Sniff(%.40q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func firstLines(data []byte, n int) []byte {
	end := 0
	for i := 0; i < n && end < len(data); i++ {
		j := bytes.IndexByte(data[end:], '\n')
		if j < 0 {
			return data
		}
		end += j + 1
	}
	return data[:end]
}

func FuzzDecode(f *testing.F) {
	for _, rel := range [][]string{
		{stopwatch, "ProfileStraggler", "Stacktrace.json.gz"},
		{stopwatch, "ProfileStraggler", "CpuAndMemory.json.gz"},
		{stopwatch, "profile_straggler", "ProcessInfo.json.gz"},
	} {
		f.Add(firstLines(corpus.Read(f, rel...), 3))
	}
	f.Add([]byte(`ConsoleOutputReporter - Stacktrace: {"stacktrace":["a.B"],"count":1,"i_d":"x"}`))
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
		var out bytes.Buffer
		if err := folded.Encode(&out, p, folded.EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkDecodeStacktrace decodes ProfileStraggler's 47,473 Stacktrace
// records.
func BenchmarkDecodeStacktrace(b *testing.B) {
	data := corpus.Read(b, stopwatch, "ProfileStraggler", "Stacktrace.json.gz")
	records := bytes.Count(data, []byte{'\n'})
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, "Stacktrace.json"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
