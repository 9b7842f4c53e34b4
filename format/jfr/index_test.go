package jfr

import (
	"math/rand/v2"
	"testing"
)

// An index answers as a map does, for dense and sparse keys alike (the
// JDK's method keys are a class key shifted left by 16 bits), across
// growths of its table and resets between chunks.
func TestIndexAgainstMap(t *testing.T) {
	next := rand.New(rand.NewPCG(11, 0)).Uint64 // repeatable
	keys := []struct {
		name string
		key  func(i int) uint64
	}{
		{"dense", func(i int) uint64 { return uint64(i) }},
		{"JDK method keys", func(i int) uint64 { return (1<<20+uint64(i)/8)<<16 | uint64(i%8) }},
		{"random", func(int) uint64 { return next() }},
		{"mixed", func(i int) uint64 { return next() % (1 << 22) }},
	}
	var x index
	want := map[uint64]uint32{}
	for _, c := range keys {
		for _, size := range []int{100_000, 1 << 21} {
			x.reset(size)
			clear(want)
			for i := range 30_000 {
				k := c.key(i)
				if i%5 == 4 {
					k = c.key(i / 2) // again, with a new value
				}
				x.put(k, uint32(i))
				want[k] = uint32(i)
			}
			for k, v := range want {
				if got, ok := x.get(k); !ok || got != v {
					t.Fatalf("%s, chunk of %d: get(%#x) = %d, %v, want %d", c.name, size, k, got, ok, v)
				}
			}
			for range 1000 {
				k := next()
				_, inMap := want[k]
				if _, ok := x.get(k); ok != inMap {
					t.Fatalf("%s, chunk of %d: get(%#x) found %v, want %v", c.name, size, k, ok, inMap)
				}
			}
			_, inMap := want[0]
			if _, ok := x.get(0); ok != inMap {
				t.Fatalf("%s: key 0 found %v, want %v", c.name, ok, inMap)
			}
		}
	}
}
