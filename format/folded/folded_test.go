package folded

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/format/uber"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// encode returns p's folded text.
func encode(t testing.TB, p *profile.Profile, opts EncodeOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, p, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // Encode of the result
		types    int
	}{
		{"plain", "a;b;c 3\na;b 2\n", "a;b 2\na;b;c 3\n", 1},
		{"merge", "a;b 1\na;b 2", "a;b 3\n", 1},
		{"crlf blank trailing space", "\r\na;b 1\r\n\r\n  \na;c 2 \r\n", "a;b 1\na;c 2\n", 1},
		{"many spaces and tab", "a;b      7\na\t8\n", "a 8\na;b 7\n", 1},
		{"empty stack", " 610\na 1\n      5\n", " 615\na 1\n", 1},
		{"bracket", "a;b [12]\nc [3]\n", "a;b 12\nc 3\n", 1},
		{"bracket two values", "a;b [1 512]\n", "a;b 1\n", 2},
		{"zero dropped", "a 0\nb 1\n", "b 1\n", 1},
		{"spaces in frames", "Executor task launch;java.lang.Object.wait 4\n", "Executor task launch;java.lang.Object.wait 4\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.in), "t.folded")
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Types) != tt.types {
				t.Errorf("%d types, want %d", len(p.Types), tt.types)
			}
			if got := encode(t, p, EncodeOptions{}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A header names the counts' type and unit; other comments are skipped.
func TestDecodeHeader(t *testing.T) {
	tests := []struct {
		name, in string
		want     profile.SampleType
	}{
		{"header", "# type=cpu unit=nanoseconds\na;b 5\n", profile.TypeCPU},
		{"after comments", "# from sparkprof\n\n# type=alloc_bytes unit=bytes\na 1\n", profile.TypeAllocBytes},
		{"none", "a;b 5\n", profile.TypeSamples},
		{"no unit", "# type=cpu\na 1\n", profile.TypeSamples},
		{"after the first stack", "a 1\n# type=cpu unit=nanoseconds\nb 1\n", profile.TypeSamples},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.in), "t.folded")
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Types) != 1 || p.Types[0] != tt.want {
				t.Errorf("types %v, want [%v]", p.Types, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
		samples        int
	}{
		{"no count", "a;b 1\na;b;c\n", `t.folded:2: expected "stack count", found no count after the stack`, 1},
		{"bad count", "a;b x\n", `t.folded:1: expected a non-negative integer count at the end of the line, found "x"`, 0},
		{"negative", "\n\na -4\n", `t.folded:3: expected a non-negative integer count at the end of the line, found "-4"`, 0},
		{"overflow", "a 99999999999999999999\n", `t.folded:1: count 99999999999999999999 out of range: more than 2^53 (9007199254740992)`, 0},
		{"empty brackets", "a []\n", `t.folded:1: expected a count at the end of the line, found ""`, 0},
		{"no open bracket", "a 3]\n", `t.folded:1: expected "[count]" at the end of the line, found no '['`, 0},
		{"count too large", "a 1\nb 9223372036854775807\n", "t.folded:2: count 9223372036854775807 out of range: more than 2^53 (9007199254740992)", 1},
		{"total too large", "a 9007199254740992\nb [0 1]\nc 1\n", "t.folded:3: the samples counts' sum out of range: more than 2^53 (9007199254740992) by this line", 3},
		{"second total too large", "a [1 9007199254740992]\nb [0 1]\n", "t.folded:2: the samples_2 counts' sum out of range", 2},
		{"too many values", "a [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17]\n", "t.folded:1: expected at most 16 values in brackets, found 17", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.in), "t.folded")
			var de *profile.DecodeError
			if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a DecodeError starting %q", err, tt.want)
			}
			if inRange := strings.Contains(tt.want, "out of range"); errors.Is(err, profile.ErrValueRange) != inRange {
				t.Errorf("errors.Is(err, profile.ErrValueRange) = %v, want %v", !inRange, inRange)
			}
			if len(p.Samples) != tt.samples {
				t.Errorf("partial profile has %d samples, want %d", len(p.Samples), tt.samples)
			}
		})
	}
}

