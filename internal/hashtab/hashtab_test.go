package hashtab

import (
	"math/rand/v2"
	"testing"
)

// A Table answers as a map does, for keys that share their low bits, random
// keys and key 0, across growths (made room for or not) and resets that
// keep or drop its memory.
func TestTableAgainstMap(t *testing.T) {
	next := rand.New(rand.NewPCG(7, 0)).Uint64 // repeatable
	keys := []struct {
		name string
		key  func(i int) uint64
	}{
		{"JDK method keys", func(i int) uint64 { return (1<<20+uint64(i)/8)<<16 | uint64(i%8) }},
		{"random", func(int) uint64 { return next() }},
		{"small, with 0", func(i int) uint64 { return uint64(i % 5000) }},
	}
	var tab Table
	want := map[uint64]uint32{}
	for _, c := range keys {
		for _, keep := range []int{1 << 20, 1 << 8} {
			tab.Reset(keep)
			clear(want)
			for i := range 30_000 {
				if keep == 1<<8 && i == 10_000 {
					tab.Grow(20_000)
				}
				k := c.key(i)
				if i%5 == 4 {
					k = c.key(i / 2) // again, with a new value
				}
				tab.Put(k, uint32(i))
				want[k] = uint32(i)
			}
			if tab.Len() != len(want) {
				t.Fatalf("%s: Len() = %d, want %d", c.name, tab.Len(), len(want))
			}
			for k, v := range want {
				if got, ok := tab.Get(k); !ok || got != v {
					t.Fatalf("%s: Get(%#x) = %d, %v, want %d", c.name, k, got, ok, v)
				}
			}
			for range 1000 {
				k := next()
				_, inMap := want[k]
				if _, ok := tab.Get(k); ok != inMap {
					t.Fatalf("%s: Get(%#x) found %v, want %v", c.name, k, ok, inMap)
				}
			}
			_, inMap := want[0]
			if _, ok := tab.Get(0); ok != inMap {
				t.Fatalf("%s: key 0 found %v, want %v", c.name, ok, inMap)
			}
		}
	}
	tab.Reset(1 << 8)
	if tab.Len() != 0 {
		t.Fatalf("after Reset: Len() = %d", tab.Len())
	}
	if _, ok := tab.Get(0); ok {
		t.Fatal("after Reset: key 0 found")
	}
}
