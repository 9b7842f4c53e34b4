package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/lake"
	"github.com/sparkprof/sparkprof/store/lease"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// Role says what a node with a bucket does (Options.Role).
type Role uint8

// The roles of a node.
const (
	RoleAll       Role = iota // ingests, answers queries and may compact
	RoleIngest                // takes uploads and ships them
	RoleQuery                 // answers queries over the bucket
	RoleCompactor             // compacts the bucket and applies retention
)

var roleNames = []string{"all", "ingest", "query", "compactor"}

// ParseRole parses a role's name: all, ingest, query or compactor.
func ParseRole(s string) (Role, error) {
	if i := slices.Index(roleNames, s); i >= 0 {
		return Role(i), nil
	}
	return 0, fmt.Errorf("role %q: want one of %s", s, strings.Join(roleNames, ", "))
}

func (r Role) String() string { return roleNames[r] }

// Ingests reports whether a node of role r takes uploads.
func (r Role) Ingests() bool { return r == RoleAll || r == RoleIngest }

// Queries reports whether a node of role r answers queries.
func (r Role) Queries() bool { return r == RoleAll || r == RoleQuery }

// Compacts reports whether a node of role r competes for the compactor's
// lease.
func (r Role) Compacts() bool { return r == RoleAll || r == RoleCompactor }

// remote is a node's view of the bucket: the metas of its blocks and the
// uploads of its segments, listed every flush interval, and what the node
// counts of its work with the bucket.
type remote struct {
	b    objstore.Bucket
	node string

	// refreshMu serialises listings; the fields below it are under the
	// DB's mu.
	refreshMu sync.Mutex
	// blocks and segs cache what was read of each object, by name.
	blocks map[string]*storedBlock
	segs   map[string][]*Upload
	// view is what queries see, per tenant: the blocks not replaced and
	// the segments' uploads no block holds.
	view map[string]*remoteTenant
	// stale lists the blocks read that the view leaves out, replaced or
	// covered by another (makeView), which compaction deletes; orphans
	// the Parquet objects listed without their block, by when this node
	// first listed them.
	stale   []string
	orphans map[string]time.Time
	// rollups is the memory of the segment uploads' rollups, not counted
	// in the head's budget.
	rollups atomic.Int64

	// lease is this node's hold on the compactor's lease.
	lease *lease.Lease

	up                           atomic.Bool
	flushes, errors, compactions atomic.Int64
}

// remoteTenant is what a tenant has in the bucket.
type remoteTenant struct {
	blocks  []*storedBlock
	uploads []*Upload
	segs    []string // the segment objects the uploads came from
}

func newRemote(b objstore.Bucket, node string, leaseTTL time.Duration, log *slog.Logger) *remote {
	return &remote{b: b, node: node, lease: lease.New(b, node, leaseTTL, log), blocks: map[string]*storedBlock{}, segs: map[string][]*Upload{}, view: map[string]*remoteTenant{}, orphans: map[string]time.Time{}}
}

func (r *remote) ok() { r.up.Store(true) }

func (r *remote) failed() {
	r.up.Store(false)
	r.errors.Add(1)
}

// The object names of a tenant's blocks and segments.
const (
	blocksDir   = "blocks/"
	segmentsDir = "segments/"
	segmentExt  = ".seg"
)

// segmentObject names the segment holding uploads lo to hi of a tenant,
// shipped by node.
func segmentObject(tenant, node string, lo, hi uint64) string {
	return fmt.Sprintf("%s/%s%s/%020d-%020d%s", TenantDir(tenant), segmentsDir, node, lo, hi, segmentExt)
}

// blockObject names a tenant's block of a partition; seq orders the
// blocks of a partition.
func blockObject(tenant string, partition int64, seq uint64) string {
	return fmt.Sprintf("%s/%s%020d-%020d.block", TenantDir(tenant), blocksDir, partition, seq)
}

