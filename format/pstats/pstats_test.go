package pstats

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// pyFunc is one function as testdata/stats_json.py prints Python's pstats
// reading of it.
type pyFunc struct {
	File    string  `json:"file"`
	Line    int64   `json:"line"`
	Name    string  `json:"name"`
	CC      int64   `json:"cc"`
	NC      int64   `json:"nc"`
	TT      float64 `json:"tt"`
	CT      float64 `json:"ct"`
	Callers []struct {
		File string          `json:"file"`
		Line int64           `json:"line"`
		Name string          `json:"name"`
		Edge json.RawMessage `json:"edge"`
	} `json:"callers"`
}

// pythonStats runs python on testdata/stats_json.py over files.
func pythonStats(t *testing.T, python string, files ...string) map[string][]pyFunc {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "stats_json.py"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, append([]string{script}, files...)...).Output()
	if err != nil {
		t.Fatalf("%s stats_json.py: %v", python, err)
	}
	var m map[string][]pyFunc
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// compareWithPython checks the decoding of the pstats file at path against
// Python's reading of it, function by function, and the profile Decode
// makes of it against the functions' self times. It returns how many
// functions matched.
func compareWithPython(t *testing.T, path string, want []pyFunc) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Read(data, path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d functions, Python reads %d", path, len(got), len(want))
	}
	var selfNanos int64
	matched := 0
	for i, w := range want {
		g := got[i]
		if g.Func != (Func{w.File, w.Line, w.Name}) || g.PrimitiveCalls != w.CC || g.Calls != w.NC || g.Self != w.TT || g.Cumulative != w.CT {
			t.Errorf("%s: function %d: got %v cc=%d nc=%d tt=%v ct=%v, Python %s:%d(%s) cc=%d nc=%d tt=%v ct=%v",
				path, i, g.Func, g.PrimitiveCalls, g.Calls, g.Self, g.Cumulative, w.File, w.Line, w.Name, w.CC, w.NC, w.TT, w.CT)
			continue
		}
		if !sameCallers(t, got, g, w) {
			continue
		}
		matched++
		selfNanos += nanos(g.Self)
	}
	p, err := Decode(data, path)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	wall, _ := p.TypeIndex(profile.TypeWall)
	if total := p.Total(wall); total != selfNanos {
		t.Errorf("%s: profile total %d ns, the functions' self times sum to %d ns", path, total, selfNanos)
	}
	leafTime := map[profile.FrameID]int64{}
	for _, s := range p.Samples {
		leafTime[p.Leaf(s.Stack)] += s.Value
	}
	for _, g := range got {
		f := p.AddFrame(frame(g.Func))
		if leafTime[f] != nanos(g.Self) {
			t.Errorf("%s: %v: %d ns on stacks ending in it, self time %d ns", path, g.Func, leafTime[f], nanos(g.Self))
		}
	}
	return matched
}

// sameCallers compares a function's callers with Python's.
func sameCallers(t *testing.T, all []Stat, g Stat, w pyFunc) bool {
	t.Helper()
	if len(g.Callers) != len(w.Callers) {
		t.Errorf("%v: %d callers, Python %d", g.Func, len(g.Callers), len(w.Callers))
		return false
	}
	for j, wc := range w.Callers {
		gc := g.Callers[j]
		if all[gc.Caller].Func != (Func{wc.File, wc.Line, wc.Name}) {
			t.Errorf("%v: caller %d is %v, Python %s:%d(%s)", g.Func, j, all[gc.Caller].Func, wc.File, wc.Line, wc.Name)
			return false
		}
		var edge []float64
		if err := json.Unmarshal(wc.Edge, &edge); err != nil {
			var n int64
			if err := json.Unmarshal(wc.Edge, &n); err != nil {
				t.Fatalf("edge %s: %v", wc.Edge, err)
			}
			edge = []float64{float64(n), float64(n), 0, 0}
		}
		if len(edge) != 4 || float64(gc.Calls) != edge[0] || float64(gc.PrimitiveCalls) != edge[1] || gc.Self != edge[2] || gc.Cumulative != edge[3] {
			t.Errorf("%v: caller %v: got %+v, Python %s", g.Func, all[gc.Caller].Func, gc, wc.Edge)
			return false
		}
	}
	return true
}

// TestGoldenAgainstPython compares the golden files, written by
// testdata/gen.py, with Python's reading of them saved in
// testdata/python.json; when python3 is on PATH, also with a fresh one.
func TestGoldenAgainstPython(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "python.json"))
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string][]pyFunc
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		funcs int
	}{
		{"cprofile.pstats", 11},
		{"profile.pstats", 13},
	} {
		t.Run(tc.file, func(t *testing.T) {
			n := compareWithPython(t, filepath.Join("testdata", tc.file), saved[tc.file])
			if n != tc.funcs {
				t.Errorf("%d functions matched Python's, want %d", n, tc.funcs)
			}
		})
	}
	if py, err := exec.LookPath("python3"); err == nil {
		fresh := pythonStats(t, py, filepath.Join("testdata", "cprofile.pstats"))
		compareWithPython(t, filepath.Join("testdata", "cprofile.pstats"), fresh[filepath.Join("testdata", "cprofile.pstats")])
	}
}

