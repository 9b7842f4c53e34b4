package blockcache

import (
	"errors"
	"fmt"
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

// TestCacheBudget: parts are kept within the budget; a part larger than
// the whole budget is handed out and not kept; a failed load is not kept;
// Forget and Clear drop parts.
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
		{"a part over the budget is not kept", func() { big, _ := part(300); get("d", big, nil) }, 3, []string{"a", "b"}},
		{"a failed load is not kept", func() { get("e", nil, errors.New("damaged")) }, 4, []string{"a", "b"}},
		{"forget a", func() { c.Forget("a") }, 4, []string{"b"}},
		{"clear", c.Clear, 4, nil},
	} {
		step.do()
		if loads != step.loads || !slices.Equal(held(), step.held) {
			t.Fatalf("%s: %d loads, holding %v; want %d, %v", step.name, loads, held(), step.loads, step.held)
		}
	}
	if used, hits, misses, _ := c.Stats(); used != 0 || hits != 1 || misses != 4 {
		t.Errorf("stats: %d bytes, %d hits, %d misses; want 0, 1, 4", used, hits, misses)
	}
	// Many more parts than fit: the budget holds.
	for i := range 50 {
		get(fmt.Sprint("many", i), p, nil)
		if used, _, _, _ := c.Stats(); used > 2*size {
			t.Fatalf("after %d parts: %d bytes held, over the budget of %d", i+1, used, 2*size)
		}
	}
}

// TestCacheLoop: a dashboard reads the same parts in turn, every second,
// and they are twice what the budget holds. The cache keeps what fits and
// hits it on every round, where least recently used would miss every read.
func TestCacheLoop(t *testing.T) {
	const parts, rounds = 40, 30
	p, size := part(100)
	c := New(parts / 2 * size)
	for r := range rounds {
		_, hits0, _, _ := c.Stats()
		for i := range parts {
			if _, err := c.Get(Key{Path: fmt.Sprint(i)}, func() (*profile.Profile, error) { return p, nil }); err != nil {
				t.Fatal(err)
			}
		}
		if _, hits, _, _ := c.Stats(); r >= rounds/2 && hits-hits0 < parts/4 {
			t.Fatalf("round %d: %d of %d reads hit, want at least %d", r, hits-hits0, parts, parts/4)
		}
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
