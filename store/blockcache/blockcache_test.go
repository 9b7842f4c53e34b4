package blockcache

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// part returns a time slice's part of n samples: its size is theirs.
func part(n int) (*profile.Profile, int64) {
	p := profile.New()
	p.Samples = make([]profile.Sample, n)
	return p, int64(n) * sampleBytes
}

// TestCacheBudget: parts are kept least recently used first out within
// the budget; a part larger than the whole budget is handed out and not
// kept; a failed load is not kept; Forget and Clear drop parts.
func TestCacheBudget(t *testing.T) {
	p, size := part(100)
	c := New(2 * size)
	loads := 0
	get := func(path string, p *profile.Profile, err error) {
		t.Helper()
		got, gerr := c.Get(Key{Path: path, Slice: 1}, func() (*profile.Profile, error) { loads++; return p, err })
		if got != p && err == nil || !errors.Is(gerr, err) {
			t.Fatalf("get %s: %p, %v; want %p, %v", path, got, gerr, p, err)
		}
	}
	held := func() []string {
		var paths []string
		for _, k := range c.Keys() {
			paths = append(paths, k.Path)
		}
		slices.Sort(paths)
		return paths
	}
	for _, step := range []struct {
		name  string
		do    func()
		loads int
		held  []string
	}{
		{"a and b fit", func() { get("a", p, nil); get("b", p, nil) }, 2, []string{"a", "b"}},
		{"a again is a hit", func() { get("a", p, nil) }, 2, []string{"a", "b"}},
		{"c pushes out b, the least recent", func() { get("c", p, nil) }, 3, []string{"a", "c"}},
		{"a part over the budget is not kept", func() { big, _ := part(300); get("d", big, nil) }, 4, []string{"a", "c"}},
		{"a failed load is not kept", func() { get("e", nil, errors.New("damaged")) }, 5, []string{"a", "c"}},
		{"forget a", func() { c.Forget("a") }, 5, []string{"c"}},
		{"clear", c.Clear, 5, nil},
	} {
		step.do()
		if loads != step.loads || !slices.Equal(held(), step.held) {
			t.Fatalf("%s: %d loads, holding %v; want %d, %v", step.name, loads, held(), step.loads, step.held)
		}
	}
	if used, hits, misses, evictions := c.Stats(); used != 0 || hits != 1 || misses != 5 || evictions != 1 {
		t.Errorf("stats: %d bytes, %d hits, %d misses, %d evictions; want 0, 1, 5, 1", used, hits, misses, evictions)
	}
}

// TestCacheOneLoad: concurrent reads of one part wait for one load.
func TestCacheOneLoad(t *testing.T) {
	p, _ := part(10)
	c := New(1 << 20)
	release := make(chan struct{})
	var mu sync.Mutex
	loads := 0
	load := func() (*profile.Profile, error) {
		mu.Lock()
		loads++
		mu.Unlock()
		<-release
		return p, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := c.Get(Key{Path: "a"}, load); got != p || err != nil {
				t.Errorf("get: %p, %v; want %p", got, err, p)
			}
		}()
	}
	// The first Get loads; the others find its entry and wait on it, or
	// come after it is ready: either way none loads again.
	close(release)
	wg.Wait()
	if loads != 1 {
		t.Errorf("%d loads of one part, want 1", loads)
	}
}
