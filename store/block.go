package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
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
type block struct {
	path string
	meta blockMeta
	up   *Upload // what Select hands out
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

// compactUploads merges ups (and the blocks they join) into one block
// profile, keeping sample times to res.
func compactUploads(partition int64, olds []*block, ups []*Upload, res int64) (*profile.Profile, blockMeta) {
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, Resolution: res})
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
	for _, b := range olds {
		m.Add(b.up.Profile)
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
	p.Warnings = slices.Compact(p.Warnings)
	return p, meta
}

// writeBlock writes a block file atomically: a temporary file, fsynced,
// renamed into place, the directory fsynced.
func writeBlock(path string, meta blockMeta, p *profile.Profile, enc *zstd.Encoder) error {
	// JSON rather than gob: gob may allocate without bound on damaged
	// input, and the meta is small.
	mj, err := json.Marshal(&meta)
	if err != nil {
		return fmt.Errorf("encode block meta: %w", err)
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	body := enc.EncodeAll(pb, nil)
	var buf bytes.Buffer
	buf.WriteString(blockMagic)
	var n [4]byte
	for _, part := range [][]byte{mj, body} {
		binary.LittleEndian.PutUint32(n[:], uint32(len(part)))
		buf.Write(n[:])
		binary.LittleEndian.PutUint32(n[:], crc32.Checksum(part, castagnoli))
		buf.Write(n[:])
		buf.Write(part)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// readBlock reads a block file written by writeBlock.
func readBlock(path string, dec *zstd.Decoder) (*block, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeBlock(path, data, dec)
}

// decodeBlock decodes the contents of block file path.
func decodeBlock(path string, data []byte, dec *zstd.Decoder) (*block, error) {
	if !bytes.HasPrefix(data, []byte(blockMagic)) {
		return nil, fmt.Errorf("%s: not a sparkprof block (no %q at offset 0)", path, blockMagic)
	}
	off := len(blockMagic)
	var parts [2][]byte
	for i := range parts {
		if len(data)-off < 8 {
			return nil, fmt.Errorf("%s: truncated at offset %d", path, off)
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		off += 8
		if n > len(data)-off {
			return nil, fmt.Errorf("%s: part %d at offset %d is %d bytes, the file has %d left", path, i, off, n, len(data)-off)
		}
		parts[i] = data[off : off+n]
		if crc32.Checksum(parts[i], castagnoli) != sum {
			return nil, fmt.Errorf("%s: checksum mismatch in part %d at offset %d", path, i, off)
		}
		off += n
	}
	var meta blockMeta
	if err := json.Unmarshal(parts[0], &meta); err != nil {
		return nil, fmt.Errorf("%s: block meta: %w", path, err)
	}
	raw, err := dec.DecodeAll(parts[1], nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	p := new(profile.Profile)
	if err := p.UnmarshalBinary(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return newBlock(path, meta, p), nil
}

func newBlock(path string, meta blockMeta, p *profile.Profile) *block {
	b := &block{path: path, meta: meta, up: &Upload{
		ID: meta.maxID(), Received: meta.Received, From: meta.From, Until: meta.Until,
		Agent: "compacted", Bytes: meta.Bytes, Profile: p, Sources: meta.Sources, Uploads: meta.Uploads,
		Rollup: rollup(p),
	}}
	b.up.FirstSample, b.up.LastSample = sampleSpan(p)
	return b
}

// RollupDropped are the labels a block's rollup does not keep: those with
// a value per task or thread.
var RollupDropped = []string{profile.LabelTaskID, profile.LabelPartition, profile.LabelThreadName}

// rollup sums the samples of p over time and threads, with the labels in
// RollupDropped removed from their label sets: a whole-app or per-stage
// flame graph of a block then reads one row per stack and label set
// instead of one per sample.
func rollup(p *profile.Profile) *profile.Profile {
	cp := *p
	cp.OwnLabelSets()
	n := cp.NumLabelSets()
	coarse := make([]profile.LabelSetID, n)
	for i := range n {
		coarse[i] = cp.AddLabels(cp.LabelSet(profile.LabelSetID(i)).Without(RollupDropped...))
	}
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, DropThreads: true})
	m.AddFunc(&cp, func(s *profile.Sample) bool {
		s.Labels = coarse[s.Labels]
		return true
	})
	r := m.Profile()
	r.Series, r.Warnings = nil, nil
	return r
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

// loadBlocks reads a tenant's block files. A block that another replaces
// (a compaction that crashed before deleting its inputs) is removed.
func loadBlocks(dir string, dec *zstd.Decoder) ([]*block, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.block"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var blocks []*block
	var errs []error
	replaced := map[string]bool{}
	for _, path := range paths {
		b, err := readBlock(path, dec)
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
