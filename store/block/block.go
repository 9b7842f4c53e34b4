// Package block writes and reads the store's blocks: a tenant's uploads of
// one time partition compacted into one profile, its meta kept in memory
// and its parts (rollups, samples, series, timeline, time slices) read
// when a query needs them (docs/storage-format.md).
package block

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
type Block struct {
	Path string
	Size int64 // of the file
	// Open opens the block's bytes for reading: its file, or its object
	// in a bucket, read by ranges. Nil for a local file at Path.
	Open func() (Reader, error)
	// OpenSamples opens its Parquet samples file (HasLake) as Open does
	// the block's bytes. Nil for a local file beside Path.
	OpenSamples func() (Reader, error)
	Meta        Meta
	Parts       [NumParts]Part
	SliceParts  []SlicePart // where Meta.Slices are in the file
}

// The parts of a block file after the meta. Blocks written before the
// series part have only the first two, before the timeline the first
// three, before the thread rollup (Magic3) the first four.
const (
	PartRollup = iota
	PartSamples
	PartSeries   // the uploads' metric series only: GC pauses, CPU load, heap
	PartTimeline // the samples summed over stacks and threads (timeline)
	PartThreads  // the samples summed over time per thread (ThreadRollup)
	NumParts

	// PartTables is not a part of the file: it asks Upload.load for the
	// tables of a sliced block's samples (Upload.LoadLabelSets).
	PartTables = NumParts
)

// castagnoli is the CRC-32C table of the parts' checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Part is where a block part's bytes are in the file.
type Part struct {
	Off, Size int64
	Sum       uint32
}

// Holds reports whether time t (Unix ns; 0 for none) is in the time slice
// sm stands for: only 0 for the slice of untimed samples.
func (sm SliceMeta) Holds(t int64) bool {
	if sm.First == 0 {
		return t == 0
	}
	return t != 0 && (sm.From == 0 || t >= sm.From) && (sm.Until == 0 || t < sm.Until)
}

// SlicePart is where a time slice's parts are in a block file.
type SlicePart struct{ Rollup, Samples Part }

