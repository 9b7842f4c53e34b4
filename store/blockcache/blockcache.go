// Package blockcache keeps recently read parts of blocks in memory, within
// a budget of heap bytes.
package blockcache

import (
	"context"
	"math"
	"unsafe"

	"github.com/maypok86/otter/v2"
	"github.com/maypok86/otter/v2/stats"

	"github.com/sparkprof/sparkprof/profile"
)

// Cache keeps block parts read from disk in memory within a budget of
// approximate heap bytes; a part larger than the budget is not kept.
// Concurrent reads of the same part wait for one load.
//
// Its policy is otter's W-TinyLFU: a part read often outlives one read
// once. A dashboard that renders the same range every second reads every
// block of it in turn; when they outgrow the budget, a least-recently-used
// cache drops each part just before its next read and misses them all,
// where this one keeps what fits and misses the rest.
type Cache struct {
	c     *otter.Cache[Key, *profile.Profile]
	stats *stats.Counter
}

// Key names a part of a block: the block file, the part and the time
// slice.
type Key struct {
	Path string
	Part int
	// Slice is a time slice's index + 1 for its rollup or samples, 0 for
	// the block's part, TablesOnly for the tables of a sliced block's
	// samples (the part as stored).
	Slice int
}

// TablesOnly is the Slice of the tables of a sliced block's samples.
const TablesOnly = -1

// New returns a cache of budget bytes.
func New(budget int64) *Cache {
	counter := stats.NewCounter()
	return &Cache{
		c: otter.Must(&otter.Options[Key, *profile.Profile]{
			MaximumWeight: uint64(max(budget, 1)),
			Weigher:       weigh,
			StatsRecorder: counter,
		}),
		stats: counter,
	}
}

// Get returns the part k, calling load when it is not cached. A failed
// load is not kept, so the next query tries again.
func (c *Cache) Get(k Key, load func() (*profile.Profile, error)) (*profile.Profile, error) {
	return c.c.Get(context.Background(), k, otter.LoaderFunc[Key, *profile.Profile](func(context.Context, Key) (*profile.Profile, error) {
		return load()
	}))
}

// Put adds part k, read or made elsewhere (a block just written).
func (c *Cache) Put(k Key, p *profile.Profile) { c.c.Set(k, p) }

// sampleBytes is the memory of a sample.
const sampleBytes = int64(unsafe.Sizeof(profile.Sample{}))

// weigh estimates the memory of part p: a time slice's shares the tables
// of another part and holds only its samples.
func weigh(k Key, p *profile.Profile) uint32 {
	var n int64
	if k.Slice > 0 {
		n = int64(cap(p.Samples)) * sampleBytes
	} else {
		n = p.MemSize()
	}
	return uint32(min(n, math.MaxUint32))
}

// Forget drops the parts of a block file that no longer exists.
func (c *Cache) Forget(path string) {
	for k := range c.c.Keys() {
		if k.Path == path {
			c.c.Invalidate(k)
		}
	}
}

// Clear drops every part.
func (c *Cache) Clear() { c.c.InvalidateAll() }

// Keys lists the parts held.
func (c *Cache) Keys() []Key {
	c.c.CleanUp()
	var keys []Key
	for k := range c.c.Keys() {
		keys = append(keys, k)
	}
	return keys
}

// Stats returns the bytes held and the counters.
func (c *Cache) Stats() (used, hits, misses, evictions int64) {
	c.c.CleanUp()
	s := c.stats.Snapshot()
	return int64(c.c.WeightedSize()), int64(s.Hits), int64(s.Misses), int64(s.Evictions)
}
