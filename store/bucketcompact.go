package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/lease"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// CompactBucket compacts the bucket, when this store holds the
// compactor's lease (it takes it when it is free): the segments' uploads
// go into blocks, one per time partition, merged with the partition's
// blocks once it is quiet as a local store merges them; then the segments
// whose every upload a block holds are deleted, and, with a retention,
// the whole blocks past it. Only the lease's holder writes or deletes
// blocks, so a range of uploads is compacted once however many
// compactors run.
func (db *DB) CompactBucket(ctx context.Context, now time.Time) error {
	if db.remote == nil {
		return nil
	}
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	held, err := db.remote.lease.Hold(ctx, now)
	if err != nil {
		db.remote.failed()
		return err
	}
	if !held {
		return nil
	}
	ctx, stop := db.remote.lease.Keep(ctx)
	defer stop()
	// A block that could not be read may hold uploads of the segments
	// listed: compaction waits for it. A segment that could not be read
	// stays for the next round, and a damaged object is left out.
	if err := db.refresh(ctx); errors.Is(err, errUnlisted) || errors.Is(err, errBlockUnread) {
		return err
	} else if err != nil {
		db.log.Warn("store: compacting the bucket without objects that could not be read", "err", err)
	}
	db.mu.RLock()
	tenants := sortedKeys(db.remote.view)
	db.mu.RUnlock()
	var errs []error
	for _, name := range tenants {
		if err := db.compactTenantBucket(ctx, name, now); err != nil {
			errs = append(errs, fmt.Errorf("tenant %q: %w", name, err))
		}
	}
	if db.opts.Retention > 0 {
		if err := db.retainBucket(ctx, now.Add(-db.opts.Retention).UnixNano()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := db.sweepBucket(ctx, time.Now()); err != nil {
		errs = append(errs, err)
	}
	if err := db.refresh(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// compactTenantBucket compacts one tenant's segments and quiet partitions.
func (db *DB) compactTenantBucket(ctx context.Context, name string, now time.Time) error {
	db.mu.RLock()
	rt := db.remote.view[name]
	ups := slices.Clone(rt.uploads)
	blocks := slices.Clone(rt.blocks)
	segs := slices.Clone(rt.segs)
	db.mu.RUnlock()
	part := int64(db.opts.Partition)
	quiet := int64(db.opts.CompactAfter)
	byPart, partBlocks, lastReceived := byPartition(ups, blocks, part)
	for _, p := range slices.Sorted(maps.Keys(lastReceived)) {
		var olds []*storedBlock
		if p+part+quiet <= now.UnixNano() && lastReceived[p]+quiet <= now.UnixNano() {
			olds = db.mergeable(byPart[p], partBlocks[p])
		}
		if len(byPart[p]) == 0 && len(olds) < 2 {
			continue
		}
		if !db.remote.lease.Valid(time.Now()) {
			return lease.ErrShort
		}
		if err := db.compactBucketPartition(ctx, name, p, byPart[p], olds); err != nil {
			return fmt.Errorf("partition %s: %w", time.Unix(0, p).UTC().Format(time.RFC3339), err)
		}
	}
	// Every upload of the segments listed is in a block now.
	for _, s := range segs {
		if err := db.remote.b.Delete(ctx, s); err != nil {
			return fmt.Errorf("delete compacted segment: %w", err)
		}
	}
	return nil
}

// compactBucketPartition writes a block of partition p holding the
// uploads ups merged with the blocks olds, then deletes olds.
func (db *DB) compactBucketPartition(ctx context.Context, name string, p int64, ups []*Upload, olds []*storedBlock) error {
	oldProfiles, err := db.loadMerged(olds)
	if err != nil {
		return err
	}
	prof, meta := block.Merge(p, blocksOf(olds), oldProfiles, inputs(ups), int64(db.opts.Resolution))
	meta.Nodes = nodeIDs(olds, ups)
	// The block is written as a local store writes one, then uploaded.
	tmpDir, err := os.MkdirTemp(db.dir, "compact-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	seq := uint64(time.Now().UnixNano())
	obj := blockObject(name, p, seq)
	file := filepath.Join(tmpDir, filepath.Base(obj))
	if _, _, err := block.Write(file, meta, prof, db.blockEnc, int64(db.opts.Partition)); err != nil {
		return fmt.Errorf("write block: %w", err)
	}
	// Merging and writing can take long: the lease is checked again
	// before the block goes where readers see it.
	if !db.remote.lease.Valid(time.Now()) {
		return lease.ErrShort
	}
	if err := db.uploadBlock(ctx, file, obj); err != nil {
		return err
	}
	db.remote.compactions.Add(1)
	for _, o := range olds {
		if err := db.deleteBlockObjects(ctx, o.Path); err != nil {
			return fmt.Errorf("delete merged block: %w", err)
		}
	}
	db.log.Info("store: compacted in the bucket", "tenant", name, "partition", time.Unix(0, p).UTC().Format(time.RFC3339),
		"uploads", meta.Uploads, "samples", len(prof.Samples), "object", obj, "merged", len(olds))
	return nil
}

// nodeIDs lists the uploads of blocks olds and of ups by node, as
// block.Meta.Nodes does.
func nodeIDs(olds []*storedBlock, ups []*Upload) map[string][]uint64 {
	ids := map[string][]uint64{}
	for _, b := range olds {
		for node, rs := range b.Meta.Nodes {
			for i := 0; i+1 < len(rs); i += 2 {
				for id := rs[i]; id <= rs[i+1]; id++ {
					ids[node] = append(ids[node], id)
				}
			}
		}
	}
	for _, u := range ups {
		ids[u.node] = append(ids[u.node], u.ID)
	}
	out := make(map[string][]uint64, len(ids))
	for node, l := range ids {
		out[node] = block.IDRanges(l)
	}
	return out
}

// retainBucket deletes the bucket's blocks whose data ended before cutoff,
// whole; nothing else.
func (db *DB) retainBucket(ctx context.Context, cutoff int64) error {
	db.mu.RLock()
	var old []string
	for _, rt := range db.remote.view {
		for _, b := range rt.blocks {
			if max(b.Meta.Until, b.Meta.Received) < cutoff {
				old = append(old, b.Path)
			}
		}
	}
	db.mu.RUnlock()
	for _, name := range old {
		if err := db.deleteBlockObjects(ctx, name); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		db.log.Info("store: deleted a block past retention from the bucket", "object", name)
	}
	return nil
}

// orphanGrace is how long a Parquet object is listed without its block
// before compaction deletes it: far longer than a compactor takes between
// writing a block's Parquet objects and the block, each write bounded by
// objstore.Timeout.
var orphanGrace = 10 * time.Minute

// sweepBucket deletes what the listing showed no query reads: blocks
// replaced or covered by another (a delete or write that failed), and
// Parquet objects whose block was never written, once past orphanGrace.
func (db *DB) sweepBucket(ctx context.Context, now time.Time) error {
	r := db.remote
	db.mu.RLock()
	stale := slices.Clone(r.stale)
	var orphans []string
	for name, since := range r.orphans {
		if now.Sub(since) >= orphanGrace {
			orphans = append(orphans, name)
		}
	}
	db.mu.RUnlock()
	for _, name := range stale {
		if err := db.deleteBlockObjects(ctx, name); err != nil {
			return fmt.Errorf("delete a block another holds: %w", err)
		}
		db.log.Info("store: deleted a block another holds from the bucket", "object", name)
	}
	slices.Sort(orphans)
	for _, name := range orphans {
		if err := r.b.Delete(ctx, name); err != nil {
			return fmt.Errorf("delete a Parquet object without its block: %w", err)
		}
		db.log.Info("store: deleted a Parquet object without its block from the bucket", "object", name)
	}
	return nil
}

// uploadBlock writes the block whose file is file, written by block.Write,
// to the bucket as the object obj, and its Parquet files beside it: those
// first, so that a block listed has them. When a write fails, what it
// wrote is deleted again: a write that failed may have stored its object
// all the same (a timeout after the store took it), so the block's goes
// first, and the Parquet objects only once it is gone; what is left is a
// block whole or Parquet objects sweepBucket deletes.
func (db *DB) uploadBlock(ctx context.Context, file, obj string) error {
	var tried []string
	write := func(name string, data []byte) error {
		tried = append(tried, name)
		wctx, cancel := context.WithTimeout(ctx, objstore.Timeout)
		defer cancel()
		if err := db.remote.b.Write(wctx, name, data, true); err != nil {
			db.remote.failed()
			db.deleteObjects(tried)
			return err
		}
		return nil
	}
	for _, f := range block.LakePaths(file) {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a block without Parquet files
		}
		if err != nil {
			db.deleteObjects(tried)
			return err
		}
		if err := write(path.Join(path.Dir(obj), path.Base(f)), data); err != nil {
			return fmt.Errorf("upload block's Parquet file: %w", err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		db.deleteObjects(tried)
		return err
	}
	if err := write(obj, data); err != nil {
		return fmt.Errorf("upload block: %w", err)
	}
	return nil
}

// deleteObjects deletes names from the bucket, the last first, and stops
// at the first it cannot delete.
func (db *DB) deleteObjects(names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), objstore.Timeout)
	defer cancel()
	for _, name := range slices.Backward(names) {
		if err := db.remote.b.Delete(ctx, name); err != nil {
			return
		}
	}
}

// deleteBlockObjects deletes the block obj from the bucket: its block
// object first, so that no node lists it any more, then its Parquet
// objects (none is no error); and its parts from the cache.
func (db *DB) deleteBlockObjects(ctx context.Context, obj string) error {
	db.cache.Forget(obj)
	for _, name := range append([]string{obj}, block.LakePaths(obj)...) {
		if err := db.remote.b.Delete(ctx, name); err != nil {
			return err
		}
	}
	return nil
}
