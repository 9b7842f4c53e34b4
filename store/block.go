package store

import (
	"bytes"
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
	"strings"

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
// A block file holds three parts, each a length, a CRC-32C and the bytes:
// the meta (JSON), the rollup and the samples (zstd-compressed columns).
// Only the meta stays in memory; the rollup and the samples are read when
// a query needs them, through the store's cache.
type block struct {
	path  string
	size  int64 // of the file
	meta  blockMeta
	parts [numParts]part
	up    *Upload // what Select hands out; its profiles load on demand
}

// The parts of a block file after the meta. Blocks written before the
// series part have only the first two.
const (
	partRollup = iota
	partSamples
	partSeries // the uploads' metric series only: GC pauses, CPU load, heap
	numParts
)

// part is where a block part's bytes are in the file.
type part struct {
	off, size int64
	sum       uint32
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
}

// maxMetaValues bounds the values of one label a block meta lists.
const maxMetaValues = 64

// sampleLabels returns the values of each label of p's samples, those of
// labels with more than maxMetaValues values left out.
func sampleLabels(p *profile.Profile) map[string][]string {
	out := map[string][]string{}
	seen := map[profile.Label]bool{}
	add := func(ls profile.Labels) {
		for _, l := range ls {
			vals, listed := out[l.Name]
			if listed && vals == nil || seen[l] {
				continue
			}
			seen[l] = true
			if len(vals) == maxMetaValues {
				out[l.Name] = nil
				continue
			}
			out[l.Name] = append(vals, l.Value)
		}
	}
	add(p.Labels)
	for i := range p.NumLabelSets() {
		add(p.LabelSet(profile.LabelSetID(i)))
	}
	for _, vals := range out {
		slices.Sort(vals)
	}
	return out
}

// blockMagic starts a block file; the digit is the format version.
const blockMagic = "SPBLOCK1"

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

// idRanges compresses ids into sorted [lo, hi] pairs.
func idRanges(ids []uint64) []uint64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	var out []uint64
	for _, id := range ids {
		if n := len(out); n > 0 && id <= out[n-1]+1 {
			out[n-1] = max(out[n-1], id)
			continue
		}
		out = append(out, id, id)
	}
	return out
}

// mayMatch reports whether the block can hold samples q's matchers
// select: not when every upload carried a label and none of its values
// satisfies q's matcher on that label. (Select checks the time range on
// the block's Upload, as for any upload.)
func (b *block) mayMatch(q Query) bool {
	for _, m := range q.Matchers {
		// Only a label every upload carried decides: a label set may
		// carry the name otherwise.
		vals := b.meta.Values[m.Name]
		if b.meta.Carried[m.Name] == b.meta.Uploads && !slices.ContainsFunc(vals, m.Matches) {
			return false
		}
	}
	return true
}

// compactUploads merges ups (and the blocks they join, whose samples are
// oldProfiles) into one block profile, keeping sample times to res.
func compactUploads(partition int64, olds []*block, oldProfiles []*profile.Profile, ups []*Upload, res int64) (*profile.Profile, blockMeta) {
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, Resolution: res, WithinAdd: true})
	// Most samples of a compaction are distinct at a second's resolution:
	// room for them all is made at once.
	n := 0
	for _, op := range oldProfiles {
		n += len(op.Samples)
	}
	for _, u := range ups {
		n += len(u.Profile.Samples)
	}
	m.Grow(n)
	meta := blockMeta{Partition: partition, Values: map[string][]string{}, Carried: map[string]int{}}
	var ids []uint64
	seen := map[string]bool{}
	addValues := func(ls profile.Labels) {
		for _, l := range ls {
			if k := l.Name + "\x00" + l.Value; !seen[k] {
				seen[k] = true
				meta.Values[l.Name] = append(meta.Values[l.Name], l.Value)
			}
		}
	}
	span := func(from, until, received int64) {
		if from != 0 && (meta.From == 0 || from < meta.From) {
			meta.From = from
		}
		meta.Until = max(meta.Until, until)
		meta.Received = max(meta.Received, received)
	}
	for i, b := range olds {
		m.Add(oldProfiles[i])
		for i := 0; i+1 < len(b.meta.IDs); i += 2 {
			for id := b.meta.IDs[i]; id <= b.meta.IDs[i+1]; id++ {
				ids = append(ids, id)
			}
		}
		for name, vals := range b.meta.Values {
			for _, v := range vals {
				addValues(profile.Labels{{Name: name, Value: v}})
			}
		}
		for name, n := range b.meta.Carried {
			meta.Carried[name] += n
		}
		span(b.meta.From, b.meta.Until, b.meta.Received)
		meta.Uploads += b.meta.Uploads
		meta.Bytes += b.meta.Bytes
		meta.Sources = append(meta.Sources, b.meta.Sources...)
		meta.Replaces = append(meta.Replaces, filepath.Base(b.path))
	}
	for _, u := range ups {
		cp := *u.Profile
		cp.Labels = cp.Labels.Merge(u.Labels)
		m.Add(&cp)
		ids = append(ids, u.ID)
		addValues(cp.Labels)
		for _, l := range cp.Labels {
			meta.Carried[l.Name]++
		}
		span(u.From, u.Until, u.Received)
		meta.Uploads++
		meta.Bytes += u.Bytes
		if u.Profile.Source != "" {
			meta.Sources = append(meta.Sources, u.Profile.Source)
		}
	}
	meta.IDs = idRanges(ids)
	slices.Sort(meta.Sources)
	meta.Sources = slices.Compact(meta.Sources)
	p := m.Profile()
	p.Samples = slices.Clip(p.Samples) // MemSize counts the samples kept, not the room made
	p.Warnings = slices.Compact(p.Warnings)
	meta.FirstSample, meta.LastSample = sampleSpan(p)
	meta.MemSize = p.MemSize()
	meta.SampleLabels = sampleLabels(p)
	return p, meta
}

