package jfr

import "math/bits"

// index maps constant pool keys to small values (offsets, ids). The JDK
// and async-profiler number most constants densely from small keys, so
// keys below limit are kept in a slice; the others (the JDK's method keys,
// a class key shifted left by 16 bits, are all of them) in a hash table.
type index struct {
	dense  []uint32 // value+1 by key; 0 is absent
	sparse sparseTable
	limit  uint64
	n      int // keys put
}

// reset empties x for a chunk of size bytes, keeping its memory.
func (x *index) reset(size int) {
	clear(x.dense)
	x.dense = x.dense[:0]
	x.sparse.reset()
	x.limit = uint64(max(min(size, 1<<20), 1))
	x.n = 0
}

func (x *index) get(k uint64) (uint32, bool) {
	if k < uint64(len(x.dense)) {
		v := x.dense[k]
		return v - 1, v != 0
	}
	if k < x.limit {
		return 0, false
	}
	return x.sparse.get(k)
}

func (x *index) put(k uint64, v uint32) {
	x.n++
	if k < x.limit {
		if k >= uint64(len(x.dense)) {
			n := int(k) + 1
			if n > cap(x.dense) {
				x.dense = append(x.dense[:cap(x.dense)], make([]uint32, max(n, 2*cap(x.dense))-cap(x.dense))...)
			}
			x.dense = x.dense[:n]
		}
		x.dense[k] = v + 1
		return
	}
	x.sparse.put(k, v)
}

// sparseTable maps nonzero keys to values: an open-addressing hash table
// with linear probing.
//
// It is written by hand because every frame of a trace looks its method up
// by key, and the JDK's method keys are all sparse: through a Go map those
// lookups took a tenth of the CPU time of ingesting a JDK recording, two
// probes each (control words, then slots) where this table needs one.
type sparseTable struct {
	slots []sparseSlot // key 0 is free
	count int
	shift uint8 // 64 - log2(len(slots))
}

type sparseSlot struct {
	key uint64
	val uint32
}

// minSparseSlots is the smallest table: a power of two.
const minSparseSlots = 1 << 6

// maxKeptSparseSlots bounds the table a reset keeps: a rare recording with
// many sparse keys should not make every later reset clear its table.
const maxKeptSparseSlots = 1 << 16

// reset empties t, keeping its memory unless it grew past
// maxKeptSparseSlots.
func (t *sparseTable) reset() {
	if len(t.slots) > maxKeptSparseSlots {
		*t = sparseTable{}
		return
	}
	clear(t.slots)
	t.count = 0
}

// slot returns where key k's probe starts: the top bits of a
// multiplicative hash, since keys such as the JDK's share their low bits.
func (t *sparseTable) slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> t.shift }

func (t *sparseTable) get(k uint64) (uint32, bool) {
	if k == 0 || len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.val, true
		}
		if s.key == 0 {
			return 0, false
		}
	}
}

// put sets the value of key k, which must not be 0.
func (t *sparseTable) put(k uint64, v uint32) {
	if 2*(t.count+1) > len(t.slots) {
		t.grow()
	}
	t.insert(k, v)
}

func (t *sparseTable) insert(k uint64, v uint32) {
	mask := uint64(len(t.slots) - 1)
	for i := t.slot(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			s.val = v
			return
		}
		if s.key == 0 {
			*s = sparseSlot{k, v}
			t.count++
			return
		}
	}
}

// grow doubles the table (or makes the first one) and moves the entries.
func (t *sparseTable) grow() {
	old := t.slots
	n := max(minSparseSlots, 2*len(old))
	t.slots = make([]sparseSlot, n)
	t.shift = uint8(64 - bits.TrailingZeros(uint(n)))
	t.count = 0
	for _, s := range old {
		if s.key != 0 {
			t.insert(s.key, s.val)
		}
	}
}
