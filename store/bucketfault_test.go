package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/lake"
	"github.com/sparkprof/sparkprof/store/lease"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// chaosBucket is a real bucket whose requests fail at random, as an
// object store's do on a network that drops them: a request fails before
// the store did it, or a write or delete after; and an object stored by a
// write that failed can show in listings only some listings later.
type chaosBucket struct {
	objstore.Bucket
	mu   sync.Mutex
	rng  *rand.Rand
	p    float64        // the chance of each kind of failure
	late map[string]int // objects stored, hidden from this many listings
}

// fail draws the fate of a request: whether it fails, and if so whether
// the store did it all the same.
func (c *chaosBucket) fail() (fails, done bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r := c.rng.Float64(); {
	case r < c.p:
		return true, false
	case r < 2*c.p:
		return true, true
	}
	return false, false
}

func (c *chaosBucket) List(ctx context.Context, prefix string) ([]objstore.Object, error) {
	if fails, _ := c.fail(); fails {
		return nil, errDown
	}
	objs, err := c.Bucket.List(ctx, prefix)
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []objstore.Object
	for _, o := range objs {
		if c.late[o.Name] > 0 {
			c.late[o.Name]--
			continue
		}
		out = append(out, o)
	}
	return out, err
}

func (c *chaosBucket) ReadAll(ctx context.Context, name string) ([]byte, error) {
	if fails, _ := c.fail(); fails {
		return nil, errDown
	}
	return c.Bucket.ReadAll(ctx, name)
}

func (c *chaosBucket) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if fails, _ := c.fail(); fails {
		return errDown
	}
	return c.Bucket.ReadAt(ctx, name, p, off)
}

func (c *chaosBucket) Write(ctx context.Context, name string, data []byte, ifNotExist bool) error {
	fails, done := c.fail()
	if fails && !done {
		return errDown
	}
	if err := c.Bucket.Write(ctx, name, data, ifNotExist); err != nil || !fails {
		return err
	}
	if !strings.HasPrefix(name, lease.Prefix) {
		c.mu.Lock()
		c.late[name] = c.rng.IntN(8)
		c.mu.Unlock()
	}
	return errDown
}

func (c *chaosBucket) Delete(ctx context.Context, name string) error {
	fails, done := c.fail()
	if fails && !done {
		return errDown
	}
	if err := c.Bucket.Delete(ctx, name); err != nil || !fails {
		return err
	}
	return errDown
}

// heal makes every request succeed and every object show.
func (c *chaosBucket) heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p = 0
	clear(c.late)
}

// TestBucketFaultsCountOnce runs two nodes and a query node on a bucket
// whose requests fail at random, each seed a different run of uploads,
// flushes, compactions and listings, then heals the bucket: every node
// counts each upload once, and the bucket holds blocks only, each whole
// and none holding what another holds.
func TestBucketFaultsCountOnce(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	grace := orphanGrace
	orphanGrace = 0
	t.Cleanup(func() { orphanGrace = grace })
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { faultyRun(t, seed) })
	}
}

func faultyRun(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 1))
	b := &chaosBucket{Bucket: fileBucket(t), rng: rand.New(rand.NewPCG(seed, 2)), p: 0.1, late: map[string]int{}}
	nodes := []*DB{
		openNode(t, t.TempDir(), b, RoleAll, Options{}),
		openNode(t, t.TempDir(), b, RoleAll, Options{}),
	}
	q := openNode(t, t.TempDir(), b, RoleQuery, Options{})
	var want int64
	now := time.Now()
	for range 60 {
		n := nodes[rng.IntN(len(nodes))]
		switch rng.IntN(5) {
		case 0, 1:
			want += appendN(t, n, "acme", 1)
		case 2:
			n.Flush(ctx)
		case 3:
			now = now.Add(time.Duration(rng.IntN(3)) * time.Hour) // the lease expires, partitions go quiet
			n.CompactBucket(ctx, now)
		case 4:
			q.refresh(ctx)
		}
	}
	b.heal()
	for range 2 {
		for _, n := range nodes {
			if err := n.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(3 * time.Hour)
		for _, n := range nodes {
			if err := n.CompactBucket(ctx, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, n := range append(nodes, q) {
		if err := n.refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, total := count(t, n, "acme", Query{}); total != want {
			t.Errorf("node %d: total %d, want %d (%.2f×)", i, total, want, float64(total)/float64(want))
		}
	}
	var blocks []string
	parquets := map[string]bool{}
	for _, name := range objects(t, b, "t-") {
		switch block, ok := lake.BlockOf(name); {
		case ok:
			parquets[block] = true
		case strings.HasSuffix(name, ".block"):
			blocks = append(blocks, name)
		default:
			t.Errorf("object %s left in the bucket", name)
		}
	}
	for _, name := range blocks {
		delete(parquets, name)
	}
	for name := range parquets {
		t.Errorf("Parquet objects of %s, a block not in the bucket", name)
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	read := 0
	if rt := q.remote.view["acme"]; rt != nil {
		read = len(rt.blocks)
	}
	if read != len(blocks) {
		t.Errorf("the bucket holds blocks %v; the query node reads %d of them", blocks, read)
	}
}

func TestUncovered(t *testing.T) {
	blk := func(name string, uploads int, nodes map[string][]uint64) *storedBlock {
		return &storedBlock{Block: &block.Block{Path: name, Meta: block.Meta{Uploads: uploads, Nodes: nodes}}}
	}
	for _, tc := range []struct {
		name   string
		blocks []*storedBlock
		kept   string
	}{
		{"disjoint", []*storedBlock{
			blk("a", 2, map[string][]uint64{"n1": {1, 2}}),
			blk("b", 2, map[string][]uint64{"n1": {3, 4}}),
		}, "a b"},
		{"a retry holding more covers the first", []*storedBlock{
			blk("a", 2, map[string][]uint64{"n1": {1, 2}}),
			blk("b", 5, map[string][]uint64{"n1": {1, 3}, "n2": {1, 2}}),
		}, "b"},
		{"of two alike the later stays", []*storedBlock{
			blk("b", 2, map[string][]uint64{"n1": {1, 2}}),
			blk("a", 2, map[string][]uint64{"n1": {1, 2}}),
		}, "b"},
		{"another node's ids do not cover", []*storedBlock{
			blk("a", 2, map[string][]uint64{"n1": {1, 2}}),
			blk("b", 3, map[string][]uint64{"n2": {1, 3}}),
		}, "a b"},
		{"a range across two ranges is not held", []*storedBlock{
			blk("a", 3, map[string][]uint64{"n1": {4, 6}}),
			blk("b", 6, map[string][]uint64{"n1": {1, 5, 7, 7}}),
		}, "a b"},
		{"a range ending where one ends is held", []*storedBlock{
			blk("a", 1, map[string][]uint64{"n1": {5, 5}}),
			blk("b", 6, map[string][]uint64{"n1": {1, 5, 7, 7}}),
		}, "b"},
		{"blocks without nodes are kept", []*storedBlock{
			blk("a", 1, nil),
			blk("b", 6, map[string][]uint64{"n1": {1, 6}}),
		}, "a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, covered := uncovered(tc.blocks)
			var names []string
			for _, b := range kept {
				names = append(names, b.Path)
			}
			if got := strings.Join(names, " "); got != tc.kept || len(kept)+len(covered) != len(tc.blocks) {
				t.Errorf("kept %q and %d covered, want %q", got, len(covered), tc.kept)
			}
		})
	}
}
