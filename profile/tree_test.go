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
