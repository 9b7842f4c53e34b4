package profile

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomProfile returns a profile of n samples on random stacks of a few
// frame names, with alike some frames named alike from different lines,
// some values equal (ties for Trim), some on the empty stack and some
// zero.
func randomProfile(r *rand.Rand, n int, alike bool) *Profile {
	p := New()
	cpu := p.AddType(TypeCPU)
	alloc := p.AddType(TypeAllocBytes)
	for range n {
		s := NoStack
		for range r.IntN(12) {
			f := Frame{Name: fmt.Sprintf("f%d", r.IntN(6))}
			if alike {
				f.Line, f.Kind = int32(r.IntN(3)), FrameKind(r.IntN(3))
			}
			s = p.Push(s, p.AddFrame(f))
		}
		typ := cpu
		if r.IntN(10) == 0 {
			typ = alloc
		}
		p.Add(Sample{Stack: s, Value: int64(r.IntN(4)), Type: typ})
	}
	return p
}

// dump writes t's nodes one a line, indented by depth.
func dump(t *Tree) string {
	var b strings.Builder
	t.Walk(func(n *Node, depth int) bool {
		fmt.Fprintf(&b, "%s%s kind=%d self=%d total=%d base=%d/%d\n", strings.Repeat(" ", depth), n.Name, n.Kind, n.Self, n.Total, n.BaseSelf, n.BaseTotal)
		return true
	})
	return b.String()
}

// NewTrimmedTree builds the tree TreeBuilder builds and trims it as Trim
// does, on random profiles with ties at every bound.
func TestNewTrimmedTreeAsBuiltAndTrimmed(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 300 {
		p := randomProfile(r, 1+r.IntN(200), i%2 == 0)
		for _, maxNodes := range []int{0, 1, 2, 3, 5, 10, 40, 1000} {
			b := NewTreeBuilder(TypeCPU)
			b.Add(p)
			want := b.Tree()
			wantFolded := want.Trim(maxNodes)
			got, folded := NewTrimmedTree(p, TypeCPU, maxNodes)
			if g, w := dump(got), dump(want); g != w || folded != wantFolded {
				t.Fatalf("profile %d, maxNodes %d: folded %d, want %d; tree:\n%s\nwant:\n%s", i, maxNodes, folded, wantFolded, g, w)
			}
		}
	}
}

func TestNewTrimmedTreeWithoutTheType(t *testing.T) {
	p := New()
	p.Add(Sample{Stack: p.Push(NoStack, p.AddFrame(Frame{Name: "main"})), Value: 1, Type: p.AddType(TypeCPU)})
	got, folded := NewTrimmedTree(p, TypeAllocBytes, 10)
	if got.Root.Name != "total" || got.Total() != 0 || len(got.Root.Children) != 0 || folded != 0 || got.Type != TypeAllocBytes {
		t.Errorf("tree of a type the profile lacks: %+v, folded %d", got.Root, folded)
	}
}

func TestNthLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for range 200 {
		s := make([]int64, 1+r.IntN(50))
		for i := range s {
			s[i] = int64(r.IntN(8))
		}
		k := r.IntN(len(s))
		sorted := append([]int64(nil), s...)
		for i := range sorted { // insertion sort, decreasing
			for j := i; j > 0 && sorted[j] > sorted[j-1]; j-- {
				sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
			}
		}
		if got := nthLargest(s, k); got != sorted[k] {
			t.Fatalf("nthLargest(%v, %d) = %d, want %d", sorted, k, got, sorted[k])
		}
	}
}
