package pstats

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// marshalProgram writes, with Python's own marshal at each version it
// supports from 1 to 4, a stats dict using what the decoder must read:
// non-ASCII (u) and repeated (refs from version 3) strings, a line past
// 32 bits (a long), call counts past 32 bits, floats (text before
// version 2), tuples of both sizes, an old profile module's int edge.
const marshalProgram = `
import marshal, sys
f = ("/jobs/\u00e9t\u00e9.py", 7, "work")
g = ("/jobs/\u00e9t\u00e9.py", 2**40, "main")
b = ("~", 0, "<built-in method builtins.len>")
long = ("/" + "x" * 300 + ".py", 1, "long_path")
stats = {
    f: (3, 5, 0.25, 1.5, {g: (5, 3, 0.25, 1.5)}),
    g: (1, 1, 0.125, 2.0, {}),
    b: (2**33, 2**33, 1e-06, 1e-06, {f: 2**33}),
    long: (0, 0, 0.0, 0.0, {}),
}
for v in range(1, 5):
    with open("%s/v%d.pstats" % (sys.argv[1], v), "wb") as out:
        marshal.dump(stats, out, v)
`

// TestMarshalVersions decodes a stats dict that Python's marshal wrote at
// versions 1 to 4 (Python 3.4 to 3.13 write 4) and checks each gives
// the same stats.
func TestMarshalVersions(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	dir := t.TempDir()
	if b, err := exec.Command(py, "-c", marshalProgram, dir).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, b)
	}
	file := "/jobs/\u00e9t\u00e9.py"
	want := []Stat{
		{Func: Func{file, 7, "work"}, PrimitiveCalls: 3, Calls: 5, Self: 0.25, Cumulative: 1.5,
			Callers: []Edge{{Caller: 1, Calls: 5, PrimitiveCalls: 3, Self: 0.25, Cumulative: 1.5}}},
		{Func: Func{file, 1 << 40, "main"}, PrimitiveCalls: 1, Calls: 1, Self: 0.125, Cumulative: 2},
		{Func: Func{"~", 0, "<built-in method builtins.len>"}, PrimitiveCalls: 1 << 33, Calls: 1 << 33, Self: 1e-6, Cumulative: 1e-6,
			Callers: []Edge{{Caller: 0, Calls: 1 << 33, PrimitiveCalls: 1 << 33}}},
		{Func: Func{"/" + strings.Repeat("x", 300) + ".py", 1, "long_path"}},
	}
	for _, tc := range []struct {
		version string
		codes   string // type codes the file must hold (none a letter of its strings)
	}{
		{"v1", "f"},            // text floats
		{"v2", "g"},            // binary floats
		{"v3", "\xf5\xe7"},     // u and g with FLAG_REF
		{"v4", "\xfa\xa9\xe7"}, // short ascii, small tuple, g with FLAG_REF
	} {
		t.Run(tc.version, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, tc.version+".pstats"))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []byte(tc.codes) {
				if bytes.IndexByte(data, c) < 0 {
					t.Errorf("Python's %s file holds no type code %q: the test does not cover it", tc.version, c)
				}
			}
			got, err := Read(data, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if _, err := Decode(data, tc.version); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// denseProgram marshals the stats of 400 functions each called by every
// other, all with time: the worst shape for making stacks of a call graph.
const denseProgram = `
import marshal, sys
n = 400
fs = [("dense.py", i, "f%d" % i) for i in range(n)]
stats = {f: (n, n, 0.01, 1.0, {g: (1, 1, 0.01 / n, 1.0 / n) for g in fs if g != f}) for f in fs}
with open(sys.argv[1], "wb") as out:
    marshal.dump(stats, out)
`

// denseFile writes the dense stats with python3 and returns their bytes.
func denseFile(tb testing.TB) []byte {
	tb.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		tb.Skip("no python3 on PATH")
	}
	file := filepath.Join(tb.TempDir(), "dense.pstats")
	if b, err := exec.Command(py, "-c", denseProgram, file).CombinedOutput(); err != nil {
		tb.Fatalf("python3: %v\n%s", err, b)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkDecodeDense decodes the dense call graph: 400 functions,
// 159,600 caller edges, the stack builder's worst shape.
func BenchmarkDecodeDense(b *testing.B) {
	data := denseFile(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, "dense.pstats"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDenseCallGraph checks that a call graph where every function calls
// every other decodes with every self time kept and a bounded number of
// stacks.
func TestDenseCallGraph(t *testing.T) {
	data := denseFile(t)
	p, err := Decode(data, "dense.pstats")
	if err != nil {
		t.Fatal(err)
	}
	wall, _ := p.TypeIndex(profile.TypeWall)
	if got, want := p.Total(wall), int64(400*nanos(0.01)); got != want {
		t.Errorf("total %d ns, want %d", got, want)
	}
	if len(p.Samples) > maxWork {
		t.Errorf("%d stacks, more than the %d edges Decode may visit", len(p.Samples), maxWork)
	}
	t.Logf("%d functions, %d stacks", len(p.Frames), len(p.Samples))
}
