package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/lake"
	"github.com/sparkprof/sparkprof/store/lease"
	"github.com/sparkprof/sparkprof/store/objstore"

	"gocloud.dev/blob/fileblob"
)

// faultyBucket is a real bucket whose requests fail while down is set, as
// they do when the object store is unreachable.
type faultyBucket struct {
	objstore.Bucket
	down atomic.Bool
}

var errDown = errors.New("injected: the bucket is unreachable")

func (f *faultyBucket) List(ctx context.Context, prefix string) ([]objstore.Object, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Bucket.List(ctx, prefix)
}

func (f *faultyBucket) ReadAll(ctx context.Context, name string) ([]byte, error) {
	if f.down.Load() {
		return nil, errDown
	}
	return f.Bucket.ReadAll(ctx, name)
}

func (f *faultyBucket) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if f.down.Load() {
		return errDown
	}
	return f.Bucket.ReadAt(ctx, name, p, off)
}

func (f *faultyBucket) Write(ctx context.Context, name string, data []byte, ifNotExist bool) error {
	if f.down.Load() {
		return errDown
	}
	return f.Bucket.Write(ctx, name, data, ifNotExist)
}

func (f *faultyBucket) Delete(ctx context.Context, name string) error {
	if f.down.Load() {
		return errDown
	}
	return f.Bucket.Delete(ctx, name)
}

// fileBucket returns a bucket in a temporary directory.
func fileBucket(t *testing.T) *faultyBucket {
	t.Helper()
	b, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &faultyBucket{Bucket: objstore.New(b)}
}

