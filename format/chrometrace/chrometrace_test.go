package chrometrace

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// sample is a decoded sample in words: its thread, stack (root first,
// ";"-separated), value and time.
type sample struct {
	thread, stack string
	value, time   int64
}

func samples(p *profile.Profile) []sample {
	var out []sample
	var buf []profile.FrameID
	for _, s := range p.Samples {
		var names []string
		for _, f := range p.Stack(s.Stack, buf[:0]) {
			names = append(names, p.Frames[f].Name)
		}
		out = append(out, sample{p.Threads[s.Thread].Name, strings.Join(names, ";"), s.Value, s.Time})
	}
	return out
}

// A trace as py-spy 0.4 writes one: each thread's name first, then the
// frames that begin and end on its stack, root first and leaf first.
const pySpyTrace = `[{"args":{"filename":"","line":null,"name":"140: MainThread"},"cat":"py-spy","name":"thread_name","ph":"M","pid":7,"tid":0,"ts":0},
{"args":{"filename":"job.py","line":9},"cat":"py-spy","name":"<module>","ph":"B","pid":7,"tid":0,"ts":1000},
{"args":{"filename":"job.py","line":4},"cat":"py-spy","name":"parse","ph":"B","pid":7,"tid":0,"ts":1000},
{"args":{"filename":"job.py","line":4},"cat":"py-spy","name":"parse","ph":"E","pid":7,"tid":0,"ts":31000},
{"args":{"filename":"job.py","line":6},"cat":"py-spy","name":"write","ph":"B","pid":7,"tid":0,"ts":31000},
{"args":{"filename":"job.py","line":6},"cat":"py-spy","name":"write","ph":"E","pid":7,"tid":0,"ts":41000},
{"args":{"filename":"job.py","line":9},"cat":"py-spy","name":"<module>","ph":"E","pid":7,"tid":0,"ts":41000}]`

func TestDecode(t *testing.T) {
	const start = int64(1_700_000_000e9)
	for _, tc := range []struct {
		name  string
		trace string
		start int64
		want  []sample
	}{{
		name:  "py-spy's trace, timed",
		trace: pySpyTrace,
		start: start,
		want: []sample{
			{"python 7 0 (140: MainThread)", "job.py:<module>;job.py:parse", 30e6, start + 16e6},
			{"python 7 0 (140: MainThread)", "job.py:<module>;job.py:write", 10e6, start + 36e6},
		},
	}, {
		name:  "untimed",
		trace: pySpyTrace,
		want: []sample{
			{"python 7 0 (140: MainThread)", "job.py:<module>;job.py:parse", 30e6, 0},
			{"python 7 0 (140: MainThread)", "job.py:<module>;job.py:write", 10e6, 0},
		},
	}, {
		name: "a long stretch is cut into samples of MaxSpan",
		trace: `{"traceEvents":[{"name":"wait","ph":"B","pid":1,"tid":2,"ts":0,"args":{"filename":"w.py"}},
			{"name":"wait","ph":"E","pid":1,"tid":2,"ts":250000,"args":{"filename":"w.py"}}]}`,
		start: start,
		want: []sample{
			{"python 1 2", "w.py:wait", 100e6, start + 50e6},
			{"python 1 2", "w.py:wait", 100e6, start + 150e6},
			{"python 1 2", "w.py:wait", 50e6, start + 225e6},
		},
	}, {
		name: "threads apart, other phases skipped",
		trace: `[{"name":"a","ph":"B","pid":1,"tid":1,"ts":0},{"name":"b","ph":"B","pid":2,"tid":2,"ts":5},
			{"name":"n","ph":"C","pid":1,"tid":1,"ts":7},
			{"name":"a","ph":"E","pid":1,"tid":1,"ts":10},{"name":"b","ph":"E","pid":2,"tid":2,"ts":20}]`,
		want: []sample{{"python 1 1", "a", 10e3, 0}, {"python 2 2", "b", 15e3, 0}},
	}, {
		// py-spy --subprocesses: a forked worker's thread has the id of
		// the thread that forked it, and py-spy's events of the two
		// follow each other as one thread's.
		name: "a forked process's thread, one with its parent's",
		trace: `[{"name":"a","ph":"B","pid":1,"tid":0,"ts":0},
			{"name":"a","ph":"E","pid":2,"tid":0,"ts":5},{"name":"b","ph":"B","pid":2,"tid":0,"ts":5},
			{"name":"b","ph":"E","pid":1,"tid":0,"ts":10},{"name":"a","ph":"B","pid":1,"tid":0,"ts":10},
			{"name":"a","ph":"E","pid":1,"tid":0,"ts":20}]`,
		want: []sample{{"python 1 0", "a", 5e3, 0}, {"python 2 0", "b", 5e3, 0}, {"python 1 0", "a", 10e3, 0}},
	}, {
		name:  "frames begun and never ended: no time",
		trace: `[{"name":"a","ph":"B","pid":1,"tid":1,"ts":0}]`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if !Sniff([]byte(tc.trace)) {
				t.Errorf("Sniff does not take the trace")
			}
			p, err := DecodeAt([]byte(tc.trace), "trace.json", tc.start)
			if err != nil {
				t.Fatal(err)
			}
			if got := samples(p); !slices.Equal(got, tc.want) {
				t.Errorf("samples:\n got %v\nwant %v", got, tc.want)
			}
			if p.Types[0] != profile.TypeWall {
				t.Errorf("type %v, want wall", p.Types[0])
			}
		})
	}
}

