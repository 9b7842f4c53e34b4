package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// A block is a compacted time partition of one tenant: the samples of many
// uploads in one profile, so that frames, stacks, threads and label sets
// are stored once per block instead of once per upload. The profile's
// tables and samples are columns (profile.MarshalBinary), compressed
// together. Upload-level labels that differ between the uploads move into
// the samples' label sets.
//
// A block file holds parts, each a length, a CRC-32C and the bytes: the
// meta (JSON), then the rollup, the samples, the series, the timeline and
// the thread rollup (zstd-compressed columns), then the time slices' (see
// docs/storage-format.md). Only the meta stays in memory; the other parts
// are read when a query needs them, through the store's cache.
type block struct {
	path string
	size int64 // of the file
	// open opens the block's bytes for reading: its file, or its object
	// in a bucket, read by ranges. Nil for a local file at path.
	open func() (blockReader, error)
	// openSamples opens its Parquet samples file (hasLake) as open does
	// the block's bytes. Nil for a local file beside path.
	openSamples func() (blockReader, error)
	meta        blockMeta
	parts       [numParts]part
	slices      []slicePart // where meta.Slices are in the file
	up          *Upload     // what Select hands out; its profiles load on demand
	// sliceUps stand for the slices: Select hands them out instead of up
	// to a query whose range cuts the block.
	sliceUps []*Upload
}

// The parts of a block file after the meta. Blocks written before the
// series part have only the first two, before the timeline the first
// three, before the thread rollup (blockMagic3) the first four.
const (
	partRollup = iota
	partSamples
	partSeries   // the uploads' metric series only: GC pauses, CPU load, heap
	partTimeline // the samples summed over stacks and threads (timeline)
	partThreads  // the samples summed over time per thread (threadRollup)
	numParts

	// partTables is not a part of the file: it asks Upload.load for the
	// tables of a sliced block's samples (Upload.LoadLabelSets).
	partTables = numParts
)

// part is where a block part's bytes are in the file.
type part struct {
	off, size int64
	sum       uint32
}

// holds reports whether time t (Unix ns; 0 for none) is in the time slice
// sm stands for: only 0 for the slice of untimed samples.
func (sm sliceMeta) holds(t int64) bool {
	if sm.First == 0 {
		return t == 0
	}
	return t != 0 && (sm.From == 0 || t >= sm.From) && (sm.Until == 0 || t < sm.Until)
}

// slicePart is where a time slice's parts are in a block file.
type slicePart struct{ rollup, samples part }

// sliceMeta describes a time slice of a block's samples (see
// blockMeta.Slices).
type sliceMeta struct {
	// First and Last bound the slice's sample times; both are 0 for the
	// slice of samples without a time.
	First, Last int64
	// From and Until bound the time the slice stands for, zero where it
	// is open: the timed slices together stand for all time, so that each
	// of the block's metric points is in one (LoadSeries). The slice of
	// untimed samples stands for none.
	From, Until int64 `json:",omitempty"`
	// The sizes and CRC-32C checksums of the slice's rollup and samples
	// parts, which follow each other in the file.
	RollupSize, SamplesSize int64
	RollupSum, SamplesSum   uint32
	// Ranges bounds the values, within the slice, of each label of the
	// block's SampleRanges; a label missing is on none of its samples.
	Ranges map[string][2]int64 `json:",omitempty"`
}

// blockMeta describes a block; it is written at the head of the file.
type blockMeta struct {
	Partition   int64    // start of the time partition (Unix ns)
	From, Until int64    // the uploads' windows
	Received    int64    // latest receipt among the uploads
	IDs         []uint64 // upload ids, as [lo, hi] pairs of ranges
	Uploads     int
	Bytes       int
	Sources     []string            // the uploads' profile sources
	Values      map[string][]string // upload-level label values, for pruning
	Carried     map[string]int      // how many uploads carried each label
	Replaces    []string            // blocks of the same partition merged into this one
	// FirstSample and LastSample bound the samples' times (Unix ns).
	FirstSample, LastSample int64
	// MemSize estimates the memory of the block's samples once read
	// (profile.MemSize), to bound what merging blocks holds; 0 in blocks
	// written before it was recorded.
	MemSize int64 `json:",omitempty"`
	// SampleLabels lists the values of each label the samples carry, so
	// that label queries need not read the samples; a label with more than
	// maxMetaValues values (task ids, say) has none listed (null).
	SampleLabels map[string][]string `json:",omitempty"`
	// SampleRanges bounds the values of each label that has too many to
	// list in SampleLabels and whose values are all integers (task ids):
	// a query for one task skips the blocks, and time slices, whose bounds
	// leave it out.
	SampleRanges map[string][2]int64 `json:",omitempty"`
	// Slices divide the samples of a block written since blocks were
	// sliced (blockMagic2) by time: each slice's samples, and their
	// rollup, are parts of their own after the series part, in the order
	// listed, and the samples part holds only the tables they refer to.
	// A query whose range cuts the block then reads the slices it covers
	// whole from their rollups, and the samples of at most the two it
	// cuts, instead of every sample of the block.
	Slices []sliceMeta `json:",omitempty"`
	// Lake describes the Parquet files that hold the samples of a block
	// written since they were (blockMagic4); its samples part and its
	// slices' samples parts then hold none.
	Lake *lakeMeta `json:",omitempty"`
	// Nodes, for a block compacted in a bucket, lists the uploads it holds
	// by the node that shipped them: upload ids as IDs lists them. The ids
	// of different nodes overlap; a node and an id name one upload.
	Nodes map[string][]uint64 `json:",omitempty"`
}

