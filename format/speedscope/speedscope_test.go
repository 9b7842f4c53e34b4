package speedscope

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/format/uber"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// validate checks doc against the required fields and types of
// https://www.speedscope.app/file-format-schema.json for sampled profiles.
func validate(doc []byte) error {
	var f map[string]any
	if err := json.Unmarshal(doc, &f); err != nil {
		return err
	}
	if f["$schema"] != Schema {
		return fmt.Errorf("$schema = %v", f["$schema"])
	}
	sh, ok := f["shared"].(map[string]any)
	if !ok {
		return errors.New("shared: missing or not an object")
	}
	frames, ok := sh["frames"].([]any)
	if !ok {
		return errors.New("shared.frames: missing or not an array")
	}
	for i, fr := range frames {
		m, ok := fr.(map[string]any)
		if !ok {
			return fmt.Errorf("shared.frames[%d]: not an object", i)
		}
		if _, ok := m["name"].(string); !ok {
			return fmt.Errorf("shared.frames[%d].name: missing or not a string", i)
		}
		for _, k := range []string{"line", "col"} {
			if v, ok := m[k]; ok {
				if _, ok := v.(float64); !ok {
					return fmt.Errorf("shared.frames[%d].%s: not a number", i, k)
				}
			}
		}
	}
	profiles, ok := f["profiles"].([]any)
	if !ok {
		return errors.New("profiles: missing or not an array")
	}
	units := map[any]bool{"none": true, "nanoseconds": true, "microseconds": true, "milliseconds": true, "seconds": true, "bytes": true}
	for i, pr := range profiles {
		m, ok := pr.(map[string]any)
		if !ok {
			return fmt.Errorf("profiles[%d]: not an object", i)
		}
		if m["type"] != "sampled" {
			return fmt.Errorf("profiles[%d].type = %v", i, m["type"])
		}
		if _, ok := m["name"].(string); !ok {
			return fmt.Errorf("profiles[%d].name: missing or not a string", i)
		}
		if !units[m["unit"]] {
			return fmt.Errorf("profiles[%d].unit = %v", i, m["unit"])
		}
		for _, k := range []string{"startValue", "endValue"} {
			if _, ok := m[k].(float64); !ok {
				return fmt.Errorf("profiles[%d].%s: missing or not a number", i, k)
			}
		}
		samples, ok := m["samples"].([]any)
		if !ok {
			return fmt.Errorf("profiles[%d].samples: missing or not an array", i)
		}
		weights, ok := m["weights"].([]any)
		if !ok || len(weights) != len(samples) {
			return fmt.Errorf("profiles[%d].weights: missing or not one per sample", i)
		}
		for j, s := range samples {
			st, ok := s.([]any)
			if !ok {
				return fmt.Errorf("profiles[%d].samples[%d]: not an array", i, j)
			}
			for _, x := range st {
				if v, ok := x.(float64); !ok || v < 0 || int(v) >= len(frames) || v != float64(int(v)) {
					return fmt.Errorf("profiles[%d].samples[%d]: bad frame index %v", i, j, x)
				}
			}
			if _, ok := weights[j].(float64); !ok {
				return fmt.Errorf("profiles[%d].weights[%d]: not a number", i, j)
			}
		}
	}
	return nil
}

func encode(t testing.TB, p *profile.Profile, opts EncodeOptions) []byte {
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

// TestRoundTripStraggler encodes the Uber straggler profile, validates it
// against the schema and decodes it to the same stacks.
func TestRoundTripStraggler(t *testing.T) {
	rel := []string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}
	p, err := uber.Decode(corpus.Read(t, rel...), "Stacktrace.json")
	if err != nil {
		t.Fatal(err)
	}
	doc := encode(t, p, EncodeOptions{})
	if err := validate(doc); err != nil {
		t.Fatalf("invalid speedscope document: %v", err)
	}
	if !Sniff(doc[:200]) {
		t.Error("Sniff = false on Encode's output")
	}
	q, err := Decode(doc, "straggler.speedscope.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Types) != 1 || q.Types[0] != profile.TypeSamples {
		t.Errorf("types = %v, want [samples:count]", q.Types)
	}
	if got, want := foldedText(t, q, profile.TypeSamples), foldedText(t, p, profile.TypeSamples); got != want {
		t.Error("folded stacks differ after a speedscope round trip")
	}
}