func TestFrame(t *testing.T) {
	tests := []struct {
		in   string
		want profile.Frame
	}{
		{"Foo.<init>_[j]", profile.Frame{Name: "Foo.<init>", Kind: profile.KindJava}},
		{"Foo.bar_[i]", profile.Frame{Name: "Foo.bar", Kind: profile.KindJava}},
		{"do_syscall_64_[k]", profile.Frame{Name: "do_syscall_64", Kind: profile.KindKernel}},
		// Without a suffix, the kind is guessed from the name.
		{"java.lang.Thread.run", profile.Frame{Name: "java.lang.Thread.run", Kind: profile.KindJava}},
		{"/a/helper.py:secondsSleep:44", profile.Frame{Name: "/a/helper.py:secondsSleep:44", Kind: profile.KindPython}},
		{"__GI___libc_write", profile.Frame{Name: "__GI___libc_write", Kind: profile.KindNative}},
	}
	for _, tt := range tests {
		if got := Frame(tt.in); got != tt.want {
			t.Errorf("Frame(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// TestGrafanaGoldens reads grafana/jfr-parser's collapsed goldens, which
// use the bracket form, and checks that encoding gives back their lines.
func TestGrafanaGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus.Dir(t), "jfr", "golden", "*_collapsed.txt.gz"))
	if err != nil || len(files) < 10 {
		t.Fatalf("found %d collapsed goldens (%v), want at least 10", len(files), err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data := corpus.Read(t, "jfr", "golden", name)
			if !Sniff(data[:min(len(data), 4096)]) {
				t.Error("Sniff = false")
			}
			p, err := Decode(data, name)
			if err != nil {
				t.Fatal(err)
			}
			for typ := range p.Types {
				var want []string
				for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
					i := strings.LastIndex(l, " [")
					vals := strings.Fields(l[i+2 : len(l)-1])
					want = append(want, l[:i]+" "+vals[typ])
				}
				slices.Sort(want)
				got := strings.Split(strings.TrimRight(encode(t, p, EncodeOptions{Type: p.Types[typ]}), "\n"), "\n")
				if !slices.Equal(got, want) {
					t.Errorf("type %v: encoded %d lines differ from the golden's %d", p.Types[typ], len(got), len(want))
				}
			}
		})
	}
}

func TestPhilStopwatchGolden(t *testing.T) {
	data := corpus.Read(t, "jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz")
	if !Sniff(data) {
		t.Error("Sniff = false")
	}
	p, err := Decode(data, "CombinedStack.folded")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 43 || p.Total(0) != 42329 {
		t.Errorf("%d samples totalling %d, want 43 totalling 42329", len(p.Samples), p.Total(0))
	}
	var sleep int64
	for _, s := range p.Samples {
		if s.Stack != profile.NoStack && strings.HasSuffix(p.Frames[p.Leaf(s.Stack)].Name, "helper.py:secondsSleep:44") {
			sleep += s.Value
		}
	}
	if sleep != 8402 {
		t.Errorf("helper.py:secondsSleep:44 is the leaf of %d samples, want 8402", sleep)
	}
}

