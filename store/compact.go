package store

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/blockcache"
)

// background applies retention and compacts, once a minute and whenever
// Append finds the head over its budget.
func (db *DB) background() {
	defer close(db.done)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		now := time.Now()
		if db.opts.Retention > 0 {
			db.dropOld(now.Add(-db.opts.Retention).UnixNano())
		}
		db.forgetKeys()
		if err := db.compact(now.UnixNano(), false); err != nil {
			db.log.Error("store: compaction failed; the uploads stay in the log", "err", err)
		}
		db.mu.RLock()
		over := db.headBytes() > db.opts.HeadBytes
		db.mu.RUnlock()
		kick := db.kick
		if over {
			if err := db.compactHead(); err != nil {
				db.log.Error("store: compaction of a full head failed; the uploads stay in the log", "err", err)
				kick = nil // until the next tick, not at every upload
			}
		}
		select {
		case <-db.stop:
			return
		case <-tick.C:
		case <-kick:
		}
	}
}

// Compact compacts every tenant's uploads into blocks now, whether or not
// their partitions are still receiving uploads.
func (db *DB) Compact() error { return db.compact(time.Now().UnixNano(), true) }

// compactHead brings a head over its budget down to half of it, oldest
// uploads first: the uploads of the largest tenant head's oldest partition
// go into a new block, a quarter of the budget at a time, so that what one
// compaction holds in memory stays a fraction of the budget. The block is
// not merged with the partition's blocks: that would rewrite a still-growing
// partition at every early compaction; compact merges them once the
// partition is quiet.
func (db *DB) compactHead() error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	part := int64(db.opts.Partition)
	for {
		db.mu.RLock()
		if db.closed || db.headBytes() <= db.opts.HeadBytes/2 {
			db.mu.RUnlock()
			return nil
		}
		var name string
		var t *tenant
		for n, x := range db.tenants {
			if x.headBytes > 0 && (t == nil || x.headBytes > t.headBytes) {
				name, t = n, x
			}
		}
		if t == nil {
			db.mu.RUnlock()
			return nil
		}
		p := partitionOf(t.uploads[0], part)
		var ups []*Upload
		var size int64
		for _, u := range t.uploads {
			if size >= db.opts.HeadBytes/4 {
				break
			}
			if partitionOf(u, part) == p {
				ups = append(ups, u)
				size += u.memSize
			}
		}
		db.mu.RUnlock()
		if err := db.compactCounted(name, t, p, ups, nil, true); err != nil {
			return err
		}
	}
}

// compact merges the head uploads of each partition that is ready (ended
// and quiet for CompactAfter, or any with all) into a block, together with
// the partition's existing blocks as far as the head's budget allows (see
// mergeable). A ready partition with no uploads left in the head but
// several blocks (made by compactHead) has them merged the same way.
func (db *DB) compact(now int64, all bool) error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	part := int64(db.opts.Partition)
	quiet := int64(db.opts.CompactAfter)
	var errs []error
	for _, name := range db.Tenants() {
		db.mu.RLock()
		t := db.tenants[name]
		if db.closed || t == nil {
			db.mu.RUnlock()
			return nil
		}
		ups := slices.Clone(t.uploads)
		blocks := slices.Clone(t.blocks)
		db.mu.RUnlock()

		byPart, partBlocks, lastReceived := byPartition(ups, blocks, part)
		parts := slices.Sorted(maps.Keys(lastReceived))
		for _, p := range parts {
			if !all && (p+part+quiet > now || lastReceived[p]+quiet > now) {
				continue
			}
			// Each run of blocks that fits the budget together becomes one,
			// the head's uploads going into the first.
			for ups, olds := byPart[p], partBlocks[p]; ; ups = nil {
				merge := db.mergeable(ups, olds)
				if len(ups) == 0 && len(merge) < 2 {
					break
				}
				if err := db.compactCounted(name, t, p, ups, merge, false); err != nil {
					errs = append(errs, err)
					break
				}
				db.mu.RLock()
				if db.closed { // the block written stays on disk; the store was not changed
					db.mu.RUnlock()
					return errors.Join(errs...)
				}
				olds = olds[:0:0]
				for _, b := range t.blocks {
					if b.Meta.Partition == p {
						olds = append(olds, b)
					}
				}
				db.mu.RUnlock()
			}
		}
	}
	return errors.Join(errs...)
}

// byPartition groups uploads and blocks by their partition and returns
// the latest receipt of each partition.
func byPartition(ups []*Upload, blocks []*storedBlock, part int64) (byPart map[int64][]*Upload, partBlocks map[int64][]*storedBlock, lastReceived map[int64]int64) {
	byPart, partBlocks, lastReceived = map[int64][]*Upload{}, map[int64][]*storedBlock{}, map[int64]int64{}
	for _, u := range ups {
		p := partitionOf(u, part)
		byPart[p] = append(byPart[p], u)
		lastReceived[p] = max(lastReceived[p], u.Received)
	}
	for _, b := range blocks {
		partBlocks[b.Meta.Partition] = append(partBlocks[b.Meta.Partition], b)
		lastReceived[b.Meta.Partition] = max(lastReceived[b.Meta.Partition], b.Meta.Received)
	}
	return byPart, partBlocks, lastReceived
}

