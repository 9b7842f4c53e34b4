package profile

import (
	"cmp"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/internal/hashtab"
)

// flatTree is the call tree of one profile held in arrays, one entry per
// node, parents before their children: the form in which a tree of
// millions of nodes is summed and trimmed before any Node is made, so that
// a bounded flame graph allocates only the nodes it keeps.
type flatTree struct {
	p      *Profile
	frame  []FrameID // the frame naming each node; the root's is unused
	parent []int32
	self   []int64
	total  []int64
	nodes  []int32 // the nodes of each node's subtree, itself included

	// children lists each node's children, from child[start[n]] to
	// child[start[n+1]], in no order until sortChildren.
	start, child []int32
	sorted       []bool
}

// newFlatTree returns the call tree of the samples of type t in p (a
// TreeBuilder's, whose prepare found the type): one node per distinct
// path of frame names that a sample's stack passes through.
func newFlatTree(pr *prepared) *flatTree {
	p := pr.p
	// A node per stack at most, the root's included.
	ft := &flatTree{p: p, frame: make([]FrameID, 1, len(p.stacks)), parent: make([]int32, 1, len(p.stacks)), self: make([]int64, 1, len(p.stacks))}
	ft.parent[0] = -1
	nodeOf := make([]int32, len(p.stacks)) // 0: no node yet (the root's is 0 too)
	// Stacks are distinct paths of frames; when no two frames share a
	// name they are distinct paths of names too, each its own node, and
	// no hash is looked up.
	var byHash hashtab.Table
	byName := !uniqueNames(p.Frames)
	if byName {
		byHash.Grow(len(p.stacks))
	}
	var path []StackID
	for s, v := range pr.values {
		if s == int(NoStack) {
			ft.self[0] = AddValues(ft.self[0], v)
		}
		if v == 0 || s == int(NoStack) {
			continue
		}
		// The stack's node, and its ancestors' as needed, top down.
		path = path[:0]
		for at := StackID(s); at != NoStack && nodeOf[at] == 0; at = p.stacks[at].parent {
			path = append(path, at)
		}
		for i := len(path) - 1; i >= 0; i-- {
			at := path[i]
			n, ok := uint32(0), false
			if byName {
				n, ok = byHash.Get(pr.stackHash[at])
			}
			if !ok {
				n = uint32(len(ft.parent))
				if byName {
					byHash.Put(pr.stackHash[at], n)
				}
				ft.frame = append(ft.frame, p.stacks[at].frame)
				ft.parent = append(ft.parent, nodeOf[p.stacks[at].parent])
				ft.self = append(ft.self, 0)
			}
			nodeOf[at] = int32(n)
		}
		n := nodeOf[s]
		ft.self[n] = AddValues(ft.self[n], v)
	}
	ft.sum()
	return ft
}

// uniqueNames reports whether no two frames have the same name.
func uniqueNames(frames []Frame) bool {
	seen := make(map[string]struct{}, len(frames))
	for i := range frames {
		if _, dup := seen[frames[i].Name]; dup {
			return false
		}
		seen[frames[i].Name] = struct{}{}
	}
	return true
}

// sum fills the totals, subtree sizes and children lists.
func (ft *flatTree) sum() {
	n := len(ft.parent)
	ft.total = slices.Clone(ft.self)
	ft.nodes = make([]int32, n)
	ft.start = make([]int32, n+1)
	for i := n - 1; i > 0; i-- {
		par := ft.parent[i]
		ft.nodes[i]++
		ft.nodes[par] += ft.nodes[i]
		ft.total[par] = AddValues(ft.total[par], ft.total[i])
		ft.start[par+1]++
	}
	ft.nodes[0]++
	for i := 1; i <= n; i++ {
		ft.start[i] += ft.start[i-1]
	}
	ft.child = make([]int32, max(n-1, 0))
	fill := slices.Clone(ft.start[:n])
	for i := 1; i < n; i++ {
		par := ft.parent[i]
		ft.child[fill[par]] = int32(i)
		fill[par]++
	}
	ft.sorted = make([]bool, n)
}

func (ft *flatTree) name(n int32) string { return ft.p.Frames[ft.frame[n]].Name }

