package profile

import "sync"

// stackIndex interns stack nodes: an open-addressing hash table with linear
// probing whose slots hold a node's stack id and 32 bits of its hash.
//
// It is written by hand because Go's map has no lookup-or-insert: adding a
// node not yet interned, which is what most pushes of a new stack trace do,
// costs a map a lookup and then an assignment, two hashes and two probes
// into a table of tens of thousands of entries that does not fit in a cache
// (a quarter of the CPU time of ingesting a JDK recording). One probe here
// finds the node or the free slot it goes in, and a slot is 8 bytes.
type stackIndex struct {
	slots   []uint64 // hash<<32 | id; 0 is free (id 0, the empty stack, is never interned)
	count   int      // ids in slots
	indexed int      // the stacks from 1 to indexed have been interned
}

// minStackSlots is the size of a new index's table: a power of two.
const minStackSlots = 1 << 10

// stackIndexes keeps tables given up by DropIndexes for Grow to reuse: a
// decoder fills one per upload, and fresh pages cost more than interning.
var stackIndexes sync.Pool // of *[]uint64, cleared: a pointer, so that Put does not allocate

// hashStack mixes a node's key (a 64-bit finalizer: every bit of the key
// reaches the low bits that pick a slot and the high bits kept in it).
func hashStack(n stackNode) uint64 {
	h := n.key()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// newStackIndex returns an index with room for about n nodes, reusing a
// pooled table when one is large enough.
func newStackIndex(n int) stackIndex {
	size := minStackSlots
	for size < 2*n {
		size <<= 1
	}
	if s, ok := stackIndexes.Get().(*[]uint64); ok {
		if len(*s) >= size {
			return stackIndex{slots: *s}
		}
		stackIndexes.Put(s)
	}
	return stackIndex{slots: make([]uint64, size)}
}

// intern returns the id of node n, whose table is stacks; if n is not
// there, it is recorded under id next and intern reports false.
func (x *stackIndex) intern(stacks []stackNode, n stackNode, next StackID) (StackID, bool) {
	if 2*(x.count+1) > len(x.slots) {
		x.grow(stacks)
	}
	h := hashStack(n)
	tag := h &^ 0xffffffff
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			x.slots[i] = tag | uint64(next)
			x.count++
			return next, false
		}
		if s&^0xffffffff == tag && stacks[uint32(s)] == n {
			return StackID(uint32(s)), true
		}
	}
}

// grow doubles the table (or makes the first one) and puts every entry
// back, its hash taken again from the node.
func (x *stackIndex) grow(stacks []stackNode) {
	old := x.slots
	size := max(minStackSlots, 2*len(old))
	x.slots = make([]uint64, size)
	mask := uint64(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := hashStack(stacks[uint32(s)]) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
	releaseSlots(old)
}

// drop gives up the table, for a later index to reuse.
func (x *stackIndex) drop() {
	releaseSlots(x.slots)
	*x = stackIndex{}
}

// releaseSlots pools a table that is no longer used, unless it is too large
// to clear for a small profile.
func releaseSlots(s []uint64) {
	if s != nil && len(s) <= 2*maxPooledIndex {
		clear(s)
		stackIndexes.Put(&s)
	}
}