// TestPstatsStacks checks the stacks of the golden cProfile file: leaf's
// self time split between its two callers by the time each spent in it,
// and fib's recursion cut where fib repeats.
func TestPstatsStacks(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cprofile.pstats"))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := Read(data, "cprofile.pstats")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(data, "cprofile.pstats")
	if err != nil {
		t.Fatal(err)
	}
	stacks := map[string]int64{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		var names []string
		for _, f := range p.Stack(s.Stack, buf) {
			names = append(names, p.Frames[f].Name)
		}
		stacks[strings.Join(names, ";")] += s.Value
	}
	edge := func(callee, caller string) float64 {
		for _, s := range stats {
			if s.Name == callee {
				for _, e := range s.Callers {
					if stats[e.Caller].Name == caller {
						return e.Self
					}
				}
			}
		}
		t.Fatalf("no edge %s <- %s", caller, callee)
		return 0
	}
	const root = "<built-in method builtins.exec>;<string>:<module>;example.py:main;"
	for _, tc := range []struct {
		stack string
		want  int64
	}{
		{root + "example.py:left;example.py:leaf", nanos(edge("leaf", "left"))},
		{root + "example.py:right;example.py:leaf", nanos(edge("leaf", "right"))},
	} {
		if got := stacks[tc.stack]; math.Abs(float64(got-tc.want)) > 1 {
			t.Errorf("%s: %d ns, want %d", tc.stack, got, tc.want)
		}
	}
	for s := range stacks {
		if strings.Count(s, "example.py:fib") > 1 {
			t.Errorf("stack %s repeats fib", s)
		}
	}
}

// TestPstatsBadInput checks that broken files fail with an error naming
// the offset and field.
func TestPstatsBadInput(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "cprofile.pstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string // in the error
	}{
		{"empty", nil, "offset 0: pstats: type code needs 1 bytes, 0 are left: the file is truncated"},
		{"truncated", good[:len(good)/2], "the file is truncated"},
		{"not a dict", []byte("i\x01\x00\x00\x00"), "holds a int, not the dict"},
		{"trailing bytes", append([]byte("{0"), 'N'), "offset 2: pstats: 1 bytes after the dict"},
		{"key not a tuple", []byte("{i\x01\x00\x00\x00N0"), "offset 1: stats key: pstats: want a (file, line, function) tuple, found int"},
		{"key of wrong types", []byte("{)\x03z\x01ai\x01\x00\x00\x00i\x00\x00\x00\x00N0"), "want a (str, int, str) tuple, found (str, int, int)"},
		{"stat not a tuple", []byte("{)\x03z\x01ai\x01\x00\x00\x00z\x01fN0"), "offset 1: a:1(f): pstats: want a (cc, nc, tt, ct, callers) tuple, found None"},
		{"negative count", []byte("{)\x03z\x01ai\x01\x00\x00\x00z\x01f)\x05i\xff\xff\xff\xffi\x00\x00\x00\x00g" + zeros(8) + "g" + zeros(8) + "{00"), "a:1(f).cc: pstats: want a count (an int, 0 or more), found int -1"},
		{"NaN seconds", []byte("{)\x03z\x01ai\x01\x00\x00\x00z\x01f)\x05i\x00\x00\x00\x00i\x00\x00\x00\x00g\x00\x00\x00\x00\x00\x00\xf8\x7fg" + zeros(8) + "{00"), "a:1(f).tt: pstats: seconds NaN not in"},
		{"callers not a dict", []byte("{)\x03z\x01ai\x01\x00\x00\x00z\x01f)\x05i\x00\x00\x00\x00i\x00\x00\x00\x00g" + zeros(8) + "g" + zeros(8) + "N0"), "a:1(f).callers: pstats: want a dict, found None"},
		{"bad ref", []byte("{r\x05\x00\x00\x00N0"), "offset 1: pstats: stats entry 0 (from offset 1): reference 5 to an object not yet read"},
		{"unknown code", []byte("{)\x03c"), "offset 3: pstats: stats entry 0 (from offset 1): unknown marshal type code 0x63"},
		{"deep nesting", []byte("{" + strings.Repeat(")\x01", 40)), "nested more than 32 deep"},
		{"huge length", []byte("{(\xff\xff\xff\x7f"), "length 2147483647 is negative or longer than the 0 bytes left"},
		{"long overflow", []byte("{)\x03z\x01al\x06\x00\x00\x00"), "int of 6 15-bit digits does not fit 64 bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data, "x.pstats")
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want a *profile.DecodeError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.pstats") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func zeros(n int) string { return strings.Repeat("\x00", n) }

func TestPstatsSniff(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "cprofile.pstats"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		head []byte
		want bool
	}{
		{"cProfile file", good, true},
		{"empty dict", []byte("\xfb0"), true},
		{"JSON object", []byte(`{"shared":{"frames":[]}}`), false},
		{"JSON with space", []byte("{ (3"), false},
		{"dict of ints", []byte("{i\x01\x00\x00\x00"), false},
		{"too short", []byte("{"), false},
	} {
		if got := Sniff(tc.head); got != tc.want {
			t.Errorf("%s: Sniff = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzDecode checks that no input crashes the decoder or makes a profile
// whose total differs from the self times it read.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"cprofile.pstats", "profile.pstats"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\xfb0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, "fuzz.pstats")
		if err != nil {
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *profile.DecodeError", err)
			}
			return
		}
		stats, err := Read(data, "fuzz.pstats")
		if err != nil {
			t.Fatalf("Decode succeeded, Read failed: %v", err)
		}
		var want int64
		for _, s := range stats {
			want += nanos(s.Self)
		}
		wall, _ := p.TypeIndex(profile.TypeWall)
		if got := p.Total(wall); got != want {
			t.Fatalf("total %d, self times %d", got, want)
		}
	})
}

// BenchmarkDecode decodes the golden cProfile file.
func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "cprofile.pstats"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, "cprofile.pstats"); err != nil {
			b.Fatal(err)
		}
	}
}