// parseObject tells what an object of the bucket is: a tenant's block, or
// segment (with its node); ok is false for any other object.
func parseObject(name string) (tenant string, isBlock bool, node string, ok bool) {
	dir, rest, found := strings.Cut(name, "/")
	if !found {
		return "", false, "", false
	}
	tenant, err := TenantName(dir)
	if err != nil {
		return "", false, "", false
	}
	switch {
	case strings.HasPrefix(rest, blocksDir) && strings.HasSuffix(rest, ".block") && !strings.Contains(rest[len(blocksDir):], "/"):
		return tenant, true, "", true
	case strings.HasPrefix(rest, segmentsDir) && strings.HasSuffix(rest, segmentExt):
		node, file, found := strings.Cut(rest[len(segmentsDir):], "/")
		if found && validNode(node) && !strings.Contains(file, "/") {
			return tenant, false, node, true
		}
	}
	return "", false, "", false
}

// addSegment puts a segment the node shipped into its view, its uploads
// as they were in the head; under the DB's mu, held for writing.
func (r *remote) addSegment(tenant, obj string, ups []*Upload) {
	r.segs[obj] = ups
	rt := r.view[tenant]
	if rt == nil {
		rt = &remoteTenant{}
		r.view[tenant] = rt
	}
	for _, u := range ups {
		if !rt.holds(u) {
			rt.uploads = append(rt.uploads, u)
		}
	}
	rt.segs = append(rt.segs, obj)
}

// holds reports whether the tenant's blocks hold upload u of a segment.
func (rt *remoteTenant) holds(u *Upload) bool {
	for _, b := range rt.blocks {
		if ids, ok := b.Meta.Nodes[u.node]; ok && idsContain(ids, u.ID) {
			return true
		}
	}
	return false
}

// idsContain reports whether id is in ranges, flattened [lo, hi] pairs.
func idsContain(ranges []uint64, id uint64) bool {
	for i := 0; i+1 < len(ranges); i += 2 {
		if id >= ranges[i] && id <= ranges[i+1] {
			return true
		}
	}
	return false
}

// The errors of a refresh that leave its view short of what the bucket
// holds: a listing that failed, and a block that could not be read for
// now (not one that is damaged or gone).
var (
	errUnlisted    = errors.New("the bucket could not be listed")
	errBlockUnread = errors.New("a block could not be read")
)

