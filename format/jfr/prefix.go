package jfr

import (
	"math/bits"

	"github.com/sparkprof/sparkprof/profile"
)

// prefixKey identifies a root-side prefix of a stack trace: two
// independent 64-bit hashes of its frames.
type prefixKey struct{ a, b uint64 }

// next returns the key of the prefix extended by frame f: two
// multiply-rotate hashes with different constants, chained over the frames.
func (h prefixKey) next(f frameRef) prefixKey {
	x := f.method ^ uint64(f.line)<<40 ^ uint64(f.line)>>24
	return prefixKey{
		bits.RotateLeft64((h.a^x)*0x9e3779b97f4a7c15, 29),
		bits.RotateLeft64((h.b+x)*0xc2b2ae3d27d4eb4f, 31),
	}
}

// prefixTable holds the profile stacks of the trace prefixes converted so
// far: an open-addressing hash table with linear probing over the first
// half of a prefix's key, whose 16-byte slots also keep 32 bits of the
// second half to check.
//
// It is written by hand because each new stack node of a trace adds an
// entry, and a Go map's assignment costs a probe of its control words and
// another of its slots in a table that does not fit in a cache (a tenth of
// the CPU time of ingesting a JDK recording); here one probe finds the
// entry or its free slot. The 96 bits compared make a wrong match as
// unlikely as a collision of the 128-bit key.
type prefixTable struct {
	slots []prefixSlot // a == 0 is free
	count int
}

// prefixSlot is one entry of a prefixTable.
type prefixSlot struct {
	a     uint64
	b     uint32
	stack profile.StackID
}

// minPrefixSlots is the smallest table: a power of two.
const minPrefixSlots = 1 << 10

// reset empties t, with room for about n prefixes, keeping its memory: up
// to four times that room when an earlier recording grew it, as the
// recordings of one JVM's uploads do when n is an underestimate (growing
// again costs more than clearing a larger table).
func (t *prefixTable) reset(n int) {
	size := minPrefixSlots
	for size < 2*n {
		size <<= 1
	}
	if cap(t.slots) >= size {
		t.slots = t.slots[:min(cap(t.slots), 4*size)]
		clear(t.slots)
	} else {
		t.slots = make([]prefixSlot, size)
	}
	t.count = 0
}

// get returns the stack of a converted prefix.
func (t *prefixTable) get(h prefixKey) (profile.StackID, bool) {
	if h.a == 0 || len(t.slots) == 0 { // 0 marks a free slot: never put
		return profile.NoStack, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h.a & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.a == h.a {
			return s.stack, s.b == uint32(h.b)
		}
		if s.a == 0 {
			return profile.NoStack, false
		}
	}
}

// put records the stack of a prefix. A key whose first half is zero, the
// free mark, is not kept: that prefix is converted again when next seen,
// which is slower, never wrong.
func (t *prefixTable) put(h prefixKey, stack profile.StackID) {
	if h.a == 0 {
		return
	}
	if 2*(t.count+1) > len(t.slots) {
		t.grow()
	}
	t.insert(prefixSlot{h.a, uint32(h.b), stack})
}

// insert stores e in its slot or the one with the same first half.
func (t *prefixTable) insert(e prefixSlot) {
	mask := uint64(len(t.slots) - 1)
	for i := e.a & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.a == 0 {
			*s = e
			t.count++
			return
		}
		if s.a == e.a {
			*s = e
			return
		}
	}
}

// grow doubles the table (or makes the first one) and moves the entries.
func (t *prefixTable) grow() {
	old := t.slots
	t.slots = make([]prefixSlot, max(minPrefixSlots, 2*len(old)))
	t.count = 0
	for _, s := range old {
		if s.a != 0 {
			t.insert(s)
		}
	}
}