func TestProcess(t *testing.T) {
	p, err := Decode([]byte(pySpyTrace), "trace.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		thread profile.Thread
		pid    int64
		ok     bool
	}{
		{p.Threads[p.Samples[0].Thread], 7, true},
		{profile.Thread{Name: "python 12 0"}, 12, true},
		{profile.Thread{Name: "main"}, 0, false},
		{profile.Thread{Name: "python main"}, 0, false},
		{profile.Thread{}, 0, false},
	} {
		if pid, ok := Process(tc.thread); pid != tc.pid || ok != tc.ok {
			t.Errorf("Process(%q) = %d, %v; want %d, %v", tc.thread.Name, pid, ok, tc.pid, tc.ok)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, trace, want string
	}{
		{"not JSON", `[{"name":"a","ph":"B",`, "not a trace"},
		{"not events", `[1,2]`, "not a trace"},
		{"no begin", `[{"name":"thread_name","ph":"M","pid":1,"tid":1,"ts":0}]`, "no B (begin) events"},
		{"no time", `[{"name":"a","ph":"B","pid":1,"tid":1}]`, `[0]: B event without a time`},
		{"time going back", `[{"name":"a","ph":"B","pid":1,"tid":1,"ts":9},{"name":"a","ph":"E","pid":1,"tid":1,"ts":3}]`, "[1]: time 3 µs is before"},
		{"end of a frame not begun", `[{"name":"a","ph":"B","pid":1,"tid":1,"ts":0},{"name":"b","ph":"E","pid":1,"tid":1,"ts":3}]`, `[1]: E event for "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.trace), "trace.json")
			var de *profile.DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "trace.json") {
				t.Errorf("error %v, want a DecodeError of trace.json with %q", err, tc.want)
			}
		})
	}
}

func TestShortFile(t *testing.T) {
	for path, want := range map[string]string{
		"/opt/venv/lib/python3.11/site-packages/pyspark/worker.py": "pyspark/worker.py",
		"/opt/spark/python/lib/pyspark.zip/pyspark/worker.py":      "pyspark/worker.py",
		"/usr/lib/python3/dist-packages/numpy/core/numeric.py":     "numpy/core/numeric.py",
		"/tmp/spark-4f1e/userFiles-9a2c/planted.py":                "planted.py",
		"job.py":                        "job.py",
		"<frozen importlib._bootstrap>": "<frozen importlib._bootstrap>",
	} {
		if got := shortFile(path); got != want {
			t.Errorf("shortFile(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{
		{pySpyTrace, true},
		{`  {"traceEvents":[{"ph":"E"`, true},
		{`[{"ph":"X","name":"a"}]`, false},
		{`{"$schema":"https://www.speedscope.app/file-format-schema.json"}`, false},
		{"a;b;c 1\n", false},
	} {
		if got := Sniff([]byte(tc.head)); got != tc.want {
			t.Errorf("Sniff(%.30q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(pySpyTrace), int64(0))
	f.Add([]byte(`{"traceEvents":[{"name":"a","ph":"B","pid":1,"tid":1,"ts":0},{"name":"a","ph":"E","pid":1,"tid":1,"ts":1e9}]}`), int64(1e18))
	f.Fuzz(func(t *testing.T, data []byte, start int64) {
		p, err := DecodeAt(data, "fuzz", start)
		if err != nil {
			return
		}
		for _, s := range p.Samples {
			if s.Value <= 0 || s.Value > MaxSpan {
				t.Fatalf("sample of %d ns", s.Value)
			}
		}
	})
}