// refresh lists the bucket and reads what is new in it: the metas of new
// blocks (a ranged read each) and new segments, then makes the view of
// every tenant anew. The view stays as it was when the bucket cannot be
// listed; an object that cannot be read is left out until the next
// listing.
func (db *DB) refresh(ctx context.Context) error {
	r := db.remote
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, objstore.Timeout)
	objs, err := r.b.List(lctx, "t-")
	cancel()
	if err != nil {
		r.failed()
		return fmt.Errorf("%w: %w", errUnlisted, err)
	}
	r.ok()
	db.mu.RLock()
	known := func(name string) bool {
		_, b := r.blocks[name]
		_, s := r.segs[name]
		return b || s
	}
	var fresh []objstore.Object
	sizes := make(map[string]int64, len(objs))
	for _, o := range objs {
		sizes[o.Name] = o.Size
		if !known(o.Name) {
			fresh = append(fresh, o)
		}
	}
	db.mu.RUnlock()
	newBlocks := map[string]*storedBlock{}
	newSegs := map[string][]*Upload{}
	var errs []error
	for _, o := range fresh {
		_, isBlock, node, ok := parseObject(o.Name)
		if !ok {
			continue
		}
		if isBlock {
			b, err := db.openRemoteBlock(o, sizes)
			var ue *objstore.UnreachableError
			if errors.As(err, &ue) && !errors.Is(err, objstore.ErrNotExist) {
				err = fmt.Errorf("%w: %w", errBlockUnread, err)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			newBlocks[o.Name] = b
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, objstore.Timeout)
		data, err := r.b.ReadAll(rctx, o.Name)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ups, err := db.decodeSegment(o.Name, node, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, u := range ups {
			u.head = &headRollup{acct: &r.rollups, res: int64(db.opts.Resolution)}
		}
		newSegs[o.Name] = ups
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	listed := map[string]bool{}
	for _, o := range objs {
		listed[o.Name] = true
	}
	for name, b := range newBlocks {
		r.blocks[name] = b
	}
	for name, ups := range newSegs {
		r.segs[name] = ups
	}
	for name := range r.blocks {
		if !listed[name] {
			delete(r.blocks, name)
			db.cache.Forget(name)
		}
	}
	for name := range r.segs {
		if !listed[name] {
			delete(r.segs, name)
		}
	}
	r.listOrphans(objs, listed, time.Now())
	r.view = r.makeView()
	if len(errs) > 0 {
		r.errors.Add(int64(len(errs)))
		return fmt.Errorf("read the bucket's new objects: %w", errors.Join(errs...))
	}
	return nil
}

// listOrphans notes the Parquet objects of objs, the bucket's listing,
// whose block object is not listed: a compactor stopped, or a write that
// failed, between writing them and their block. Under the DB's mu.
func (r *remote) listOrphans(objs []objstore.Object, listed map[string]bool, now time.Time) {
	seen := map[string]bool{}
	for _, o := range objs {
		block, ok := lake.BlockOf(o.Name)
		if !ok || listed[block] {
			continue
		}
		seen[o.Name] = true
		if _, ok := r.orphans[o.Name]; !ok {
			r.orphans[o.Name] = now
		}
	}
	for name := range r.orphans {
		if !seen[name] {
			delete(r.orphans, name)
		}
	}
}

// openRemoteBlock reads the meta of a block in the bucket; sizes holds
// the sizes of the bucket's objects, by name, as listed.
func (db *DB) openRemoteBlock(o objstore.Object, sizes map[string]int64) (*storedBlock, error) {
	rd := objstore.Reader{Bucket: db.remote.b, Name: o.Name, Size: o.Size}
	opened, err := block.Open(o.Name, rd, o.Size)
	if err != nil {
		return nil, err
	}
	b := newStoredBlock(opened)
	b.Open = func() (block.Reader, error) { return rd, nil }
	if b.HasLake() {
		err := b.CheckLake(func(name string) (int64, error) {
			n, ok := sizes[name]
			if !ok {
				return 0, fmt.Errorf("%w: %s", objstore.ErrNotExist, name)
			}
			return n, nil
		})
		if err != nil {
			return nil, err
		}
		sr := objstore.Reader{Bucket: db.remote.b, Name: lake.SamplesPath(o.Name), Size: b.Meta.Lake.SamplesSize}
		b.OpenSamples = func() (block.Reader, error) { return sr, nil }
	}
	db.attach(b)
	return b, nil
}

// makeView makes the tenants' views of the blocks and segments read: the
// blocks no other replaces, and the segments' uploads, each once, that
// no block holds. Under the DB's mu.
func (r *remote) makeView() map[string]*remoteTenant {
	view := map[string]*remoteTenant{}
	get := func(tenant string) *remoteTenant {
		rt := view[tenant]
		if rt == nil {
			rt = &remoteTenant{}
			view[tenant] = rt
		}
		return rt
	}
	replaced := map[string]bool{}
	for _, b := range r.blocks {
		for _, x := range b.Meta.Replaces {
			replaced[path.Join(path.Dir(b.Path), x)] = true
		}
	}
	type group struct {
		tenant    string
		partition int64
	}
	groups := map[group][]*storedBlock{}
	r.stale = r.stale[:0]
	for _, name := range sortedKeys(r.blocks) {
		if replaced[name] {
			r.stale = append(r.stale, name)
			continue
		}
		tenant, _, _, _ := parseObject(name)
		b := r.blocks[name]
		g := group{tenant, b.Meta.Partition}
		groups[g] = append(groups[g], b)
	}
	for _, g := range slices.SortedFunc(maps.Keys(groups), func(x, y group) int {
		return cmp.Or(cmp.Compare(x.tenant, y.tenant), cmp.Compare(x.partition, y.partition))
	}) {
		kept, covered := uncovered(groups[g])
		rt := get(g.tenant)
		rt.blocks = append(rt.blocks, kept...)
		for _, b := range covered {
			r.stale = append(r.stale, b.Path)
		}
	}
	type uploadKey struct {
		node string
		id   uint64
	}
	seen := map[uploadKey]bool{}
	for _, name := range sortedKeys(r.segs) {
		tenant, _, _, _ := parseObject(name)
		rt := get(tenant)
		rt.segs = append(rt.segs, name)
		for _, u := range r.segs[name] {
			k := uploadKey{u.node, u.ID}
			if seen[k] || rt.holds(u) {
				continue
			}
			seen[k] = true
			rt.uploads = append(rt.uploads, u)
		}
	}
	for _, rt := range view {
		slices.SortStableFunc(rt.blocks, func(x, y *storedBlock) int { return cmp.Compare(x.Meta.Partition, y.Meta.Partition) })
		slices.SortStableFunc(rt.uploads, func(x, y *Upload) int { return cmp.Compare(x.Received, y.Received) })
	}
	return view
}

// uncovered splits blocks, of one tenant's partition, into those kept
// and those covered: every upload of a covered block is in a kept one
// that holds more, or as many and was written later. Only a compaction
// whose write failed after the store took it, and was done again, makes
// a covered block; a view that left it in would count its uploads twice.
func uncovered(blocks []*storedBlock) (kept, covered []*storedBlock) {
	blocks = slices.Clone(blocks)
	slices.SortFunc(blocks, func(x, y *storedBlock) int {
		return cmp.Or(cmp.Compare(y.Meta.Uploads, x.Meta.Uploads), strings.Compare(y.Path, x.Path))
	})
	for _, b := range blocks {
		if len(b.Meta.Nodes) > 0 && slices.ContainsFunc(kept, func(k *storedBlock) bool { return holdsAll(k.Meta.Nodes, b.Meta.Nodes) }) {
			covered = append(covered, b)
			continue
		}
		kept = append(kept, b)
	}
	slices.SortFunc(kept, func(x, y *storedBlock) int { return strings.Compare(x.Path, y.Path) })
	return kept, covered
}

// holdsAll reports whether the uploads of outer, ranges of ids by node as
// block.Meta.Nodes lists them, include every upload of inner.
func holdsAll(outer, inner map[string][]uint64) bool {
	for node, rs := range inner {
		out, ok := outer[node]
		if !ok {
			return false
		}
		n := len(out) / 2
		for i := 0; i+1 < len(rs); i += 2 {
			// Ranges are merged: a range held is within one range, the
			// first that ends at or after its start.
			lo, hi := rs[i], rs[i+1]
			k := sort.Search(n, func(k int) bool { return out[2*k+1] >= lo })
			if k == n || out[2*k] > lo || out[2*k+1] < hi {
				return false
			}
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// startBucket starts the work of a node with a bucket: a first listing,
// then every flush interval shipping the head, listing the bucket and,
// for a node that compacts, compaction in the bucket.
func (db *DB) startBucket() {
	if db.opts.Role.Queries() || db.opts.Role.Compacts() {
		if err := db.refresh(context.Background()); err != nil {
			db.log.Warn("store: the bucket cannot be read; queries answer from what the node holds until it can", "err", err)
		}
	}
	go db.bucketLoop()
}

// bucketLoop is the background work of a node with a bucket.
func (db *DB) bucketLoop() {
	defer close(db.done)
	tick := time.NewTicker(db.opts.FlushInterval)
	defer tick.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-db.stop
		cancel()
	}()
	for {
		db.bucketRound(ctx, time.Now())
		select {
		case <-db.stop:
			return
		case <-tick.C:
		}
	}
}

// bucketRound is one round of bucketLoop's work.
func (db *DB) bucketRound(ctx context.Context, now time.Time) {
	db.forgetKeys()
	if err := db.Flush(ctx); err != nil && ctx.Err() == nil {
		db.log.Error("store: the head could not be shipped to the bucket; it stays in the log and is shipped at the next flush", "err", err)
	}
	if db.opts.Role.Queries() {
		if err := db.refresh(ctx); err != nil && ctx.Err() == nil {
			db.log.Warn("store: the bucket could not be listed; queries answer from the last listing", "err", err)
		}
	}
	if db.opts.Role.Compacts() {
		if err := db.CompactBucket(ctx, now); err != nil && ctx.Err() == nil {
			db.log.Error("store: compaction in the bucket failed; it is tried again at the next flush", "err", err)
		}
	}
}
