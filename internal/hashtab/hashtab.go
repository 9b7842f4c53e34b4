// Package hashtab maps 64-bit keys to 32-bit values in an open-addressing
// hash table with linear probing.
//
// It is written by hand because Go's map probes its control words and then
// its slots, two cache misses in a table of tens of thousands of entries,
// where this table needs one; its users look keys up per frame or stack
// node of every upload (the JDK's sparse method keys while decoding, stack
// hashes while compacting), where the map's lookups took a tenth of the
// CPU time.
package hashtab

import "math/bits"

// Table maps uint64 keys to uint32 values. The zero Table is empty and
// ready to use.
type Table struct {
	slots []slot // key 0 marks a free slot; key 0 itself is kept in zero
	count int    // keys in slots
	shift uint8  // 64 - log2(len(slots))

	hasZero bool
	zero    uint32 // key 0's value
}

type slot struct {
	key uint64
	val uint32
}

// minSlots is the smallest table: a power of two.
const minSlots = 1 << 6

// Len returns the number of keys in t.
func (t *Table) Len() int {
	if t.hasZero {
		return t.count + 1
	}
	return t.count
}

// Reset empties t, keeping its memory unless it holds more than maxSlots
// slots: a rare large use should not make every later reset clear its
// table.
func (t *Table) Reset(maxSlots int) {
	if len(t.slots) > maxSlots {
		*t = Table{}
		return
	}
	clear(t.slots)
	t.count, t.hasZero, t.zero = 0, false, 0
}

// first returns where key k's probe starts: the top bits of a
// multiplicative hash, since keys such as the JDK's method keys share
// their low bits.
func (t *Table) first(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> t.shift }

// Get returns the value of key k.
func (t *Table) Get(k uint64) (uint32, bool) {
	if k == 0 {
		return t.zero, t.hasZero
	}
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.first(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.val, true
		}
		if s.key == 0 {
			return 0, false
		}
	}
}

// Put sets the value of key k.
func (t *Table) Put(k uint64, v uint32) {
	if k == 0 {
		t.hasZero, t.zero = true, v
		return
	}
	if 2*(t.count+1) > len(t.slots) {
		t.grow()
	}
	t.insert(k, v)
}

func (t *Table) insert(k uint64, v uint32) {
	mask := uint64(len(t.slots) - 1)
	for i := t.first(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			s.val = v
			return
		}
		if s.key == 0 {
			*s = slot{k, v}
			t.count++
			return
		}
	}
}

// Grow makes room for n more keys, so that putting them does not grow the
// table step by step.
func (t *Table) Grow(n int) {
	size := max(minSlots, len(t.slots))
	for 2*(t.count+n) > size {
		size *= 2
	}
	if size > len(t.slots) {
		t.resize(size)
	}
}

// grow doubles the table (or makes the first one) and moves the entries.
func (t *Table) grow() { t.resize(max(minSlots, 2*len(t.slots))) }

// resize moves the entries into a table of n slots, a power of two.
func (t *Table) resize(n int) {
	old := t.slots
	t.slots = make([]slot, n)
	t.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	t.count = 0
	for _, s := range old {
		if s.key != 0 {
			t.insert(s.key, s.val)
		}
	}
}
