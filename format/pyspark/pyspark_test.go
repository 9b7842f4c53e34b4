package pyspark

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

const corpusDir = "pyspark-profiler/phil_stopwatch/profile_straggler"

// TestStackCorpus checks the README's expectation for the straggler's
// Python stacks: job_straggler.py:processs is on 1,456 of 1,475 samples.
func TestStackCorpus(t *testing.T) {
	data := corpus.Read(t, corpusDir, "s_1_stack.json.gz")
	if !Sniff(data) {
		t.Fatal("Sniff = false on s_1_stack.json")
	}
	p, err := Decode(data, "s_1_stack.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	if len(p.Types) != 1 || p.Types[0] != profile.TypeSamples {
		t.Fatalf("types = %v, want [%v]", p.Types, profile.TypeSamples)
	}
	var total, processs int64
	var buf []profile.FrameID
	for _, s := range p.Samples {
		total += s.Value
		buf = p.Stack(s.Stack, buf[:0])
		for _, f := range buf {
			if strings.HasSuffix(p.Frames[f].Name, "job_straggler.py:processs") {
				processs += s.Value
				break
			}
		}
	}
	if total != 1475 || processs != 1456 {
		t.Errorf("processs in %d of %d samples, want 1456 of 1475", processs, total)
	}
	// Root first: the innermost frame of the first record is processs:20.
	leaf := p.Frames[p.Leaf(p.Samples[0].Stack)]
	if leaf.Line != 20 || !strings.HasSuffix(leaf.Name, ":processs") || !strings.HasSuffix(leaf.File, "job_straggler.py") {
		t.Errorf("leaf of first sample = %+v, want job_straggler.py:processs line 20", leaf)
	}
}

func TestCPUMemCorpus(t *testing.T) {
	tests := []struct {
		file    string
		pid     string
		records int
	}{
		{"s_1_1401_cpumem.json.gz", "1401", 153},
		{"s_1_1402_cpumem.json.gz", "1402", 136},
		{"s_1_1403_cpumem.json.gz", "1403", 1186},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := corpus.Read(t, corpusDir, tt.file)
			if !Sniff(data) {
				t.Fatal("Sniff = false")
			}
			p, err := Decode(data, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Warnings) > 0 {
				t.Errorf("warnings: %q", p.Warnings)
			}
			if len(p.Samples) != 0 {
				t.Errorf("%d samples, want none", len(p.Samples))
			}
			if len(p.Series) != 4 {
				t.Fatalf("%d series, want 4", len(p.Series))
			}
			for _, s := range p.Series {
				if len(s.Points) != tt.records {
					t.Errorf("%s: %d points, want %d", s.Name, len(s.Points), tt.records)
				}
				if pid, _ := s.Labels.Get(LabelPID); pid != tt.pid {
					t.Errorf("%s: pid %q, want %q", s.Name, pid, tt.pid)
				}
			}
		})
	}
}

// TestStragglerWorker checks the README: the straggler worker 1403 runs one
// core for 565 s and grows its RSS to 10,689 MiB.
func TestStragglerWorker(t *testing.T) {
	p, err := Decode(corpus.Read(t, corpusDir, "s_1_1403_cpumem.json.gz"), "s_1_1403_cpumem.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := float64(p.End-p.Start) / 1e9; d < 565 || d > 566 {
		t.Errorf("duration %.1f s, want 565.3", d)
	}
	var maxRSS, sumCPU float64
	var n int
	for _, s := range p.Series {
		for _, pt := range s.Points {
			switch s.Name {
			case SeriesRSS:
				maxRSS = max(maxRSS, pt.Value)
			case SeriesCPU:
				sumCPU += pt.Value
				n++
			}
		}
	}
	if mib := math.Round(maxRSS / (1 << 20)); mib != 10689 {
		t.Errorf("max RSS %.0f MiB, want 10689", mib)
	}
	if mean := sumCPU / float64(n); mean < 90 || mean > 105 {
		t.Errorf("mean cpu_percent %.1f, want about 100", mean)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantErr  string // substring of the error; "" for success
		warnings []string
		samples  int
	}{
		{"empty", "", "no PySpark profiler records", nil, 0},
		{"not json", "hello\n", "t.json:1: expected a JSON object", nil, 0},
		{"bad json", "{\"stacktrace\":[}\n", "t.json:1: not a PySpark record", nil, 0},
		{"no count", `{"stacktrace":["a.py:f:1"]}`, "t.json:1: stack record without \"count\"", nil, 0},
		{"negative", `{"stacktrace":[],"count":-1}`, "negative count", nil, 0},
		{"unknown", `{"x":1}`, "neither a stack record", nil, 0},
		{"skip bad line", "{\"stacktrace\":[\"a.py:f:1\"],\"count\":2,\"i_d\":\"1_id\"}\r\n\nnope\n{\"stacktrace\":[],\"count\":1}", "",
			[]string{"line 3: expected a JSON object, found \"nope\""}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.in), "t.json")
			if tt.wantErr != "" {
				var de *profile.DecodeError
				if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a DecodeError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Samples) != tt.samples {
				t.Errorf("%d samples, want %d", len(p.Samples), tt.samples)
			}
			if strings.Join(p.Warnings, "|") != strings.Join(tt.warnings, "|") {
				t.Errorf("warnings = %q, want %q", p.Warnings, tt.warnings)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{`{"stacktrace":[],"count":1,"i_d":"1_id"}`, true},
		{`{"pid": 1, "epochMillis": 2, "pmem_rss": 3, "cpu_percent": 4.0}`, true},
		{`{"stacktrace":[],"count":1,"threadName":"main"}`, false},
		{`a;b 1`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.in)); got != tt.want {
			t.Errorf("Sniff(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"s_1_stack.json.gz", "s_1_1402_cpumem.json.gz"} {
		data := corpus.Read(f, corpusDir, name)
		if len(data) > 4096 {
			data = data[:4096]
		}
		f.Add(data)
	}
	f.Add([]byte(`{"stacktrace":["a:b:c::1"],"count":9223372036854775807}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, "fuzz")
		if err != nil {
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *profile.DecodeError", err)
			}
		}
		if p == nil {
			t.Fatal("nil profile")
		}
	})
}