// mergeable returns the blocks of a partition to merge with its uploads
// ups: the first run of consecutive blocks that, with the uploads, makes at
// least two parts and whose estimated memory stays within the head's
// budget, so that a partition that had blocks made early (many executors)
// is not merged whole in memory at once. Blocks written before blocks
// recorded their size count as small.
func (db *DB) mergeable(ups []*Upload, blocks []*storedBlock) []*storedBlock {
	var head int64
	for _, u := range ups {
		head += u.memSize
	}
	for i := range blocks {
		size, n := head+blocks[i].Meta.MemSize, 1
		if size > db.opts.HeadBytes {
			continue
		}
		for _, b := range blocks[i+1:] {
			if size+b.Meta.MemSize > db.opts.HeadBytes {
				break
			}
			size += b.Meta.MemSize
			n++
		}
		if n >= 2 || len(ups) > 0 {
			return blocks[i : i+n]
		}
	}
	return nil
}

// compactCounted runs compactPartition, counting it and its time in the
// store's statistics.
func (db *DB) compactCounted(name string, t *tenant, p int64, ups []*Upload, olds []*storedBlock, early bool) error {
	start := time.Now()
	err := db.compactPartition(name, t, p, ups, olds, early)
	db.mu.Lock()
	defer db.mu.Unlock()
	db.compactionTime += time.Since(start)
	if err != nil {
		db.compactionErrors++
		return fmt.Errorf("tenant %q partition %s: %w", name, time.Unix(0, p).UTC().Format(time.RFC3339), err)
	}
	db.compactions++
	return nil
}

// partitionOf returns the start of the partition holding u: by the start of
// its window, or when it was received if it has none.
func partitionOf(u *Upload, part int64) int64 {
	at := u.From
	if at == 0 {
		at = u.Received
	}
	return at - ((at%part)+part)%part
}

// compactPartition writes the uploads ups of partition p into a new block,
// merged with the partition's blocks olds, which it replaces. An early
// block (see compactHead) does not start in the cache.
func (db *DB) compactPartition(name string, t *tenant, p int64, ups []*Upload, olds []*storedBlock, early bool) error {
	oldProfiles, err := db.loadMerged(olds)
	if err != nil {
		return err
	}
	prof, meta := block.Merge(p, blocksOf(olds), oldProfiles, inputs(ups), int64(db.opts.Resolution))
	// The uploads' keys are in the log segments this compaction may delete.
	if err := db.saveKeys(t, ups); err != nil {
		return fmt.Errorf("save the upload keys: %w", err)
	}
	db.mu.Lock()
	seq := t.nextBlock
	t.nextBlock++
	db.mu.Unlock()
	path := filepath.Join(t.dir, block.Name(p, seq))
	written, roll, err := block.Write(path, meta, prof, db.blockEnc, int64(db.opts.Partition))
	if err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("write block: %w", err)
	}
	b := newStoredBlock(written)
	db.attach(b)
	// The newest block is the likeliest to be queried next: its rollup,
	// which most flame graphs read, starts in the cache. Its samples, many
	// times larger, are read when a query needs them. A block made early,
	// to be merged with its partition's others, does not: under a steady
	// stream of uploads those would fill the cache.
	if !early {
		db.cache.Put(blockcache.Key{Path: path, Part: block.PartRollup}, roll)
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	done := map[uint64]bool{}
	for _, u := range ups {
		done[u.ID] = true
	}
	t.dropUploads(func(u *Upload) bool { return done[u.ID] })
	t.blocks = slices.DeleteFunc(t.blocks, func(x *storedBlock) bool { return slices.Contains(olds, x) })
	t.blocks = append(t.blocks, b)
	slices.SortStableFunc(t.blocks, func(x, y *storedBlock) int { return cmp.Compare(x.Meta.Partition, y.Meta.Partition) })
	for _, o := range olds {
		block.Remove(o.Path)
		db.cache.Forget(o.Path)
	}
	t.pruneSegments(db.log)
	db.log.Info("store: compacted", "tenant", name, "partition", time.Unix(0, p).UTC().Format(time.RFC3339),
		"uploads", meta.Uploads, "samples", len(prof.Samples), "mem_bytes", meta.MemSize, "file", filepath.Base(path), "head_over_budget", early)
	return nil
}

// loadMerged reads the samples and series of the blocks a compaction
// merges. They are read straight from disk (or the bucket): going through
// the cache would push out what queries use.
func (db *DB) loadMerged(olds []*storedBlock) ([]*profile.Profile, error) {
	oldProfiles := make([]*profile.Profile, len(olds))
	for i, b := range olds {
		op, err := b.Load(block.PartSamples, db.dec)
		if err != nil {
			return nil, fmt.Errorf("read the block to merge into: %w", err)
		}
		// The series are in a part of their own; blocks written before
		// November 25, 2026 hold them in their samples too (and those
		// written before the series part, there alone).
		if len(op.Series) == 0 && b.Has(block.PartSeries) {
			sp, err := b.Load(block.PartSeries, db.dec)
			if err != nil {
				return nil, fmt.Errorf("read the series of the block to merge into: %w", err)
			}
			op.Series = sp.Series
		}
		oldProfiles[i] = op
	}
	return oldProfiles, nil
}

// dropOld drops uploads and blocks whose data ended before cutoff, and the
// files that held only them.
func (db *DB) dropOld(cutoff int64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, t := range db.tenants {
		t.dropUploads(func(u *Upload) bool { return max(u.Until, u.Received) < cutoff })
		t.blocks = slices.DeleteFunc(t.blocks, func(b *storedBlock) bool {
			if max(b.Meta.Until, b.Meta.Received) >= cutoff {
				return false
			}
			block.Remove(b.Path)
			db.cache.Forget(b.Path)
			return true
		})
		t.pruneSegments(db.log)
	}
}