// TestEncodeGolden encodes a small profile with two types and compares it
// with testdata/encode.speedscope.json.
func TestEncodeGolden(t *testing.T) {
	p := profile.New()
	p.Source = "small"
	cpu := p.AddType(profile.TypeCPU)
	alloc := p.AddType(profile.TypeAllocObjects)
	run := p.AddFrame(profile.Frame{Name: "java.lang.Thread.run", Line: 833, Kind: profile.KindJava})
	work := p.AddFrame(profile.Frame{Name: "Work.apply", Kind: profile.KindJava})
	py := p.AddFrame(profile.Frame{Name: "/a/job.py:process", File: "/a/job.py", Line: 20, Kind: profile.KindPython})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run, work}), Value: 10, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{py}), Value: 3, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run, work}), Value: 5, Type: cpu})
	p.Add(profile.Sample{Stack: profile.NoStack, Value: 1, Type: cpu})
	p.Add(profile.Sample{Stack: p.AddStack([]profile.FrameID{run}), Value: 7, Type: alloc})
	got := encode(t, p, EncodeOptions{})
	if err := validate(got); err != nil {
		t.Fatalf("invalid speedscope document: %v", err)
	}
	golden := filepath.Join("testdata", "encode.speedscope.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	q, err := Decode(got, "small")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range p.Types {
		if a, b := foldedText(t, q, typ), foldedText(t, p, typ); a != b {
			t.Errorf("%v after round trip:\n%s\nwant:\n%s", typ, a, b)
		}
	}
	if f := q.Frames[q.Leaf(q.Samples[1].Stack)]; f.Kind != profile.KindPython || f.File != "/a/job.py" || f.Line != 20 {
		t.Errorf("python frame after round trip = %+v", f)
	}
	only := encode(t, p, EncodeOptions{Types: []profile.SampleType{profile.TypeAllocObjects}})
	if n := bytes.Count(only, []byte(`"type":"sampled"`)); n != 1 {
		t.Errorf("selecting one type wrote %d profiles", n)
	}
	if err := Encode(&bytes.Buffer{}, p, EncodeOptions{Types: []profile.SampleType{profile.TypeWall}}); err == nil {
		t.Error("Encode with a missing type succeeded")
	}
}