// slicesPerBlock is how many time slices a block's span is cut into.
const slicesPerBlock = 10

// minSlicedSamples is the fewest samples a block has for them to be
// sliced: a small block is read whole in a few milliseconds, and each
// slice costs a rollup of its own.
var minSlicedSamples = 1 << 14

// blockMagic starts a block file; the digit is the format version.
// blockMagic2 starts one with time slices (blockMeta.Slices), which a
// build that cannot read them refuses instead of reading the tables alone.
// blockMagic3 starts one with a thread rollup part (partThreads), sliced or
// not, which a build that cannot read it refuses instead of taking the
// part for a time slice's. blockMagic4 starts one whose samples are in
// Apache Parquet files beside it (blockMeta.Lake), which a build that
// cannot read them refuses instead of finding no samples.
const (
	blockMagic  = "SPBLOCK1"
	blockMagic2 = "SPBLOCK2"
	blockMagic3 = "SPBLOCK3"
	blockMagic4 = "SPBLOCK4"
)

// contains reports whether upload id is in the block.
func (m *blockMeta) contains(id uint64) bool {
	for i := 0; i+1 < len(m.IDs); i += 2 {
		if id >= m.IDs[i] && id <= m.IDs[i+1] {
			return true
		}
	}
	return false
}

// maxID returns the largest upload id in the block.
func (m *blockMeta) maxID() uint64 {
	var hi uint64
	for i := 1; i < len(m.IDs); i += 2 {
		hi = max(hi, m.IDs[i])
	}
	return hi
}

// locateSlices finds where the parts of b's time slices are, from their
// sizes in the meta: one after the other from off, each after a length
// and a checksum, to the end of the file.
func (b *block) locateSlices(off int64) error {
	b.slices = nil
	next := func(i int, size int64, sum uint32) (part, error) {
		if size < 0 || size > b.size-off-8 {
			return part{}, fmt.Errorf("%s: time slice %d's part at offset %d is %d bytes, the file has %d left", b.path, i, off+8, size, b.size-off-8)
		}
		pt := part{off: off + 8, size: size, sum: sum}
		off = pt.off + size
		return pt, nil
	}
	for i, sm := range b.meta.Slices {
		var sp slicePart
		var err error
		if sp.rollup, err = next(i, sm.RollupSize, sm.RollupSum); err != nil {
			return err
		}
		if sp.samples, err = next(i, sm.SamplesSize, sm.SamplesSum); err != nil {
			return err
		}
		b.slices = append(b.slices, sp)
	}
	if off != b.size {
		return fmt.Errorf("%s: %d bytes after the last part at offset %d; the file is damaged: move it away to start without it", b.path, b.size-off, off)
	}
	return nil
}

// readBlock reads the meta of block file path and where its parts are;
// the parts are checked when they are read.
func readBlock(path string) (*block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return openBlock(path, f, fi.Size())
}

