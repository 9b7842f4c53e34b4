package jfr

import (
	"math/rand/v2"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// The prefix table answers as a map by the key's first half does (a later
// key with the same first half replaces an earlier one), across growths and
// resets; a key differing only in its second half is not taken for the one
// stored, and a key whose first half is the free mark is not kept.
func TestPrefixTableAgainstMap(t *testing.T) {
	type entry struct {
		key   prefixKey
		stack profile.StackID
	}
	var table prefixTable
	want := map[uint64]entry{}
	next := rand.New(rand.NewPCG(7, 0)).Uint64 // repeatable
	var keys []prefixKey
	for round, n := range []int{0, 50_000, 3_000} {
		table.reset(n / 4) // too small on purpose: it must grow
		clear(want)
		keys = keys[:0]
		for i := range 50_000 {
			k := prefixKey{next() % (1 << 20), next()} // first halves collide often
			if i%3 == 0 && len(keys) > 0 {
				k = keys[next()%uint64(len(keys))] // a key put before
			}
			id := profile.StackID(i + 1)
			table.put(k, id)
			if k.a != 0 {
				want[k.a] = entry{k, id}
			}
			keys = append(keys, k)
			if _, ok := table.get(prefixKey{k.a, k.b ^ 1}); ok {
				t.Fatalf("round %d: a key differing from %x in its second half was found", round, k)
			}
		}
		if _, ok := table.get(prefixKey{0, 0}); ok {
			t.Fatalf("round %d: a key with first half 0 was kept", round)
		}
		for _, e := range want {
			if got, ok := table.get(e.key); !ok || got != e.stack {
				t.Fatalf("round %d: get(%x) = %d, %v, want %d", round, e.key, got, ok, e.stack)
			}
		}
		if table.count != len(want) {
			t.Errorf("round %d: %d entries, want %d", round, table.count, len(want))
		}
	}
}
