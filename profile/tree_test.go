package profile

import (
	"fmt"
	"strings"
	"testing"
)

// TestAddAllEqualsAdd checks that the parallel AddAll builds the same tree
// as adding the profiles one by one.
func TestAddAllEqualsAdd(t *testing.T) {
	ps := synthetic(40, 200, 300)
	ps = append(ps, New()) // a profile without the type is skipped
	one := NewTreeBuilder(TypeCPU)
	for _, p := range ps {
		one.Add(p)
	}
	all := NewTreeBuilder(TypeCPU)
	all.AddAll(ps)
	a, b := treeLines(one.Tree()), treeLines(all.Tree())
	if len(a) < 100 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("AddAll tree (%d nodes) differs from Add tree (%d nodes)", len(b), len(a))
	}
}

func treeLines(t *Tree) []string {
	var out []string
	t.Walk(func(n *Node, depth int) bool {
		out = append(out, fmt.Sprintf("%d %s %d %d", depth, n.Name, n.Self, n.Total))
		return true
	})
	return out
}

// TestTrim checks that Trim keeps the largest nodes and folds the rest of
// each parent's children into "other", keeping every kept node's total.
func TestTrim(t *testing.T) {
	lines := []string{"a;b;c 50", "a;b;d 5", "a;e 20", "a;f 4", "g 10", "h 1"}
	tests := []struct {
		maxNodes, folded int
		want             []string
	}{
		{0, 0, []string{"a;b;c 50", "a;b;d 5", "a;e 20", "a;f 4", "g 10", "h 1"}},
		{8, 0, []string{"a;b;c 50", "a;b;d 5", "a;e 20", "a;f 4", "g 10", "h 1"}},
		{7, 1, []string{"a;b;c 50", "a;b;d 5", "a;e 20", "a;f 4", "g 10", "other 1"}},
		// Sizes 79 a, 55 b, 50 c, 20 e, 10 g, 5 d, 4 f, 1 h.
		{5, 3, []string{"a;b;c 50", "a;b;other 5", "a;e 20", "a;other 4", "g 10", "other 1"}},
		{1, 7, []string{"a;other 79", "other 11"}},
	}
	// Equal sizes: a chain of one call path, kept from the root down.
	chain := NewTree(build(t, nil, "a;b;c;d 10", "e 1"), TypeCPU)
	if n := chain.Trim(2); n != 3 || strings.Join(folded(chain), "|") != "a;b;other 10|other 1" {
		t.Errorf("a chain, Trim(2): folded %d, %v", n, folded(chain))
	}
	for _, tt := range tests {
		tr := NewTree(build(t, nil, lines...), TypeCPU)
		if n := tr.Trim(tt.maxNodes); n != tt.folded {
			t.Errorf("Trim(%d) folded %d nodes, want %d", tt.maxNodes, n, tt.folded)
		}
		if got := folded(tr); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Trim(%d) = %v, want %v", tt.maxNodes, got, tt.want)
		}
		if tr.Root.Total != 90 {
			t.Errorf("Trim(%d): total %d, want 90", tt.maxNodes, tr.Root.Total)
		}
	}

	// A diff tree keeps a node that only the baseline has.
	d := Diff(build(t, nil, "a;gone 100", "a;x 1"), build(t, nil, "a;new 3", "a;x 1"), TypeCPU)
	d.Trim(2)
	if got := treeLines(d); strings.Join(got, "|") != "0 total 0 4|1 a 0 4|2 gone 0 0|2 other 4 4" {
		t.Errorf("diff Trim(2) = %v", got)
	}
}

// A trimmed tree written back as a profile makes the same tree.
func TestTreeProfile(t *testing.T) {
	tr := NewTree(build(t, nil, "a;b;c 50", "a;b;d 5", "a;e 20", "a 3", "g 10"), TypeCPU)
	tr.Trim(3)
	want := folded(tr)
	p := tr.Profile()
	if got := folded(NewTree(p, TypeCPU)); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the profile's tree %v, want %v", got, want)
	}
	if p.Total(0) != 88 || len(p.Types) != 1 || p.Types[0] != TypeCPU {
		t.Errorf("profile of types %v, total %d; want cpu, 88", p.Types, p.Total(0))
	}
}