// children returns the children of node n sorted by name, as Tree has
// them.
func (ft *flatTree) children(n int32) []int32 {
	cs := ft.child[ft.start[n]:ft.start[n+1]]
	if !ft.sorted[n] {
		slices.SortFunc(cs, func(a, b int32) int { return strings.Compare(ft.name(a), ft.name(b)) })
		ft.sorted[n] = true
	}
	return cs
}

// cut returns the size (total) of the maxNodes-th largest node below the
// root and how many nodes of that size are kept, as Tree.Trim chooses
// them; ok is false when the tree has no more than maxNodes nodes.
func (ft *flatTree) cut(maxNodes int) (cut int64, ties int, ok bool) {
	if maxNodes <= 0 || len(ft.total)-1 <= maxNodes {
		return 0, 0, false
	}
	sizes := slices.Clone(ft.total[1:])
	cut = nthLargest(sizes, maxNodes-1)
	larger := 0
	for _, s := range ft.total[1:] {
		if s > cut {
			larger++
		}
	}
	return cut, maxNodes - larger, true
}

// nthLargest returns the value that would be at index k of s sorted in
// decreasing order, reordering s (quickselect).
func nthLargest(s []int64, k int) int64 {
	lo, hi := 0, len(s)-1
	for lo < hi {
		// The median of three as the pivot, then a three-way partition:
		// [lo, lt) larger, [lt, gt] equal, (gt, hi] smaller.
		mid := lo + (hi-lo)/2
		pivot := max(min(s[lo], s[mid]), min(max(s[lo], s[mid]), s[hi]))
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch c := cmp.Compare(s[i], pivot); {
			case c > 0:
				s[lt], s[i] = s[i], s[lt]
				lt++
				i++
			case c < 0:
				s[i], s[gt] = s[gt], s[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return pivot
		}
	}
	return s[k]
}

// tree makes the Tree of the nodes kept: all, or with maxNodes > 0 the
// ones Tree.Trim keeps, each parent's others folded into an OtherName
// node. It returns the tree and the number of nodes folded away.
func (ft *flatTree) tree(t SampleType, maxNodes int) (*Tree, int) {
	cut, ties, trim := ft.cut(maxNodes)
	kept := len(ft.parent)
	if trim {
		kept = maxNodes + 1
	}
	// The nodes and the children slices come from two allocations.
	arena := make([]Node, 0, kept)
	links := make([]*Node, 0, kept)
	newNode := func(n Node) *Node {
		if len(arena) == cap(arena) {
			arena = make([]Node, 0, 64)
		}
		arena = append(arena, n)
		return &arena[len(arena)-1]
	}
	folded := 0
	var stack []int32 // the kept children of the nodes being built, in turn
	var build func(n int32, nd *Node)
	build = func(n int32, nd *Node) {
		from := len(stack)
		defer func() { stack = stack[:from] }()
		var other *Node
		for _, c := range ft.children(n) {
			size := ft.total[c]
			if !trim || size > cut || (size == cut && ties > 0) {
				if trim && size == cut {
					ties--
				}
				stack = append(stack, c)
				continue
			}
			if other == nil {
				other = newNode(Node{Name: OtherName})
			}
			other.Self = AddValues(other.Self, size)
			folded += int(ft.nodes[c])
		}
		to := len(stack)
		if to == from && other == nil {
			return
		}
		width := to - from
		if other != nil {
			width++
		}
		if cap(links)-len(links) < width {
			links = make([]*Node, 0, max(width, 64))
		}
		nd.Children = links[len(links) : len(links) : len(links)+width]
		links = links[:len(links)+width]
		for _, c := range stack[from:to] {
			f := &ft.p.Frames[ft.frame[c]]
			nd.Children = append(nd.Children, newNode(Node{Name: f.Name, Kind: f.Kind, Self: ft.self[c], Total: ft.total[c]}))
		}
		// The kept children are decided before any grandchild, as Trim does.
		for i := range to - from {
			build(stack[from+i], nd.Children[i])
		}
		if other != nil {
			other.Total = other.Self
			i, _ := slices.BinarySearchFunc(nd.Children, other.Name, func(c *Node, name string) int { return cmp.Compare(c.Name, name) })
			nd.Children = slices.Insert(nd.Children, i, other)
		}
	}
	root := newNode(Node{Name: "total", Self: ft.self[0], Total: ft.total[0]})
	build(0, root)
	return &Tree{Root: root, Type: t}, folded
}
