package profile

import (
	"cmp"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// Node is a call-tree node: a function reached by one call path.
type Node struct {
	Name     string
	Kind     FrameKind
	Self     int64
	Total    int64
	Children []*Node
	// BaseSelf and BaseTotal hold the baseline's values in a diff tree.
	BaseSelf, BaseTotal int64
}

// Tree is a call tree (flame graph) of one sample type, or the difference
// of two trees when it has a baseline.
type Tree struct {
	Root *Node // Root.Name is "total"
	Type SampleType
	// HasBase marks a diff tree: Base* fields hold the baseline's values.
	HasBase bool
}

// Total returns the tree's total value.
func (t *Tree) Total() int64 { return t.Root.Total }

// BaseScale is the factor that normalises baseline values to the new
// total: a node's expected value is BaseTotal*BaseScale. It is 1 when
// either total is zero.
func (t *Tree) BaseScale() float64 {
	if t.Root.BaseTotal == 0 || t.Root.Total == 0 {
		return 1
	}
	return float64(t.Root.Total) / float64(t.Root.BaseTotal)
}

// A TreeBuilder accumulates the samples of one type from many profiles into
// a call tree. Each Add costs a hash per frame and per stack of the profile
// plus a pass over its samples; memory grows with unique call paths only.
type TreeBuilder struct {
	typ    SampleType
	root   *Node
	byHash map[uint64]*Node // call-path hash (frame names) to node

	scratch prepared
	nodes   []*Node // per-Add scratch: tree node of each stack of the added profile
}

// prepared is what a TreeBuilder needs of one profile before it touches the
// tree: the value of each stack and the hash of each call path. Preparing
// is independent of the tree, so AddAll prepares profiles in parallel.
type prepared struct {
	p                    *Profile
	frameHash, stackHash []uint64
	values               []int64
}

// NewTreeBuilder returns a builder for sample type t.
func NewTreeBuilder(t SampleType) *TreeBuilder {
	return &TreeBuilder{typ: t, root: &Node{Name: "total"}, byHash: map[uint64]*Node{}}
}

// NewTree returns the call tree of sample type t in p.
func NewTree(p *Profile, t SampleType) *Tree {
	tr, _ := NewTrimmedTree(p, t, 0)
	return tr
}

// NewTrimmedTree returns NewTree(p, t) bounded to maxNodes nodes as
// Tree.Trim bounds it, and the number of nodes folded away, making only
// the nodes it keeps: a flame graph of a few thousand frames from a tree
// of millions allocates the few thousand.
func NewTrimmedTree(p *Profile, t SampleType, maxNodes int) (*Tree, int) {
	b := TreeBuilder{typ: t}
	var pr prepared
	if !b.prepare(p, &pr) {
		return &Tree{Root: &Node{Name: "total"}, Type: t}, 0
	}
	return newFlatTree(&pr).tree(t, maxNodes)
}

// Add adds the samples of p that have the builder's type.
func (b *TreeBuilder) Add(p *Profile) {
	if b.prepare(p, &b.scratch) {
		b.insert(&b.scratch, false)
	}
}

// AddBase adds the samples of p as the baseline of a diff tree.
func (b *TreeBuilder) AddBase(p *Profile) {
	if b.prepare(p, &b.scratch) {
		b.insert(&b.scratch, true)
	}
}

// AddAll adds the samples of every profile in ps, as Add does, using all
// CPUs: profiles are hashed in parallel while the tree is extended by one
// goroutine. At most a few profiles per CPU are in flight.
func (b *TreeBuilder) AddAll(ps []*Profile) {
	workers := min(runtime.GOMAXPROCS(0), len(ps))
	if workers < 2 {
		for _, p := range ps {
			b.Add(p)
		}
		return
	}
	free := make(chan *prepared, 2*workers)
	for range cap(free) {
		free <- new(prepared)
	}
	todo := make(chan int)
	ready := make(chan *prepared, cap(free))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				pr := <-free
				if b.prepare(ps[i], pr) {
					ready <- pr
				} else {
					free <- pr
				}
			}
		}()
	}
	go func() {
		for i := range ps {
			todo <- i
		}
		close(todo)
		wg.Wait()
		close(ready)
	}()
	// Children are sorted by name in Tree, so the order in which profiles
	// are inserted does not matter.
	for pr := range ready {
		b.insert(pr, false)
		free <- pr
	}
}