// SliceMeta describes a time slice of a block's samples (see
// Meta.Slices).
type SliceMeta struct {
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

// Meta describes a block; it is written at the head of the file.
type Meta struct {
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
	// sliced (Magic2) by time: each slice's samples, and their
	// rollup, are parts of their own after the series part, in the order
	// listed, and the samples part holds only the tables they refer to.
	// A query whose range cuts the block then reads the slices it covers
	// whole from their rollups, and the samples of at most the two it
	// cuts, instead of every sample of the block.
	Slices []SliceMeta `json:",omitempty"`
	// Lake describes the Parquet files that hold the samples of a block
	// written since they were (Magic4); its samples part and its
	// slices' samples parts then hold none.
	Lake *LakeMeta `json:",omitempty"`
	// Nodes, for a block compacted in a bucket, lists the uploads it holds
	// by the node that shipped them: upload ids as IDs lists them. The ids
	// of different nodes overlap; a node and an id name one upload.
	Nodes map[string][]uint64 `json:",omitempty"`
}

// SlicesPerBlock is how many time slices a block's span is cut into.
const SlicesPerBlock = 10

// MinSlicedSamples is the fewest samples a block has for them to be
// sliced: a small block is read whole in a few milliseconds, and each
// slice costs a rollup of its own.
var MinSlicedSamples = 1 << 14

// Magic starts a block file; the digit is the format version.
// Magic2 starts one with time slices (Meta.Slices), which a
// build that cannot read them refuses instead of reading the tables alone.
// Magic3 starts one with a thread rollup part (PartThreads), sliced or
// not, which a build that cannot read it refuses instead of taking the
// part for a time slice's. Magic4 starts one whose samples are in
// Apache Parquet files beside it (Meta.Lake), which a build that
// cannot read them refuses instead of finding no samples.
const (
	Magic  = "SPBLOCK1"
	Magic2 = "SPBLOCK2"
	Magic3 = "SPBLOCK3"
	Magic4 = "SPBLOCK4"
)

// Contains reports whether upload id is in the block.
func (m *Meta) Contains(id uint64) bool {
	for i := 0; i+1 < len(m.IDs); i += 2 {
		if id >= m.IDs[i] && id <= m.IDs[i+1] {
			return true
		}
	}
	return false
}

// MaxID returns the largest upload id in the block.
func (m *Meta) MaxID() uint64 {
	var hi uint64
	for i := 1; i < len(m.IDs); i += 2 {
		hi = max(hi, m.IDs[i])
	}
	return hi
}

// locateSlices finds where the parts of b's time slices are, from their
// sizes in the meta: one after the other from off, each after a length
// and a checksum, to the end of the file.
func (b *Block) locateSlices(off int64) error {
	b.SliceParts = nil
	next := func(i int, size int64, sum uint32) (Part, error) {
		if size < 0 || size > b.Size-off-8 {
			return Part{}, fmt.Errorf("%s: time slice %d's part at offset %d is %d bytes, the file has %d left", b.Path, i, off+8, size, b.Size-off-8)
		}
		pt := Part{Off: off + 8, Size: size, Sum: sum}
		off = pt.Off + size
		return pt, nil
	}
	for i, sm := range b.Meta.Slices {
		var sp SlicePart
		var err error
		if sp.Rollup, err = next(i, sm.RollupSize, sm.RollupSum); err != nil {
			return err
		}
		if sp.Samples, err = next(i, sm.SamplesSize, sm.SamplesSum); err != nil {
			return err
		}
		b.SliceParts = append(b.SliceParts, sp)
	}
	if off != b.Size {
		return fmt.Errorf("%s: %d bytes after the last part at offset %d; the file is damaged: move it away to start without it", b.Path, b.Size-off, off)
	}
	return nil
}

// Read reads the meta of block file path and where its parts are;
// the parts are checked when they are read.
func Read(path string) (*Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return Open(path, f, fi.Size())
}

// Open reads the meta of block file path, of size bytes, from r.
func Open(path string, r io.ReaderAt, size int64) (*Block, error) {
	head := make([]byte, len(Magic))
	if _, err := r.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: read at offset 0: %w", path, err)
	}
	if !slices.Contains([]string{Magic, Magic2, Magic3, Magic4}, string(head)) {
		return nil, fmt.Errorf("%s: not a sparkprof block (no %q, %q, %q or %q at offset 0)", path, Magic, Magic2, Magic3, Magic4)
	}
	threads := string(head) == Magic3 || string(head) == Magic4
	b := &Block{Path: path, Size: size}
	off := int64(len(Magic))
	var metaPart Part
	for i := -1; i < NumParts; i++ {
		if i >= PartSeries && off == size || i == PartThreads && !threads {
			break // written before blocks had a series, timeline or thread rollup part
		}
		var hdr [8]byte
		if _, err := r.ReadAt(hdr[:], off); errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: truncated at offset %d", path, off)
		} else if err != nil {
			return nil, fmt.Errorf("%s: read at offset %d: %w", path, off, err)
		}
		pt := Part{Off: off + 8, Size: int64(binary.LittleEndian.Uint32(hdr[:])), Sum: binary.LittleEndian.Uint32(hdr[4:])}
		if pt.Size > size-pt.Off {
			return nil, fmt.Errorf("%s: part %d at offset %d is %d bytes, the file has %d left", path, i+1, pt.Off, pt.Size, size-pt.Off)
		}
		if i < 0 {
			metaPart = pt
		} else {
			b.Parts[i] = pt
		}
		off = pt.Off + pt.Size
	}
	mj, err := readPart(path, r, metaPart)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(mj, &b.Meta); err != nil {
		return nil, fmt.Errorf("%s: block meta: %w", path, err)
	}
	if !threads && (string(head) == Magic2) != (len(b.Meta.Slices) > 0) {
		return nil, fmt.Errorf("%s: block meta lists %d time slices under %q", path, len(b.Meta.Slices), head)
	}
	if (string(head) == Magic4) != (b.Meta.Lake != nil) {
		return nil, fmt.Errorf("%s: block meta lists Parquet files under %q, or none under %q", path, head, Magic4)
	}
	if len(b.Meta.Slices) > 0 {
		if err := b.locateSlices(off); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// readPart reads a part of block file path and checks its checksum.
func readPart(path string, r io.ReaderAt, pt Part) ([]byte, error) {
	data := make([]byte, pt.Size)
	if _, err := r.ReadAt(data, pt.Off); err != nil {
		return nil, fmt.Errorf("%s: read %d bytes at offset %d: %w", path, pt.Size, pt.Off, err)
	}
	if crc32.Checksum(data, castagnoli) != pt.Sum {
		return nil, fmt.Errorf("%s: checksum mismatch in the part at offset %d; the file is damaged: move it away to query without it", path, pt.Off)
	}
	return data, nil
}

// decompress reads part pt of b's file from r, checks it and decompresses
// it.
func (b *Block) decompress(r io.ReaderAt, pt Part, dec *zstd.Decoder) ([]byte, error) {
	data, err := readPart(b.Path, r, pt)
	if err != nil {
		return nil, err
	}
	raw, err := dec.DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: part at offset %d: %w", b.Path, pt.Off, err)
	}
	return raw, nil
}

