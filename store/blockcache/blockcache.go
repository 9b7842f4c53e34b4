// Package blockcache keeps recently read parts of blocks in memory, within
// a budget of heap bytes.
package blockcache

import (
	"container/list"
	"sync"
	"unsafe"

	"github.com/sparkprof/sparkprof/profile"
)

// Cache keeps recently read block parts in memory, least recently used
// first out, within a budget of approximate heap bytes; a part larger than
// the budget is not kept. Concurrent reads of the same part wait for one
// load.
type Cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *entry, most recent at the front
	byKey  map[Key]*list.Element
	// hits, misses and evictions count since the cache was made.
	hits, misses, evictions int64
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

type entry struct {
	key   Key
	ready chan struct{} // closed when p and err are set
	p     *profile.Profile
	err   error
	size  int64
}

// New returns a cache of budget bytes.
func New(budget int64) *Cache {
	return &Cache{budget: budget, lru: list.New(), byKey: map[Key]*list.Element{}}
}

// Get returns the part k, calling load when it is not cached. A failed
// load is not kept, so the next query tries again.
func (c *Cache) Get(k Key, load func() (*profile.Profile, error)) (*profile.Profile, error) {
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(el)
		c.hits++
		e := el.Value.(*entry)
		c.mu.Unlock()
		<-e.ready
		return e.p, e.err
	}
	c.misses++
	e := &entry{key: k, ready: make(chan struct{})}
	c.byKey[k] = c.lru.PushFront(e)
	c.mu.Unlock()

	e.p, e.err = load()
	if e.err == nil {
		e.size = k.sizeOf(e.p)
	}
	close(e.ready)

	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok || el.Value != e {
		return e.p, e.err // dropped while loading
	}
	if e.err != nil {
		c.remove(el)
		return nil, e.err
	}
	if e.size > c.budget {
		// It would push out every other part and still not fit: a
		// query reading all of a large block's samples. Its readers
		// have it; the cache keeps what it held.
		c.lru.Remove(el)
		delete(c.byKey, k)
		return e.p, nil
	}
	c.used += e.size
	c.evict()
	return e.p, nil
}

// Put adds part k, read or made elsewhere (a block just written), unless
// it is larger than the whole budget.
func (c *Cache) Put(k Key, p *profile.Profile) {
	e := &entry{key: k, ready: make(chan struct{}), p: p, size: k.sizeOf(p)}
	close(e.ready)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		c.remove(el)
	}
	if e.size > c.budget {
		return
	}
	c.byKey[k] = c.lru.PushFront(e)
	c.used += e.size
	c.evict()
}

// evict drops the least recently used loaded parts while over budget; the
// part just loaded stays.
func (c *Cache) evict() {
	for el := c.lru.Back(); el != nil && c.used > c.budget; {
		prev := el.Prev()
		if el != c.lru.Front() && el.Value.(*entry).size > 0 {
			c.remove(el)
			c.evictions++
		}
		el = prev
	}
}

func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*entry)
	c.used -= e.size
	c.lru.Remove(el)
	delete(c.byKey, e.key)
}

// sampleBytes is the memory of a sample.
const sampleBytes = int64(unsafe.Sizeof(profile.Sample{}))

// sizeOf estimates the memory of part p: a time slice's shares the
// tables of another part and holds only its samples.
func (k Key) sizeOf(p *profile.Profile) int64 {
	if k.Slice > 0 {
		return int64(cap(p.Samples)) * sampleBytes
	}
	return p.MemSize()
}

// Forget drops the parts of a block file that no longer exists.
func (c *Cache) Forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.byKey {
		if k.Path == path {
			c.remove(el)
		}
	}
}

// Clear drops every part.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.byKey)
	c.used = 0
}

// Keys lists the parts held.
func (c *Cache) Keys() []Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]Key, 0, len(c.byKey))
	for k := range c.byKey {
		keys = append(keys, k)
	}
	return keys
}

// Stats returns the bytes held and the counters.
func (c *Cache) Stats() (used, hits, misses, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.hits, c.misses, c.evictions
}