// openBlock reads the meta of block file path, of size bytes, from r.
func openBlock(path string, r io.ReaderAt, size int64) (*block, error) {
	head := make([]byte, len(blockMagic))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: read at offset 0: %w", path, err)
	}
	if !slices.Contains([]string{blockMagic, blockMagic2, blockMagic3, blockMagic4}, string(head)) {
		return nil, fmt.Errorf("%s: not a sparkprof block (no %q, %q, %q or %q at offset 0)", path, blockMagic, blockMagic2, blockMagic3, blockMagic4)
	}
	threads := string(head) == blockMagic3 || string(head) == blockMagic4
	b := &block{path: path, size: size}
	off := int64(len(blockMagic))
	var metaPart part
	for i := -1; i < numParts; i++ {
		if i >= partSeries && off == size || i == partThreads && !threads {
			break // written before blocks had a series, timeline or thread rollup part
		}
		var hdr [8]byte
		if _, err := r.ReadAt(hdr[:], off); errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: truncated at offset %d", path, off)
		} else if err != nil {
			return nil, fmt.Errorf("%s: read at offset %d: %w", path, off, err)
		}
		pt := part{off: off + 8, size: int64(binary.LittleEndian.Uint32(hdr[:])), sum: binary.LittleEndian.Uint32(hdr[4:])}
		if pt.size > size-pt.off {
			return nil, fmt.Errorf("%s: part %d at offset %d is %d bytes, the file has %d left", path, i+1, pt.off, pt.size, size-pt.off)
		}
		if i < 0 {
			metaPart = pt
		} else {
			b.parts[i] = pt
		}
		off = pt.off + pt.size
	}
	mj, err := readPart(path, r, metaPart)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(mj, &b.meta); err != nil {
		return nil, fmt.Errorf("%s: block meta: %w", path, err)
	}
	if !threads && (string(head) == blockMagic2) != (len(b.meta.Slices) > 0) {
		return nil, fmt.Errorf("%s: block meta lists %d time slices under %q", path, len(b.meta.Slices), head)
	}
	if (string(head) == blockMagic4) != (b.meta.Lake != nil) {
		return nil, fmt.Errorf("%s: block meta lists Parquet files under %q, or none under %q", path, head, blockMagic4)
	}
	if len(b.meta.Slices) > 0 {
		if err := b.locateSlices(off); err != nil {
			return nil, err
		}
	}
	b.newUpload()
	return b, nil
}

// newUpload makes the Uploads that stand for b and its time slices in
// queries.
func (b *block) newUpload() {
	m := &b.meta
	b.up = &Upload{
		ID: m.maxID(), Received: m.Received, From: m.From, Until: m.Until, Agent: "compacted", Bytes: m.Bytes,
		Sources: m.Sources, Uploads: m.Uploads, FirstSample: m.FirstSample, LastSample: m.LastSample,
	}
	if m.SampleLabels != nil { // else written before metas listed sample labels: Values stays nil
		vals := make(map[string][]string, len(m.SampleLabels)+len(m.Values))
		for name, vs := range m.Values {
			vals[name] = vs
		}
		for name, vs := range m.SampleLabels {
			switch old, ok := vals[name]; {
			case !ok:
				vals[name] = vs
			case vs == nil:
				vals[name] = nil // too many to list
			default:
				u := slices.Concat(old, vs)
				slices.Sort(u)
				vals[name] = slices.Compact(u)
			}
		}
		b.up.Values = vals
	}
	b.up.Bounds = m.SampleRanges
	b.sliceUps = nil
	for _, sm := range m.Slices {
		u := *b.up
		u.Bounds = nil
		for name := range m.SampleRanges {
			r, ok := sm.Ranges[name]
			if !ok {
				r = [2]int64{1, 0} // on none of the slice's samples
			}
			if u.Bounds == nil {
				u.Bounds = map[string][2]int64{}
			}
			u.Bounds[name] = r
		}
		u.Bytes = 0 // the block's
		u.FirstSample, u.LastSample = sm.First, sm.Last
		if sm.First != 0 {
			u.From, u.Until = min(m.From, sm.First), max(m.Until, sm.Last)
			if sm.From != 0 {
				u.From = sm.From
			}
			if sm.Until != 0 {
				u.Until = sm.Until - 1 // Until is inclusive in Query.Matches
			}
		}
		b.sliceUps = append(b.sliceUps, &u)
	}
	b.up.slices = b.sliceUps
}

// uploads returns the Uploads that stand for b in a query over q's range
// whose SampleMatchers are ims: b's when the range covers its samples and
// ims leave out none of its time slices, else those of its time slices
// ims do not leave out (Select leaves out those outside the range).
func (b *block) uploads(q Query, ims []intMatcher) []*Upload {
	if len(b.sliceUps) == 0 {
		return []*Upload{b.up}
	}
	out := make([]*Upload, 0, len(b.sliceUps))
	for i, sm := range b.meta.Slices {
		if !slices.ContainsFunc(ims, func(im intMatcher) bool { return !im.mayMatch(b.meta.SampleRanges, sm.Ranges) }) {
			out = append(out, b.sliceUps[i])
		}
	}
	covers := (q.From == 0 || q.From <= b.meta.FirstSample) && (q.Until == 0 || q.Until > b.meta.LastSample)
	if covers && len(out) == len(b.sliceUps) {
		return []*Upload{b.up}
	}
	return out
}

// readPart reads a part of block file path and checks its checksum.
func readPart(path string, r io.ReaderAt, pt part) ([]byte, error) {
	data := make([]byte, pt.size)
	if _, err := r.ReadAt(data, pt.off); err != nil {
		return nil, fmt.Errorf("%s: read %d bytes at offset %d: %w", path, pt.size, pt.off, err)
	}
	if crc32.Checksum(data, castagnoli) != pt.sum {
		return nil, fmt.Errorf("%s: checksum mismatch in the part at offset %d; the file is damaged: move it away to query without it", path, pt.off)
	}
	return data, nil
}

