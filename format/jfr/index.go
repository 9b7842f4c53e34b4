package jfr

import "github.com/sparkprof/sparkprof/internal/hashtab"

// index maps constant pool keys to small values (offsets, ids). The JDK
// and async-profiler number most constants densely from small keys, so
// keys below limit are kept in a slice; the others (the JDK's method keys,
// a class key shifted left by 16 bits, are all of them) in a hash table.
type index struct {
	dense  []uint32 // value+1 by key; 0 is absent
	sparse hashtab.Table
	limit  uint64
	n      int // keys put
}

// reset empties x for a chunk of size bytes, keeping its memory.
func (x *index) reset(size int) {
	clear(x.dense)
	x.dense = x.dense[:0]
	x.sparse.Reset(maxKeptSparseSlots)
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
	return x.sparse.Get(k)
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
	x.sparse.Put(k, v)
}

// maxKeptSparseSlots bounds the hash table a reset keeps: a rare recording
// with many sparse keys should not make every later reset clear its table.
const maxKeptSparseSlots = 1 << 16
