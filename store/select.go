package store

import (
	"io"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/blockcache"
)

// Select implements Store. Blocks come first (they hold older
// partitions), then the uploads not compacted yet; with a bucket, the
// bucket's blocks and segments' uploads come before the node's own.
func (db *DB) Select(name string, q Query, fn func(*Upload) error) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	t := db.tenants[name]
	var ups []*Upload
	ims := block.IntMatchers(q.SampleMatchers)
	if db.remote != nil {
		if rt := db.remote.view[name]; rt != nil {
			for _, b := range rt.blocks {
				if b.mayMatch(q, ims) {
					ups = append(ups, b.uploads(q, ims)...)
				}
			}
			ups = append(ups, rt.uploads...)
		}
	}
	if t != nil {
		for _, b := range t.blocks {
			if b.mayMatch(q, ims) {
				ups = append(ups, b.uploads(q, ims)...)
			}
		}
		ups = append(ups, t.uploads...)
	}
	db.mu.RUnlock()
	for _, u := range ups {
		// A head upload's label values are listed only for a query that
		// needs them.
		if !q.Matches(u) || u.head != nil && len(q.SampleMatchers) > 0 && !block.MayHold(u.LabelValues(), q.SampleMatchers) {
			continue
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// attach makes block b's uploads read their parts through the cache.
func (db *DB) attach(b *storedBlock) {
	b.up.load = func(part int) (*profile.Profile, error) {
		switch {
		case part == block.PartTables:
			return db.loadTables(b)
		case (part == block.PartTimeline || part == block.PartThreads) && !b.Has(part):
			return nil, nil // written before blocks had a timeline or thread rollup
		case !b.Has(part):
			part = block.PartSamples // written before blocks had a series part: the samples hold it
		}
		return db.cache.Get(blockcache.Key{Path: b.Path, Part: part}, func() (*profile.Profile, error) { return b.Load(part, db.dec) })
	}
	for i, u := range b.sliceUps {
		u.load = func(part int) (*profile.Profile, error) { return db.loadSlice(b, i, part) }
	}
}

// loadTables reads the tables of a sliced block's samples through the
// cache, without the samples; an unsliced block's samples.
func (db *DB) loadTables(b *storedBlock) (*profile.Profile, error) {
	if len(b.SliceParts) == 0 {
		return b.up.load(block.PartSamples)
	}
	return db.cache.Get(blockcache.Key{Path: b.Path, Part: block.PartSamples, Slice: blockcache.TablesOnly}, func() (*profile.Profile, error) {
		var p *profile.Profile
		err := b.WithReader(func(r io.ReaderAt, _ int64) (err error) {
			p, err = b.DecodePart(r, block.PartSamples, db.dec)
			return err
		})
		return p, err
	})
}

// loadSlice reads part of block b's time slice i through the cache: its
// rollup or samples, or the block's metric points in the time the slice
// stands for.
func (db *DB) loadSlice(b *storedBlock, i, part int) (*profile.Profile, error) {
	var tables *profile.Profile
	var err error
	switch part {
	case block.PartTables:
		return db.loadTables(b)
	case block.PartSeries:
		all, err := b.up.load(block.PartSeries)
		if err != nil {
			return nil, err
		}
		return sliceSeries(all, b.Meta.Slices[i]), nil
	case block.PartThreads:
		return nil, nil // a block's only
	case block.PartTimeline:
		return db.cache.Get(blockcache.Key{Path: b.Path, Part: part, Slice: i + 1}, func() (*profile.Profile, error) {
			all, err := b.up.load(block.PartTimeline)
			if err != nil || all == nil {
				return all, err
			}
			return sliceTimeline(all, b.Meta.Slices[i]), nil
		})
	case block.PartRollup:
		tables, err = b.up.load(block.PartRollup) // the block's rollup: most queries read it anyway
	default:
		tables, err = db.loadTables(b)
	}
	if err != nil {
		return nil, err
	}
	return db.cache.Get(blockcache.Key{Path: b.Path, Part: part, Slice: i + 1}, func() (*profile.Profile, error) {
		var p *profile.Profile
		err := b.WithReader(func(r io.ReaderAt, _ int64) (err error) {
			p, err = b.DecodeSlice(r, i, part, tables, db.dec)
			return err
		})
		return p, err
	})
}

// sliceTimeline returns a copy of timeline p holding its rows in the time
// slice sm stands for: its rows without a time for the untimed samples'
// slice.
func sliceTimeline(p *profile.Profile, sm block.SliceMeta) *profile.Profile {
	cp := *p
	cp.Samples = nil
	for _, s := range p.Samples {
		if sm.Holds(s.Time) {
			cp.Samples = append(cp.Samples, s)
		}
	}
	return &cp
}

// sliceSeries returns a profile holding the points of p's series in the
// time slice sm stands for.
func sliceSeries(p *profile.Profile, sm block.SliceMeta) *profile.Profile {
	out := profile.New()
	for _, sr := range p.Series {
		var pts []profile.Point
		for _, pt := range sr.Points {
			if sm.Holds(pt.Time) {
				pts = append(pts, pt)
			}
		}
		if len(pts) > 0 {
			sr.Points = pts
			out.Series = append(out.Series, sr)
		}
	}
	return out
}