// decompress reads part pt of b's file from r, checks it and decompresses
// it.
func (b *block) decompress(r io.ReaderAt, pt part, dec *zstd.Decoder) ([]byte, error) {
	data, err := readPart(b.path, r, pt)
	if err != nil {
		return nil, err
	}
	raw, err := dec.DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: part at offset %d: %w", b.path, pt.off, err)
	}
	return raw, nil
}

// decodePart decodes a block's rollup, samples or series from r as
// stored: a sliced block's samples part holds only their tables.
func (b *block) decodePart(r io.ReaderAt, which int, dec *zstd.Decoder) (*profile.Profile, error) {
	raw, err := b.decompress(r, b.parts[which], dec)
	if err != nil {
		return nil, err
	}
	p := new(profile.Profile)
	if err := p.UnmarshalBinary(raw); err != nil {
		return nil, fmt.Errorf("%s: part at offset %d: %w", b.path, b.parts[which].off, err)
	}
	return p, nil
}

// decodeSlice decodes time slice i's rollup or samples (which) from r into
// a copy of tables, the block's rollup or the tables of its samples.
func (b *block) decodeSlice(r io.ReaderAt, i, which int, tables *profile.Profile, dec *zstd.Decoder) (*profile.Profile, error) {
	if which == partSamples && b.hasLake() {
		return b.readLake(i, tables)
	}
	pt := b.slices[i].samples
	if which == partRollup {
		pt = b.slices[i].rollup
	}
	raw, err := b.decompress(r, pt, dec)
	if err != nil {
		return nil, err
	}
	p, err := tables.WithSamples(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: time slice %d at offset %d: %w", b.path, i, pt.off, err)
	}
	return p, nil
}

// decode decodes a block's rollup, samples or series from r: a sliced
// block's samples are those of all its slices.
func (b *block) decode(r io.ReaderAt, which int, dec *zstd.Decoder) (*profile.Profile, error) {
	p, err := b.decodePart(r, which, dec)
	if err != nil || which != partSamples {
		return p, err
	}
	if b.hasLake() {
		return b.readLake(-1, p)
	}
	if len(b.slices) == 0 {
		return p, nil
	}
	var all []profile.Sample
	for i := range b.slices {
		sp, err := b.decodeSlice(r, i, partSamples, p, dec)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = make([]profile.Sample, 0, len(sp.Samples)*len(b.slices))
		}
		all = append(all, sp.Samples...)
	}
	p.Samples = slices.Clip(all)
	return p, nil
}

// has reports whether b's file has the part: blocks written before the
// series part have none, and their samples hold the series; a block whose
// thread rollup would not have saved reading its samples has an empty one.
func (b *block) has(part int) bool { return b.parts[part].size != 0 }

// load reads a block's rollup, samples or series from its bytes (decode).
func (b *block) load(which int, dec *zstd.Decoder) (*profile.Profile, error) {
	var p *profile.Profile
	err := b.withReader(func(r io.ReaderAt, _ int64) (err error) {
		p, err = b.decode(r, which, dec)
		return err
	})
	return p, err
}

// blockReader reads a block's bytes: a local file, or an object in a
// bucket read by ranges. A decoder of blocks reads through it alone.
type blockReader interface {
	io.ReaderAt
	io.Closer
}

// withReader calls fn with a reader of b's bytes, b.size of them.
func (b *block) withReader(fn func(r io.ReaderAt, size int64) error) error {
	open := b.open
	if open == nil {
		open = func() (blockReader, error) { return os.Open(b.path) }
	}
	r, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		// A compaction or retention removed the block after the query
		// selected it.
		return fmt.Errorf("%w: compaction or retention removed block %s while the query ran; run it again", err, filepath.Base(b.path))
	}
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r, b.size)
}

// loadBlocks reads the metas of a tenant's block files. A block that
// another replaces (a compaction that crashed before deleting its inputs)
// is removed.
func loadBlocks(dir string) ([]*block, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.block"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var blocks []*block
	var errs []error
	replaced := map[string]bool{}
	for _, path := range paths {
		b, err := readBlock(path)
		if err == nil && b.hasLake() {
			err = b.checkLake(localSize)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w; move the file away to start without it", err))
			continue
		}
		for _, r := range b.meta.Replaces {
			replaced[r] = true
		}
		blocks = append(blocks, b)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	keep := blocks[:0]
	for _, b := range blocks {
		if replaced[filepath.Base(b.path)] {
			removeBlock(b.path)
			continue
		}
		keep = append(keep, b)
	}
	removeOrphans(dir)
	return keep, nil
}

// blockName names the file of a partition's block; seq orders blocks of
// the same partition.
func blockName(partition int64, seq uint64) string {
	return fmt.Sprintf("%020d-%010d.block", partition, seq)
}