// writeBlock writes a block file atomically (a temporary file, fsynced,
// renamed into place, the directory fsynced) and returns the block, whose
// rollup and samples stay on disk, and the rollup.
func writeBlock(path string, meta blockMeta, p *profile.Profile, enc *zstd.Encoder) (*block, *profile.Profile, error) {
	// JSON rather than gob: gob may allocate without bound on damaged
	// input, and the meta is small.
	mj, err := json.Marshal(&meta)
	if err != nil {
		return nil, nil, fmt.Errorf("encode block meta: %w", err)
	}
	roll := rollup(p)
	rb, err := roll.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	series := profile.New()
	series.Series = p.Series
	sb, err := series.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	b := &block{path: path, meta: meta}
	var buf bytes.Buffer
	buf.WriteString(blockMagic)
	var n [4]byte
	for i, data := range [][]byte{mj, enc.EncodeAll(rb, nil), enc.EncodeAll(pb, nil), enc.EncodeAll(sb, nil)} {
		binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
		buf.Write(n[:])
		sum := crc32.Checksum(data, castagnoli)
		binary.LittleEndian.PutUint32(n[:], sum)
		buf.Write(n[:])
		if i > 0 {
			b.parts[i-1] = part{off: int64(buf.Len()), size: int64(len(data)), sum: sum}
		}
		buf.Write(data)
	}
	b.size = int64(buf.Len())
	tmp := path + ".tmp"
	if err := writeSynced(tmp, buf.Bytes()); err != nil {
		return nil, nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, nil, err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, nil, err
	}
	b.newUpload()
	return b, roll, nil
}

// writeSynced writes data to a new file and fsyncs it.
func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
	if _, err := r.ReadAt(head, 0); err != nil || string(head) != blockMagic {
		return nil, fmt.Errorf("%s: not a sparkprof block (no %q at offset 0)", path, blockMagic)
	}
	b := &block{path: path, size: size}
	off := int64(len(blockMagic))
	var metaPart part
	for i := -1; i < numParts; i++ {
		if i == partSeries && off == size {
			break // written before blocks had a series part: read the samples' instead
		}
		var hdr [8]byte
		if _, err := r.ReadAt(hdr[:], off); err != nil {
			return nil, fmt.Errorf("%s: truncated at offset %d", path, off)
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
	b.newUpload()
	return b, nil
}

// newUpload makes the Upload that stands for b in queries.
func (b *block) newUpload() {
	m := &b.meta
	b.up = &Upload{
		ID: m.maxID(), Received: m.Received, From: m.From, Until: m.Until, Agent: "compacted", Bytes: m.Bytes,
		Sources: m.Sources, Uploads: m.Uploads, FirstSample: m.FirstSample, LastSample: m.LastSample,
	}
	if m.SampleLabels == nil {
		return // written before metas listed sample labels: Values stays nil
	}
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

// decodePart decodes a block's rollup or samples from r.
func (b *block) decodePart(r io.ReaderAt, which int, dec *zstd.Decoder) (*profile.Profile, error) {
	data, err := readPart(b.path, r, b.parts[which])
	if err != nil {
		return nil, err
	}
	raw, err := dec.DecodeAll(data, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: part at offset %d: %w", b.path, b.parts[which].off, err)
	}
	p := new(profile.Profile)
	if err := p.UnmarshalBinary(raw); err != nil {
		return nil, fmt.Errorf("%s: part at offset %d: %w", b.path, b.parts[which].off, err)
	}
	return p, nil
}

// has reports whether b's file has the part: blocks written before the
// series part have none, and their samples hold the series.
func (b *block) has(part int) bool { return b.parts[part].off != 0 }

// load reads a block's rollup, samples or series from its file.
func (b *block) load(which int, dec *zstd.Decoder) (*profile.Profile, error) {

	f, err := os.Open(b.path)
	if errors.Is(err, fs.ErrNotExist) {
		// A compaction or retention removed the block after the query
		// selected it.
		return nil, fmt.Errorf("%w: compaction or retention removed block %s while the query ran; run it again", err, filepath.Base(b.path))
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return b.decodePart(f, which, dec)
}

// RollupDropped are the labels a block's rollup does not keep: those with
// a value per task or thread.
var RollupDropped = []string{profile.LabelTaskID, profile.LabelPartition, profile.LabelThreadName}

// rollup sums the samples of p over time and threads, with the labels in
// RollupDropped removed from their label sets: a whole-app or per-stage
// flame graph of a block then reads one row per stack and label set
// instead of one per sample. It shares p's frames and stacks.
func rollup(p *profile.Profile) *profile.Profile {
	return p.SumOverTime(func(ls profile.Labels) profile.Labels { return ls.Without(RollupDropped...) })
}

// sampleSpan returns the first and last sample time of p; samples without
// a time are left out.
func sampleSpan(p *profile.Profile) (first, last int64) {
	for _, s := range p.Samples {
		if s.Time == 0 {
			continue
		}
		if first == 0 || s.Time < first {
			first = s.Time
		}
		last = max(last, s.Time)
	}
	return first, last
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
			os.Remove(b.path)
			continue
		}
		keep = append(keep, b)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.block.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return keep, nil
}

// blockName names the file of a partition's block; seq orders blocks of
// the same partition.
func blockName(partition int64, seq uint64) string {
	return fmt.Sprintf("%020d-%010d.block", partition, seq)
}

// syncDir makes a directory's entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !strings.Contains(err.Error(), "invalid argument") {
		return err
	}
	return nil
}
