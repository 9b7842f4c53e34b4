package format_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/format/speedscope"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// TestDetect checks that each corpus file is recognised by content alone,
// whatever its name.
func TestDetect(t *testing.T) {
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"jfr", "dump1.jfr.gz"}, "jfr"},
		{[]string{"jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"}, "jfr"},
		{[]string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}, "uber"},
		{[]string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz"}, "uber"},
		{[]string{"jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.json.gz"}, "uber"},
		{[]string{"jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz"}, "folded"},
		{[]string{"pyspark-profiler", "phil_stopwatch", "profile_straggler", "s_1_stack.json.gz"}, "pyspark"},
		{[]string{"pyspark-profiler", "phil_stopwatch", "profile_straggler", "s_1_1401_cpumem.json.gz"}, "pyspark"},
	}
	for _, tt := range tests {
		name := filepath.Join(tt.path...)
		t.Run(name, func(t *testing.T) {
			f, ok := format.Detect(corpus.Read(t, tt.path...))
			if !ok || f.Name != tt.want {
				t.Errorf("Detect = %q, %v; want %q", f.Name, ok, tt.want)
			}
		})
	}
}

// TestDecodeRoundTrip encodes a real recording to pprof and speedscope and
// checks that Decode, given only the bytes (gzipped, under a neutral
// name), detects the format and returns the same CPU total.
func TestDecodeRoundTrip(t *testing.T) {
	p, err := format.Load(corpus.Path(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"), format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := p.TypeIndex(profile.TypeCPU)
	if !ok {
		t.Fatalf("no cpu samples in %v", p.Types)
	}
	want := p.Total(id)
	tests := []struct {
		name   string
		encode func(*bytes.Buffer) error
	}{
		{"pprof", func(b *bytes.Buffer) error {
			return pprof.Encode(b, p, pprof.EncodeOptions{Types: []profile.SampleType{profile.TypeCPU}})
		}},
		{"speedscope", func(b *bytes.Buffer) error {
			return speedscope.Encode(b, p, speedscope.EncodeOptions{Types: []profile.SampleType{profile.TypeCPU}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.encode(&b); err != nil {
				t.Fatal(err)
			}
			raw, err := format.Decompress(b.Bytes(), tt.name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := format.Detect(raw); !ok || f.Name != tt.name {
				t.Fatalf("Detect = %q, %v", f.Name, ok)
			}
			q, err := format.Decode(b.Bytes(), "upload", format.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			for i := range q.Types {
				if q.Types[i].Family() == "cpu" {
					got += q.Total(profile.TypeID(i))
				}
			}
			if got != want {
				t.Errorf("cpu total after round trip = %d, want %d", got, want)
			}
		})
	}
}

// TestDecodePstats checks that a pstats file written by Python's cProfile
// is detected by content, plain or gzipped, under any name, and labelled
// with the RDD or UDF its name gives.
func TestDecodePstats(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("pstats", "testdata", "cprofile.pstats"))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := format.Detect(raw); !ok || f.Name != "pstats" {
		t.Fatalf("Detect = %q, %v", f.Name, ok)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	for _, tc := range []struct {
		name, source string
		data         []byte
		label, value string
	}{
		{"plain", "dump/rdd_5.pstats", raw, profile.LabelRDDID, "5"},
		{"gzipped", "dump/udf_9_perf.pstats.gz", gz.Bytes(), profile.LabelUDFID, "9"},
		{"neutral name", "upload", raw, profile.LabelRDDID, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := format.Decode(tc.data, tc.source, format.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := p.TypeIndex(profile.TypeWall); !ok || len(p.Samples) == 0 {
				t.Errorf("types %v, %d samples; want wall samples", p.Types, len(p.Samples))
			}
			if got, _ := p.Labels.Get(tc.label); got != tc.value {
				t.Errorf("label %s = %q, want %q", tc.label, got, tc.value)
			}
		})
	}
}

// TestDecodeLabels checks that Decode labels samples from Spark thread
// names and the profile from Spark's profiler output path.
func TestDecodeLabels(t *testing.T) {
	data := corpus.Read(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	p, err := format.Decode(data, "out/app-20240101000000-0001_2/profile-exec-7.jfr", format.Options{Format: "uber"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		profile.LabelAppID:      "app-20240101000000-0001",
		profile.LabelAppAttempt: "2",
		profile.LabelExecutorID: "7",
		profile.LabelRole:       "executor",
	} {
		if got, _ := p.Labels.Get(name); got != want {
			t.Errorf("label %s = %q, want %q", name, got, want)
		}
	}
	pools := map[string]int64{}
	for _, s := range p.Samples {
		pools[p.Label(s, profile.LabelThreadPool)] += s.Value
	}
	if pools["task"] == 0 || pools["rpc"] == 0 {
		t.Errorf("samples by thread pool = %v; want task and rpc threads recognised", pools)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		opts format.Options
		want string
	}{
		{"unknown", []byte("\x00\x01\x02 not a profile"), format.Options{}, "not a profile in any known format"},
		{"bad format name", []byte("a;b 1\n"), format.Options{Format: "xml"}, `unknown format "xml"`},
		{"forced wrong format", []byte("a;b 1\n"), format.Options{Format: "jfr"}, "in.txt"},
		{"gzip bomb", gzipBytes(t, bytes.Repeat([]byte("a;b 1\n"), 1<<16)), format.Options{MaxSize: 1 << 10}, "gzip bomb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := format.Decode(tt.data, "in.txt", tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "in.txt") {
				t.Errorf("err = %v, want one naming in.txt and saying %q", err, tt.want)
			}
		})
	}
}

// TestLoadAllOrder checks that results arrive in input order with errors
// in place, and that an error from the callback stops LoadAll.
func TestLoadAllOrder(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 9 {
		p := filepath.Join(dir, "p"+string(rune('a'+i))+".folded")
		body := strings.Repeat("main;work 1\n", i+1)
		if i == 4 {
			body = "\x00 garbage"
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var got []string
	err := format.LoadAll(paths, format.Options{}, func(r format.Result) error {
		if (r.Err != nil) != (r.Path == paths[4]) {
			t.Errorf("%s: err = %v", r.Path, r.Err)
		}
		if r.Err == nil && r.Profile.Total(0) != int64(len(got)+1) {
			t.Errorf("%s: total %d, want %d", r.Path, r.Profile.Total(0), len(got)+1)
		}
		got = append(got, r.Path)
		return nil
	})
	if err != nil || strings.Join(got, ",") != strings.Join(paths, ",") {
		t.Errorf("LoadAll = %v; order %v", err, got)
	}
	stop := errors.New("stop")
	n := 0
	err = format.LoadAll(paths, format.Options{}, func(format.Result) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("LoadAll after a failing callback = %v with %d calls, want stop after 2", err, n)
	}
}

func gzipBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzDecode feeds arbitrary bytes through detection and every decoder:
// Decode may fail but must not panic, and a profile it returns must have
// consistent tables.
func FuzzDecode(f *testing.F) {
	for _, rel := range [][]string{
		{"jfr", "dump1.jfr.gz"},
		{"jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz"},
		{"pyspark-profiler", "phil_stopwatch", "profile_straggler", "s_1_stack.json.gz"},
	} {
		data := corpus.Read(f, rel...)
		f.Add(data[:min(len(data), 4096)])
	}
	pstatsFile, err := os.ReadFile(filepath.Join("pstats", "testdata", "cprofile.pstats"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pstatsFile)
	f.Add([]byte("{\"stacktrace\":[\"a.b\"],\"threadName\":\"Executor task launch worker for task 1.0 in stage 2.0 (TID 3)\",\"count\":1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := format.Decode(data, "fuzz", format.Options{MaxSize: 1 << 20})
		if err != nil {
			return
		}
		for _, s := range p.Samples {
			if int(s.Type) >= len(p.Types) || int(s.Stack) >= p.NumStacks() {
				t.Fatalf("sample %+v out of range: %d types, %d stacks", s, len(p.Types), p.NumStacks())
			}
		}
	})
}
