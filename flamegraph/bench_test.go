package flamegraph

import (
	"io"
	"strconv"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// wideTree returns the tree of wideProfile(n).
func wideTree(n int) *profile.Tree { return profile.NewTree(wideProfile(n), profile.TypeCPU) }

// wideProfile returns a profile whose tree has about n nodes: fan-out 8,
// up to 7 deep, one sample per node.
func wideProfile(n int) *profile.Profile {
	p := profile.New()
	ti := p.AddType(profile.TypeCPU)
	var grow func(parent profile.StackID, depth int, left *int)
	grow = func(parent profile.StackID, depth int, left *int) {
		for i := 0; i < 8 && *left > 0; i++ {
			*left--
			f := p.AddFrame(profile.Frame{Name: "org.example.Class" + strconv.Itoa(depth) + ".method" + strconv.Itoa(i), Kind: profile.KindJava})
			s := p.Push(parent, f)
			p.Add(profile.Sample{Stack: s, Value: int64(1 + i), Type: ti})
			if depth < 6 {
				grow(s, depth+1, left)
			}
		}
	}
	left := n
	for left > 0 {
		grow(profile.NoStack, 0, &left)
	}
	return p
}

// BenchmarkSVG renders a 50,000-node tree with every frame drawn.
func BenchmarkSVG(b *testing.B) {
	tr := wideTree(50000)
	nodes := 0
	tr.Walk(func(*profile.Node, int) bool { nodes++; return true })
	var size countWriter
	if err := SVG(&size, tr, Options{MinWidth: 1e-9}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := SVG(io.Discard, tr, Options{MinWidth: 1e-9}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(nodes), "nodes")
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// BenchmarkHTML writes the page of a profile whose tree has 50,000 nodes
// and reports the page size.
func BenchmarkHTML(b *testing.B) {
	p := wideProfile(50000)
	var size countWriter
	if err := HTML(&size, p, Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := HTML(io.Discard, p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}