// DecodePart decodes a block's rollup, samples or series from r as
// stored: a sliced block's samples part holds only their tables.
func (b *Block) DecodePart(r io.ReaderAt, which int, dec *zstd.Decoder) (*profile.Profile, error) {
	raw, err := b.decompress(r, b.Parts[which], dec)
	if err != nil {
		return nil, err
	}
	p := new(profile.Profile)
	if err := p.UnmarshalBinary(raw); err != nil {
		return nil, fmt.Errorf("%s: part at offset %d: %w", b.Path, b.Parts[which].Off, err)
	}
	return p, nil
}

// DecodeSlice decodes time slice i's rollup or samples (which) from r into
// a copy of tables, the block's rollup or the tables of its samples.
func (b *Block) DecodeSlice(r io.ReaderAt, i, which int, tables *profile.Profile, dec *zstd.Decoder) (*profile.Profile, error) {
	if which == PartSamples && b.HasLake() {
		return b.ReadLake(i, tables)
	}
	pt := b.SliceParts[i].Samples
	if which == PartRollup {
		pt = b.SliceParts[i].Rollup
	}
	raw, err := b.decompress(r, pt, dec)
	if err != nil {
		return nil, err
	}
	p, err := tables.WithSamples(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: time slice %d at offset %d: %w", b.Path, i, pt.Off, err)
	}
	return p, nil
}

// Decode decodes a block's rollup, samples or series from r: a sliced
// block's samples are those of all its slices.
func (b *Block) Decode(r io.ReaderAt, which int, dec *zstd.Decoder) (*profile.Profile, error) {
	p, err := b.DecodePart(r, which, dec)
	if err != nil || which != PartSamples {
		return p, err
	}
	if b.HasLake() {
		return b.ReadLake(-1, p)
	}
	if len(b.SliceParts) == 0 {
		return p, nil
	}
	var all []profile.Sample
	for i := range b.SliceParts {
		sp, err := b.DecodeSlice(r, i, PartSamples, p, dec)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = make([]profile.Sample, 0, len(sp.Samples)*len(b.SliceParts))
		}
		all = append(all, sp.Samples...)
	}
	p.Samples = slices.Clip(all)
	return p, nil
}

// Has reports whether b's file has the part: blocks written before the
// series part have none, and their samples hold the series; a block whose
// thread rollup would not have saved reading its samples has an empty one.
func (b *Block) Has(part int) bool { return b.Parts[part].Size != 0 }

// Load reads a block's rollup, samples or series from its bytes (decode).
func (b *Block) Load(which int, dec *zstd.Decoder) (*profile.Profile, error) {
	var p *profile.Profile
	err := b.WithReader(func(r io.ReaderAt, _ int64) (err error) {
		p, err = b.Decode(r, which, dec)
		return err
	})
	return p, err
}

// Reader reads a block's bytes: a local file, or an object in a
// bucket read by ranges. A decoder of blocks reads through it alone.
type Reader interface {
	io.ReaderAt
	io.Closer
}

// WithReader calls fn with a reader of b's bytes, b.Size of them.
func (b *Block) WithReader(fn func(r io.ReaderAt, size int64) error) error {
	open := b.Open
	if open == nil {
		open = func() (Reader, error) { return os.Open(b.Path) }
	}
	r, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		// A compaction or retention removed the block after the query
		// selected it.
		return fmt.Errorf("%w: compaction or retention removed block %s while the query ran; run it again", err, filepath.Base(b.Path))
	}
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r, b.Size)
}

// LoadAll reads the metas of a tenant's block files. A block that
// another replaces (a compaction that crashed before deleting its inputs)
// is removed.
func LoadAll(dir string) ([]*Block, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.block"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var blocks []*Block
	var errs []error
	replaced := map[string]bool{}
	for _, path := range paths {
		b, err := Read(path)
		if err == nil && b.HasLake() {
			err = b.CheckLake(LocalSize)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%w; move the file away to start without it", err))
			continue
		}
		for _, r := range b.Meta.Replaces {
			replaced[r] = true
		}
		blocks = append(blocks, b)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	keep := blocks[:0]
	for _, b := range blocks {
		if replaced[filepath.Base(b.Path)] {
			Remove(b.Path)
			continue
		}
		keep = append(keep, b)
	}
	RemoveOrphans(dir)
	return keep, nil
}

// Name names the file of a partition's block; seq orders blocks of
// the same partition.
func Name(partition int64, seq uint64) string {
	return fmt.Sprintf("%020d-%010d.block", partition, seq)
}