// prepare fills pr for p and reports whether p has the builder's type. It
// reads only b.typ, so several goroutines may prepare at once.
func (b *TreeBuilder) prepare(p *Profile, pr *prepared) bool {
	typ, ok := p.TypeIndex(b.typ)
	if !ok {
		return false
	}
	pr.p = p
	pr.values = resize(pr.values, len(p.stacks))
	for _, s := range p.Samples {
		if s.Type == typ {
			pr.values[s.Stack] = AddValues(pr.values[s.Stack], s.Value)
		}
	}
	pr.frameHash = p.frameHashes(false, pr.frameHash)
	pr.stackHash = p.stackHashes(pr.frameHash, pr.stackHash)
	return true
}

// insert adds a prepared profile's values to the tree.
func (b *TreeBuilder) insert(pr *prepared, base bool) {
	b.nodes = resize(b.nodes, len(pr.p.stacks))
	b.nodes[NoStack] = b.root
	for s, v := range pr.values {
		if v == 0 {
			continue
		}
		n := b.node(pr, StackID(s))
		if base {
			n.BaseSelf = AddValues(n.BaseSelf, v)
		} else {
			n.Self = AddValues(n.Self, v)
		}
	}
}

// node returns the tree node of stack s, creating the path as needed.
func (b *TreeBuilder) node(pr *prepared, s StackID) *Node {
	if n := b.nodes[s]; n != nil {
		return n
	}
	p := pr.p
	h := pr.stackHash[s]
	n, ok := b.byHash[h]
	if !ok {
		parent := b.node(pr, p.stacks[s].parent)
		f := &p.Frames[p.stacks[s].frame]
		n = &Node{Name: f.Name, Kind: f.Kind}
		parent.Children = append(parent.Children, n)
		b.byHash[h] = n
	}
	b.nodes[s] = n
	return n
}

// Tree computes totals, sorts children by name and returns the tree. The
// builder can go on accumulating; call Tree again for the new totals.
func (b *TreeBuilder) Tree() *Tree {
	var finish func(n *Node)
	finish = func(n *Node) {
		n.Total, n.BaseTotal = n.Self, n.BaseSelf
		sort.Slice(n.Children, func(i, j int) bool { return n.Children[i].Name < n.Children[j].Name })
		for _, c := range n.Children {
			finish(c)
			n.Total = AddValues(n.Total, c.Total)
			n.BaseTotal = AddValues(n.BaseTotal, c.BaseTotal)
		}
	}
	finish(b.root)
	return &Tree{Root: b.root, Type: b.typ, HasBase: b.root.BaseTotal != 0}
}

// Diff returns the differential tree of next against base for type t.
func Diff(base, next *Profile, t SampleType) *Tree {
	b := NewTreeBuilder(t)
	b.AddBase(base)
	b.Add(next)
	tr := b.Tree()
	tr.HasBase = true
	return tr
}

// Walk calls fn for every node in depth-first order with its depth (the
// root has depth 0). fn returning false skips the node's children.
func (t *Tree) Walk(fn func(n *Node, depth int) bool) {
	var walk func(n *Node, depth int)
	walk = func(n *Node, depth int) {
		if !fn(n, depth) {
			return
		}
		for _, c := range n.Children {
			walk(c, depth+1)
		}
	}
	walk(t.Root, 0)
}

// FuncStat is one row of a top table.
type FuncStat struct {
	Name  string `json:"name"`
	Self  int64  `json:"self"`
	Total int64  `json:"total"` // counted once per call path, however often it recurses
}