// TestEncodeGolden encodes a profile with two types, lines and awkward
// names and compares with testdata/encode*.folded.
func TestEncodeGolden(t *testing.T) {
	p := profile.New()
	cpu := p.AddType(profile.TypeCPU)
	alloc := p.AddType(profile.TypeAllocBytes)
	run := p.AddFrame(profile.Frame{Name: "java.lang.Thread.run", Line: 833, Kind: profile.KindJava})
	work := p.AddFrame(profile.Frame{Name: "Work.apply(Ljava/lang/String;)V", Line: 12, Kind: profile.KindJava})
	py := p.AddFrame(profile.Frame{Name: "/a/job.py:process", File: "/a/job.py", Line: 20, Kind: profile.KindPython})
	pyOther := p.AddFrame(profile.Frame{Name: "/a/job.py:process", File: "/a/job.py", Line: 21, Kind: profile.KindPython})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run, work}), Value: 10, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run, work}), Value: 5, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run}), Value: 1, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{py}), Value: 3, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{pyOther}), Value: 4, Type: cpu})
	p.Add(profile.Sample{Stack: profile.NoStack, Value: 7, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run, work}), Value: 4096, Type: alloc})
	tests := []struct {
		golden string
		opts   EncodeOptions
	}{
		{"encode_cpu.folded", EncodeOptions{}},
		{"encode_cpu_lines.folded", EncodeOptions{Type: profile.TypeCPU, Lines: true}},
		{"encode_alloc.folded", EncodeOptions{Type: profile.TypeAllocBytes}},
		{"encode_cpu_header.folded", EncodeOptions{Type: profile.TypeCPU, Header: true}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := encode(t, p, tt.opts)
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			q, err := Decode([]byte(got), tt.golden)
			if err != nil {
				t.Errorf("output does not decode: %v", err)
			}
			if tt.opts.Header && q.Types[0] != tt.opts.Type {
				t.Errorf("decoded as %v, want the header's %v", q.Types[0], tt.opts.Type)
			}
		})
	}
	if err := Encode(&bytes.Buffer{}, p, EncodeOptions{Type: profile.TypeWall}); err == nil || !strings.Contains(err.Error(), "no sample type wall:nanoseconds") {
		t.Errorf("Encode with a missing type: err = %v", err)
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"a;b;c 12\na 1\n", true},
		{"a;b [12]\n", true},
		{"# type=cpu unit=nanoseconds\na;b 12\n", true},
		{"# a comment alone\n", false},
		{" 610\n", true},
		{"a;b;c 12\nincomplete line wi", true},
		{"a;b;c\n", false},
		{`{"stacktrace":[]} 1`, false},
		{"\x00\x01 1", false},
		{"", false},
		{"2019-02-17 10:52:40 INFO SparkContext:54 - Running Spark version 2.4.0\n", false},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.in)); got != tt.want {
			t.Errorf("Sniff(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(corpus.Read(f, "jfr", "golden", "dump2_1_memory_live__count_expected_collapsed.txt.gz")[:1024])
	f.Add([]byte(" 610\r\na;b  3\n"))
	f.Add([]byte("a;b [1 2]\nc_[k];d_[j] 4\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, "fuzz")
		if err != nil {
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *profile.DecodeError", err)
			}
			return
		}
		// Encoding and decoding again keeps every type's total.
		for _, typ := range p.Types {
			var b bytes.Buffer
			if err := Encode(&b, p, EncodeOptions{Type: typ}); err != nil {
				t.Fatal(err)
			}
			q, err := Decode(b.Bytes(), "again")
			if err != nil {
				t.Fatalf("re-decoding %q: %v", b.Bytes(), err)
			}
			id, _ := p.TypeIndex(typ)
			if len(q.Samples) > 0 && q.Total(0) != p.Total(id) {
				t.Fatalf("type %v: total %d after round trip, want %d", typ, q.Total(0), p.Total(id))
			}
		}
	})
}

// BenchmarkEncode folds the largest grafana collapsed golden (1,323 stacks).
func BenchmarkEncode(b *testing.B) {
	name := "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0_1_memory_alloc_in_new_tlab_objects__count alloc_in_new_tlab_bytes__bytes_expected_collapsed.txt.gz"
	p, err := Decode(corpus.Read(b, "jfr", "golden", name), name)
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	Encode(&buf, p, EncodeOptions{})
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Encode(&buf, p, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Samples))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkEncodeStraggler folds the Uber straggler profile: 47,473
// samples on 2,000-odd distinct stacks.
func BenchmarkEncodeStraggler(b *testing.B) {
	rel := []string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}
	p, err := uber.Decode(corpus.Read(b, rel...), "Stacktrace.json")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Encode(&buf, p, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportMetric(float64(len(p.Samples))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