// openNode opens a store over bucket b whose background rounds, but the
// first, wait an hour: the test runs them.
func openNode(t *testing.T, dir string, b objstore.Bucket, role Role, opts Options) *DB {
	t.Helper()
	opts.Bucket, opts.Role, opts.FlushInterval = b, role, time.Hour
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func appendN(t *testing.T, db *DB, tenant string, n int) (total int64) {
	t.Helper()
	for i := range n {
		u := upload(t, string(rune('1'+i)))
		for _, s := range u.Profile.Samples {
			total += s.Value
		}
		if err := db.Append(tenant, u); err != nil {
			t.Fatal(err)
		}
	}
	return total
}

func objects(t *testing.T, b objstore.Bucket, prefix string) []string {
	t.Helper()
	objs, err := b.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	return names
}

func TestBucketNodesSeeEachOther(t *testing.T) {
	b := fileBucket(t)
	ctx := context.Background()
	dirA := t.TempDir()
	a := openNode(t, dirA, b, RoleAll, Options{})
	c := openNode(t, t.TempDir(), b, RoleQuery, Options{})
	want := appendN(t, a, "acme", 3)
	if n, _ := count(t, c, "acme", Query{}); n != 0 {
		t.Fatalf("before a flush, the query node sees %d uploads", n)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if w := files(t, dirA, "*.wal"); len(w) != 0 {
		t.Errorf("log segments left after shipping: %v", w)
	}
	if err := c.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// The shipping node counts its uploads once: they left its head.
	for _, db := range []*DB{a, c} {
		if n, total := count(t, db, "acme", Query{}); n != 3 || total != want {
			t.Errorf("after a flush: %d uploads with %d, want 3 with %d", n, total, want)
		}
	}
	if err := a.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n, total := count(t, a, "acme", Query{}); n != 3 || total != want {
		t.Errorf("after listing its own segment: %d uploads with %d, want 3 with %d", n, total, want)
	}
	if err := a.CompactBucket(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if segs := objects(t, b, TenantDir("acme")+"/segments/"); len(segs) != 0 {
		t.Errorf("segments left after compaction: %v", segs)
	}
	if err := c.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*DB{a, c} {
		if n, total := count(t, db, "acme", Query{}); n != 1 || total != want {
			t.Errorf("after compaction: %d blocks with %d, want 1 with %d", n, total, want)
		}
	}
	if st := c.Stats().Bucket; st == nil || !st.Up || st.Blocks != 1 {
		t.Errorf("query node's bucket stats %+v", st)
	}
	// A block is three objects, and a node that did not write it reads its
	// samples from the Parquet object.
	objs := objects(t, b, TenantDir("acme")+"/blocks/")
	if len(objs) != 3 || !strings.HasSuffix(objs[0], ".block") || objs[1] != lake.SamplesPath(objs[0]) || objs[2] != lake.StacksPath(objs[0]) {
		t.Fatalf("block objects %v, want a block and its two Parquet files", objs)
	}
	c.mu.RLock()
	blk := c.remote.view["acme"].blocks[0]
	c.mu.RUnlock()
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	p, err := blk.Load(block.PartSamples, dec)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, s := range p.Samples {
		total += s.Value
	}
	if total != want {
		t.Errorf("the block's samples, read from the bucket, sum to %d, want %d", total, want)
	}
}

func TestBucketRestartShipsWhatItHad(t *testing.T) {
	b := fileBucket(t)
	ctx := context.Background()
	dir := t.TempDir()
	a := openNode(t, dir, b, RoleIngest, Options{})
	want := appendN(t, a, "acme", 2)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want += appendN(t, a, "acme", 2)
	// Stopped without a flush: its last two uploads are only in its log.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openNode(t, dir, b, RoleIngest, Options{})
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Each upload is in one segment, all under the node's one name.
	var ids []string
	nodes := map[string]bool{}
	for _, s := range objects(t, b, TenantDir("acme")+"/segments/") {
		node, file := path.Split(strings.TrimPrefix(s, TenantDir("acme")+"/segments/"))
		nodes[node] = true
		var lo, hi int
		fmt.Sscanf(file, "%d-%d.seg", &lo, &hi)
		for id := lo; id <= hi; id++ {
			ids = append(ids, strconv.Itoa(id))
		}
	}
	if len(nodes) != 1 || strings.Join(ids, ",") != "1,2,3,4" {
		t.Errorf("segments of nodes %v hold uploads %v, want 1,2,3,4 of one node", nodes, ids)
	}
	q := openNode(t, t.TempDir(), b, RoleQuery, Options{})
	if n, total := count(t, q, "acme", Query{}); n != 4 || total != want {
		t.Errorf("after the restart: %d uploads with %d, want 4 with %d", n, total, want)
	}
}

func TestTwoCompactorsCompactOnce(t *testing.T) {
	b := fileBucket(t)
	ctx := context.Background()
	ing := openNode(t, t.TempDir(), b, RoleIngest, Options{})
	c1 := openNode(t, t.TempDir(), b, RoleCompactor, Options{})
	c2 := openNode(t, t.TempDir(), b, RoleCompactor, Options{})
	var want int64
	uploads := 0
	for round := range 3 {
		want += appendN(t, ing, "acme", 2)
		uploads += 2
		if err := ing.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, c := range []*DB{c1, c2} {
			wg.Go(func() {
				if err := c.CompactBucket(ctx, time.Now()); err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
	}
	n1, n2 := c1.remote.compactions.Load(), c2.remote.compactions.Load()
	if n1+n2 != 3 || n1 != 0 && n2 != 0 {
		t.Errorf("compactions %d and %d: want 3 by one compactor", n1, n2)
	}
	if segs := objects(t, b, TenantDir("acme")+"/segments/"); len(segs) != 0 {
		t.Errorf("segments left: %v", segs)
	}
	q := openNode(t, t.TempDir(), b, RoleQuery, Options{})
	held := 0
	q.mu.RLock()
	for _, blk := range q.remote.view["acme"].blocks {
		held += blk.Meta.Uploads
	}
	q.mu.RUnlock()
	if n, total := count(t, q, "acme", Query{}); held != uploads || total != want {
		t.Errorf("%d blocks hold %d uploads with %d, want %d with %d", n, held, total, uploads, want)
	}
}

func TestBucketRetentionDeletesWholeBlocks(t *testing.T) {
	b := fileBucket(t)
	ctx := context.Background()
	ing := openNode(t, t.TempDir(), b, RoleIngest, Options{})
	for _, e := range []string{"1", "2"} {
		u := upload(t, e) // windows in 1970
		u.Received = time.Now().Add(-48 * time.Hour).UnixNano()
		if err := ing.Append("acme", u); err != nil {
			t.Fatal(err)
		}
	}
	if err := ing.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := openNode(t, t.TempDir(), b, RoleCompactor, Options{})
	if err := c.CompactBucket(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	old := objects(t, b, TenantDir("acme")+"/blocks/")
	if len(old) != 3 {
		t.Fatalf("block objects %v, want a block and its two Parquet files", old)
	}
	now := time.Now()
	u := upload(t, "9")
	u.From, u.Until = now.Add(-time.Minute).UnixNano(), now.UnixNano()
	if err := ing.Append("acme", u); err != nil {
		t.Fatal(err)
	}
	if err := ing.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, "t-/notes.txt", []byte("not the store's"), false); err != nil {
		t.Fatal(err)
	}
	before := objects(t, b, "")
	r := openNode(t, t.TempDir(), b, RoleCompactor, Options{Retention: 24 * time.Hour})
	c.Close() // its lease lapses only with time: r takes a fresh one
	for _, o := range objects(t, b, lease.Prefix) {
		b.Delete(ctx, o)
	}
	if err := r.CompactBucket(ctx, now); err != nil {
		t.Fatal(err)
	}
	after := objects(t, b, "")
	for _, o := range old {
		if slices.Contains(after, o) {
			t.Errorf("the block past retention: %s is still there", o)
		}
	}
	for _, o := range before {
		if !slices.Contains(old, o) && !strings.Contains(o, "/segments/") && !strings.HasPrefix(o, lease.Prefix) && !slices.Contains(after, o) {
			t.Errorf("retention deleted %s", o)
		}
	}
	if n, _ := count(t, r, "acme", Query{}); n != 1 {
		t.Errorf("%d uploads left, want the recent one", n)
	}
}

func TestBucketOutage(t *testing.T) {
	b := fileBucket(t)
	ctx := context.Background()
	dir := t.TempDir()
	probe := upload(t, "1")
	a := openNode(t, dir, b, RoleAll, Options{HeadBytes: 3 * probe.Profile.MemSize()})
	q := openNode(t, t.TempDir(), b, RoleQuery, Options{})
	want := appendN(t, a, "acme", 1)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.CompactBucket(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := q.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	b.down.Store(true)
	n := 0
	for !a.Backlogged() {
		want += appendN(t, a, "acme", 1)
		if n++; n > 10 {
			t.Fatal("the head is not backlogged past its budget while the bucket is down")
		}
	}
	if err := a.Flush(ctx); err == nil {
		t.Fatal("flush to a bucket that is down succeeded")
	}
	if st := a.Stats().Bucket; st.Up || st.Errors == 0 {
		t.Errorf("bucket stats while down: %+v", st)
	}
	if w := files(t, dir, "*.wal"); len(w) == 0 {
		t.Errorf("the log was deleted while the bucket was down (%d appended, stats %+v)", n, a.Stats())
	}
	// A block the query node listed cannot be read: the error names it.
	err := q.Select("acme", Query{}, func(u *Upload) error { _, err := u.Load(); return err })
	var ue *objstore.UnreachableError
	if !errors.As(err, &ue) || !strings.Contains(ue.Object, "/blocks/") {
		t.Errorf("query while the bucket is down: %v, want an UnreachableError naming the block", err)
	}
	b.down.Store(false)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Backlogged() {
		t.Error("still backlogged after the bucket came back")
	}
	if err := q.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, total := count(t, q, "acme", Query{}); total != want {
		t.Errorf("after the outage: %d uploads with %d, want %d", got, total, want)
	}
}

// holdBlocks is a bucket whose writes of block objects wait until release
// is closed; held is closed when the first waits.
type holdBlocks struct {
	objstore.Bucket
	once          sync.Once
	held, release chan struct{}
}

func (h *holdBlocks) Write(ctx context.Context, name string, data []byte, ifNotExist bool) error {
	if strings.HasSuffix(name, ".block") {
		h.once.Do(func() { close(h.held) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Bucket.Write(ctx, name, data, ifNotExist)
}

// leaseExpiry returns when the compactor's lease in b expires (Unix ns).
func leaseExpiry(t *testing.T, b objstore.Bucket) int64 {
	t.Helper()
	names := objects(t, b, lease.Prefix)
	if len(names) == 0 {
		t.Fatal("no compactor lease in the bucket")
	}
	data, err := b.ReadAll(context.Background(), slices.Max(names))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ Expires int64 }
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Expires
}

// TestCompactorKeepsItsLease: a compaction that lasts longer than the
// lease (here, its block's write held) keeps renewing it, so that a
// second compactor does not take it and compact the same uploads again.
func TestCompactorKeepsItsLease(t *testing.T) {
	b := fileBucket(t)
	held := &holdBlocks{Bucket: b, held: make(chan struct{}), release: make(chan struct{})}
	ctx := context.Background()
	// A lease is a time by nature: its holder must renew it before it
	// runs out. Renewals come every 10 s here, so the test fails only if
	// the renewing goroutine waits 20 s for a core, when the lease would
	// fail a real compactor too.
	const ttl = 30 * time.Second
	ing := openNode(t, t.TempDir(), b, RoleIngest, Options{})
	// A compactor's background work takes the lease at once: c1 takes it
	// before c2 starts, so that c1 is the one that compacts.
	c1 := openNode(t, t.TempDir(), held, RoleCompactor, Options{LeaseTTL: ttl})
	for len(objects(t, b, lease.Prefix)) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	c2 := openNode(t, t.TempDir(), b, RoleCompactor, Options{LeaseTTL: ttl})
	want := appendN(t, ing, "acme", 2)
	if err := ing.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c1.CompactBucket(ctx, time.Now()) }()
	select {
	case <-held.held:
	case err := <-done:
		t.Fatalf("the first compactor wrote no block (err %v): it did not hold the lease", err)
	}
	// While c1's block waits, its lease is renewed before it runs out.
	first := leaseExpiry(t, b)
	for leaseExpiry(t, b) == first {
		if time.Now().UnixNano() > first {
			close(held.release)
			<-done
			t.Fatal("the lease ran out while its holder compacted: it was not renewed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c2.CompactBucket(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	close(held.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n1, n2 := c1.remote.compactions.Load(), c2.remote.compactions.Load(); n1 != 1 || n2 != 0 {
		t.Errorf("compactions %d and %d, want 1 by the first compactor", n1, n2)
	}
	q := openNode(t, t.TempDir(), b, RoleQuery, Options{})
	if n, total := count(t, q, "acme", Query{}); total != want {
		t.Errorf("%d uploads with %d, want %d", n, total, want)
	}
}

// TestRolesWithoutUploads: a query or compactor node refuses uploads,
// naming its role, and keeps nothing of them; an ingest node takes them.
func TestRolesWithoutUploads(t *testing.T) {
	b := fileBucket(t)
	for _, role := range []Role{RoleAll, RoleIngest, RoleQuery, RoleCompactor} {
		t.Run(role.String(), func(t *testing.T) {
			dir := t.TempDir()
			db := openNode(t, dir, b, role, Options{})
			err := db.Append("acme", upload(t, "1"))
			if role.Ingests() {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrNotIngesting) || !strings.Contains(err.Error(), "--role "+role.String()) {
				t.Errorf("append: %v, want ErrNotIngesting naming the role", err)
			}
			if w := files(t, dir, "*.wal"); len(w) != 0 || db.Stats().HeadUploads != 0 {
				t.Errorf("the refused upload left logs %v, %d head uploads", w, db.Stats().HeadUploads)
			}
		})
	}
}