// Top returns the n functions with the highest self value (all when n <= 0),
// ties broken by total then name.
func (t *Tree) Top(n int) []FuncStat {
	stats := map[string]*FuncStat{}
	onPath := map[string]int{}
	var walk func(nd *Node)
	walk = func(nd *Node) {
		st := stats[nd.Name]
		if st == nil {
			st = &FuncStat{Name: nd.Name}
			stats[nd.Name] = st
		}
		st.Self = AddValues(st.Self, nd.Self)
		if onPath[nd.Name] == 0 {
			st.Total = AddValues(st.Total, nd.Total)
		}
		onPath[nd.Name]++
		for _, c := range nd.Children {
			walk(c)
		}
		onPath[nd.Name]--
	}
	for _, c := range t.Root.Children {
		walk(c)
	}
	out := make([]FuncStat, 0, len(stats))
	for _, s := range stats {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Self != b.Self {
			return a.Self > b.Self
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Name < b.Name
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// SortByTotal orders a top table by total, then self, then name.
func SortByTotal(rows []FuncStat) {
	slices.SortStableFunc(rows, func(a, b FuncStat) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Self, a.Self); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// OtherName names the node into which Trim folds a parent's small children.
const OtherName = "other"

// Trim bounds the tree to maxNodes nodes below the root, as Pyroscope's
// max-nodes does: it keeps the maxNodes nodes of largest size (the larger
// of Total and BaseTotal; of equal sizes, those nearer the root first) and
// folds each parent's other children into one child named OtherName, whose
// self is their total, so every kept node's total is unchanged. The
// OtherName nodes come on top of maxNodes. maxNodes <= 0 keeps all. Trim
// returns the number of nodes folded away.
func (t *Tree) Trim(maxNodes int) int {
	if maxNodes <= 0 {
		return 0
	}
	size := func(n *Node) int64 { return max(n.Total, n.BaseTotal) }
	var sizes []int64
	t.Walk(func(n *Node, depth int) bool {
		if depth > 0 {
			sizes = append(sizes, size(n))
		}
		return true
	})
	if len(sizes) <= maxNodes {
		return 0
	}
	slices.SortFunc(sizes, func(a, b int64) int { return cmp.Compare(b, a) })
	// A node is never larger than its parent, so keeping the nodes larger
	// than the cut keeps the tops of the tree; nodes of the cut's size
	// fill what is left of maxNodes, parents before their children.
	cut := sizes[maxNodes-1]
	larger, _ := slices.BinarySearchFunc(sizes, cut, func(s, cut int64) int { return cmp.Compare(cut, s) })
	ties := maxNodes - larger // nodes of the cut's size to keep
	folded := 0
	var trim func(n *Node)
	trim = func(n *Node) {
		kept := n.Children[:0]
		var other *Node
		for _, c := range n.Children {
			if size(c) > cut || (size(c) == cut && ties > 0) {
				if size(c) == cut {
					ties--
				}
				kept = append(kept, c)
				continue
			}
			if other == nil {
				other = &Node{Name: OtherName}
			}
			other.Self = AddValues(other.Self, c.Total)
			other.BaseSelf = AddValues(other.BaseSelf, c.BaseTotal)
			folded += nodes(c)
		}
		clear(n.Children[len(kept):])
		n.Children = kept
		for _, c := range kept {
			trim(c)
		}
		if other != nil {
			other.Total, other.BaseTotal = other.Self, other.BaseSelf
			i, _ := slices.BinarySearchFunc(n.Children, other.Name, func(c *Node, name string) int { return cmp.Compare(c.Name, name) })
			n.Children = slices.Insert(n.Children, i, other)
		}
	}
	trim(t.Root)
	return folded
}

// Profile returns the tree as a profile of its type: a sample of each
// node's self value on the stack of the node's call path, its frames
// named as the nodes are (a trimmed tree's OtherName nodes too).
func (t *Tree) Profile() *Profile {
	p := New()
	typ := p.AddType(t.Type)
	if t.Root.Self != 0 {
		p.Add(Sample{Value: t.Root.Self, Stack: NoStack, Type: typ})
	}
	var walk func(n *Node, s StackID)
	walk = func(n *Node, s StackID) {
		for _, c := range n.Children {
			cs := p.Push(s, p.AddFrame(Frame{Name: c.Name, Kind: c.Kind}))
			if c.Self != 0 {
				p.Add(Sample{Value: c.Self, Stack: cs, Type: typ})
			}
			walk(c, cs)
		}
	}
	walk(t.Root, NoStack)
	return p
}

// nodes counts n and the nodes below it.
func nodes(n *Node) int {
	c := 1
	for _, ch := range n.Children {
		c += nodes(ch)
	}
	return c
}