func TestDecode(t *testing.T) {
	const frames = `"shared":{"frames":[{"name":"main","file":"app.py","line":3},{"name":"work"},{"name":"java.lang.Thread.run"}]}`
	tests := []struct {
		name, doc string
		want      string // folded output per type, types in order, "|"-separated
		types     string
		thread    string
	}{
		{
			name:   "evented",
			doc:    `{"$schema":"` + Schema + `",` + frames + `,"profiles":[{"type":"evented","name":"MainThread","unit":"milliseconds","startValue":0,"endValue":12,"events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":2},{"type":"C","frame":1,"at":5},{"type":"C","frame":0,"at":10},{"type":"O","frame":2,"at":10}]}]}`,
			want:   "app.py:main 7000000\napp.py:main;work 3000000\njava.lang.Thread.run 2000000\n",
			types:  "[wall:nanoseconds]",
			thread: "MainThread",
		},
		{
			name:  "sampled typed",
			doc:   `{` + frames + `,"profiles":[{"type":"sampled","name":"cpu","unit":"microseconds","startValue":0,"endValue":3,"samples":[[0,1],[0],[0,1]],"weights":[1,1.5,0.25]},{"type":"sampled","name":"alloc_bytes","unit":"bytes","startValue":0,"endValue":9,"samples":[[2],[]],"weights":[8,1]}]}`,
			want:  "app.py:main 1500\napp.py:main;work 1250\n| 1\njava.lang.Thread.run 8\n",
			types: "[cpu:nanoseconds alloc_bytes:bytes]",
		},
		{
			name:  "sampled none",
			doc:   `{` + frames + `,"profiles":[{"type":"sampled","name":"","unit":"none","startValue":0,"endValue":3,"samples":[[0,1]],"weights":[3]}]}`,
			want:  "app.py:main;work 3\n",
			types: "[samples:count]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.doc), "t.json")
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(p.Types); got != tt.types {
				t.Errorf("types = %s, want %s", got, tt.types)
			}
			var outs []string
			for _, typ := range p.Types {
				outs = append(outs, foldedText(t, p, typ))
			}
			if got := strings.Join(outs, "|"); got != tt.want {
				t.Errorf("folded = %q, want %q", got, tt.want)
			}
			if got := p.Threads[p.Samples[0].Thread].Name; got != tt.thread {
				t.Errorf("thread = %q, want %q", got, tt.thread)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	const frames = `"shared":{"frames":[{"name":"a"},{"name":"b"}]}`
	prof := func(s string) string { return `{` + frames + `,"profiles":[` + s + `]}` }
	tests := []struct {
		name, doc, want string
	}{
		{"syntax", `{"shared":{"frames":[}`, "t.json: offset 22: not a speedscope JSON document: invalid character '}'"},
		{"type", `{"shared":{"frames":[{"name":1}]}}`, "t.json: offset 30: shared.frames.name: not a speedscope JSON document"},
		{"no profiles", `{` + frames + `}`, "t.json: profiles: expected at least one profile"},
		{"no name", `{"shared":{"frames":[{"file":"x"}]},"profiles":[{}]}`, `t.json: shared.frames[0]: expected a "name"`},
		{"unit", prof(`{"type":"sampled","unit":"parsecs"}`), `t.json: profiles[0].unit: expected one of none,`},
		{"profile type", prof(`{"type":"tree","unit":"none"}`), `t.json: profiles[0].type: expected "sampled" or "evented", found "tree"`},
		{"weights", prof(`{"type":"sampled","unit":"none","samples":[[0]],"weights":[]}`), "t.json: profiles[0].weights: expected one weight per sample (1), found 0"},
		{"frame range", prof(`{"type":"sampled","unit":"none","samples":[[0,2]],"weights":[1]}`), "t.json: profiles[0].samples[0][1]: frame index 2 out of range [0, 2)"},
		{"negative weight", prof(`{"type":"sampled","unit":"none","samples":[[0]],"weights":[-1]}`), "t.json: profiles[0].weights[0]: expected a non-negative weight, found -1"},
		{"huge weight", prof(`{"type":"sampled","unit":"seconds","samples":[[0]],"weights":[1e300]}`), "t.json: profiles[0].weights[0]: expected a non-negative weight"},
		{"bad close", prof(`{"type":"evented","unit":"none","events":[{"type":"O","frame":0,"at":0},{"type":"C","frame":1,"at":1}]}`), "t.json: profiles[0].events[1]: closes frame 1, which is not the innermost open frame"},
		{"time backwards", prof(`{"type":"evented","unit":"none","events":[{"type":"O","frame":0,"at":5},{"type":"C","frame":0,"at":1}]}`), "t.json: profiles[0].events[1].at: event at 1 precedes the previous one at 5"},
		{"event type", prof(`{"type":"evented","unit":"none","events":[{"type":"X","frame":0,"at":0}]}`), `t.json: profiles[0].events[0].type: expected "O" or "C", found "X"`},
		{"event frame", prof(`{"type":"evented","unit":"none","events":[{"type":"O","frame":-1,"at":0}]}`), "t.json: profiles[0].events[0].frame: frame index -1 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.doc), "t.json")
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
		in   string
		want bool
	}{
		{`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":`, true},
		{"\n {\"exporter\":\"py-spy\",\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"", true},
		{`{"stacktrace":[]}`, false},
		{`a;b 1`, false},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.in)); got != tt.want {
			t.Errorf("Sniff(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "encode.speedscope.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(`{"shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[{"type":"evented","unit":"seconds","endValue":9,"events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":1},{"type":"C","frame":1,"at":2}]}]}`))
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
		var b bytes.Buffer
		if err := Encode(&b, p, EncodeOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := validate(b.Bytes()); err != nil {
			t.Fatalf("re-encoded document invalid: %v", err)
		}
	})
}
