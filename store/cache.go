package store

import (
	"container/list"
	"sync"

	"github.com/sparkprof/sparkprof/profile"
)

// cache keeps recently read block parts in memory, least recently used
// first out, within a budget of approximate heap bytes; a part larger than
// the budget is not kept. Concurrent reads of the same part wait for one
// load.
type cache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *cacheEntry, most recent at the front
	byKey  map[cacheKey]*list.Element
	// hits, misses and evictions count since the store opened.
	hits, misses, evictions int64
}

type cacheKey struct {
	path string
	part int
	// slice is a time slice's index + 1 for its rollup or samples, 0 for
	// the block's part, tablesOnly for the tables of a sliced block's
	// samples (the part as stored).
	slice int
}

const tablesOnly = -1

type cacheEntry struct {
	key   cacheKey
	ready chan struct{} // closed when p and err are set
	p     *profile.Profile
	err   error
	size  int64
}

func newCache(budget int64) *cache {
	return &cache{budget: budget, lru: list.New(), byKey: map[cacheKey]*list.Element{}}
}

// get returns the part k, calling load when it is not cached. A failed
// load is not kept, so the next query tries again.
func (c *cache) get(k cacheKey, load func() (*profile.Profile, error)) (*profile.Profile, error) {
	c.mu.Lock()
	if el, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(el)
		c.hits++
		e := el.Value.(*cacheEntry)
		c.mu.Unlock()
		<-e.ready
		return e.p, e.err
	}
	c.misses++
	e := &cacheEntry{key: k, ready: make(chan struct{})}
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

// put adds part k, read or made elsewhere (a block just written), unless
// it is larger than the whole budget.
func (c *cache) put(k cacheKey, p *profile.Profile) {
	e := &cacheEntry{key: k, ready: make(chan struct{}), p: p, size: k.sizeOf(p)}
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
func (c *cache) evict() {
	for el := c.lru.Back(); el != nil && c.used > c.budget; {
		prev := el.Prev()
		if el != c.lru.Front() && el.Value.(*cacheEntry).size > 0 {
			c.remove(el)
			c.evictions++
		}
		el = prev
	}
}

func (c *cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.used -= e.size
	c.lru.Remove(el)
	delete(c.byKey, e.key)
}

// sizeOf estimates the memory of part p: a time slice's shares the
// tables of another part and holds only its samples.
func (k cacheKey) sizeOf(p *profile.Profile) int64 {
	if k.slice > 0 {
		return int64(cap(p.Samples)) * sampleBytes
	}
	return p.MemSize()
}

// forget drops the parts of a block file that no longer exists.
func (c *cache) forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.byKey {
		if k.path == path {
			c.remove(el)
		}
	}
}

// clear drops every part.
func (c *cache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	clear(c.byKey)
	c.used = 0
}

// stats returns the bytes held and the counters.
func (c *cache) stats() (used, hits, misses, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.hits, c.misses, c.evictions
}
