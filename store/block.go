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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
	path   string
	size   int64 // of the file
	meta   blockMeta
	parts  [numParts]part
	slices []slicePart // where meta.Slices are in the file
	up     *Upload     // what Select hands out; its profiles load on demand
	// sliceUps stand for the slices: Select hands them out instead of up
	// to a query whose range cuts the block.
	sliceUps []*Upload
}

// The parts of a block file after the meta. Blocks written before the
// series part have only the first two, before the timeline the first
// three.
const (
	partRollup = iota
	partSamples
	partSeries   // the uploads' metric series only: GC pauses, CPU load, heap
	partTimeline // the samples summed over stacks and threads (timeline)
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
}

// slicesPerBlock is how many time slices a block's span is cut into.
const slicesPerBlock = 10

// minSlicedSamples is the fewest samples a block has for them to be
// sliced: a small block is read whole in a few milliseconds, and each
// slice costs a rollup of its own.
var minSlicedSamples = 1 << 14

// maxMetaValues bounds the values of one label a block meta lists.
const maxMetaValues = 64

// sampleLabels returns the values of each label of p's samples, with the
// labels extra that apply to all of them, those of labels with more than
// maxMetaValues values left out (nil).
func sampleLabels(p *profile.Profile, extra profile.Labels) map[string][]string {
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
	add(extra)
	add(p.Labels)
	// The sets the samples use: a profile may hold others (an upload's
	// decoder makes sets for samples it then drops).
	used := make([]bool, p.NumLabelSets())
	for _, smp := range p.Samples {
		if !used[smp.Labels] {
			used[smp.Labels] = true
			add(p.LabelSet(smp.Labels))
		}
	}
	for _, vals := range out {
		slices.Sort(vals)
	}
	return out
}

// intRanges returns the least and greatest value of each label named in
// names over the label sets of p's samples given (and p's labels), for
// the labels whose values there are all integers; a label on none of the
// samples is left out.
func intRanges(p *profile.Profile, samples []profile.Sample, names []string) map[string][2]int64 {
	if len(names) == 0 {
		return nil
	}
	used := make([]bool, p.NumLabelSets())
	for _, s := range samples {
		used[s.Labels] = true
	}
	out := map[string][2]int64{}
	bad := map[string]bool{}
	add := func(ls profile.Labels) {
		for _, l := range ls {
			if !slices.Contains(names, l.Name) || bad[l.Name] {
				continue
			}
			v, err := strconv.ParseInt(l.Value, 10, 64)
			if err != nil {
				bad[l.Name] = true
				delete(out, l.Name)
				continue
			}
			r, ok := out[l.Name]
			if !ok {
				r = [2]int64{v, v}
			}
			out[l.Name] = [2]int64{min(r[0], v), max(r[1], v)}
		}
	}
	if len(samples) > 0 {
		add(p.Labels)
	}
	for id, u := range used {
		if u {
			add(p.LabelSet(profile.LabelSetID(id)))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// unlisted returns the labels of SampleLabels sl with too many values to
// list.
func unlisted(sl map[string][]string) []string {
	var out []string
	for name, vals := range sl {
		if vals == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// intMatcher is a matcher that only integers listed can satisfy, on a
// label with integer values.
type intMatcher struct {
	name   string
	values []int64 // sorted
}

// intMatchers returns the matchers of ms that bounds of integer values
// can decide: an equality, or literal alternatives, that does not match
// "" (which a sample without the label has). A literal that is not an
// integer matches none of the values of a label with bounds.
func intMatchers(ms []profile.Matcher) []intMatcher {
	var out []intMatcher
	for _, m := range ms {
		lits, ok := m.Literals()
		if !ok || slices.Contains(lits, "") {
			continue
		}
		im := intMatcher{name: m.Name}
		for _, l := range lits {
			if v, err := strconv.ParseInt(l, 10, 64); err == nil {
				im.values = append(im.values, v)
			}
		}
		slices.Sort(im.values)
		out = append(out, im)
	}
	return out
}

// mayMatch reports whether a value im matches can be among values bounded
// by ranges, which bound the labels of names; a label of names missing
// from ranges has no value.
func (im intMatcher) mayMatch(names, ranges map[string][2]int64) bool {
	if _, bounded := names[im.name]; !bounded {
		return true
	}
	r, ok := ranges[im.name]
	if !ok {
		return false
	}
	i, _ := slices.BinarySearch(im.values, r[0])
	return i < len(im.values) && im.values[i] <= r[1]
}

// blockMagic starts a block file; the digit is the format version.
// blockMagic2 starts one with time slices (blockMeta.Slices), which a
// build that cannot read them refuses instead of reading the tables alone.
const (
	blockMagic  = "SPBLOCK1"
	blockMagic2 = "SPBLOCK2"
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
// satisfies q's matcher on that label, nor when the bounds of a label's
// values leave out every value one of ims (q's SampleMatchers) matches.
// (Select checks the time range on the block's Upload, as for any
// upload.)
func (b *block) mayMatch(q Query, ims []intMatcher) bool {
	for _, im := range ims {
		if !im.mayMatch(b.meta.SampleRanges, b.meta.SampleRanges) {
			return false
		}
	}
	for _, m := range q.Matchers {
		// Only a label every upload carried decides: a label set may
		// carry the name otherwise.
		vals := b.meta.Values[m.Name]
		if b.meta.Carried[m.Name] == b.meta.Uploads && !slices.ContainsFunc(vals, m.Matches) {
			return false
		}
	}
	return mayHold(b.up.Values, q.SampleMatchers)
}

// mayHold reports whether a sample whose labels take the values listed in
// values (Upload.Values: by label name; nil for a label with too many to
// list) can satisfy every matcher of ms. A label values does not name is
// on no sample, whose value is then "". Unknown values (nil) decide
// nothing.
func mayHold(values map[string][]string, ms []profile.Matcher) bool {
	if values == nil {
		return true
	}
	for _, m := range ms {
		vals, carried := values[m.Name]
		switch {
		case m.Matches(""): // a sample without the label matches
		case !carried:
			return false
		case vals != nil && !slices.ContainsFunc(vals, m.Matches):
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
	meta.FirstSample, meta.LastSample = sampleSpan(p.Samples)
	meta.MemSize = p.MemSize()
	meta.SampleLabels = sampleLabels(p, nil)
	meta.SampleRanges = intRanges(p, p.Samples, unlisted(meta.SampleLabels))
	return p, meta
}

// writeBlock writes a block file atomically (a temporary file, fsynced,
// renamed into place, the directory fsynced) and returns the block, whose
// rollup and samples stay on disk, and the rollup. A block of at least
// minSlicedSamples samples is cut into time slices of its partition's
// span (the block span), each with a rollup of its own.
func writeBlock(path string, meta blockMeta, p *profile.Profile, enc *zstd.Encoder, span int64) (*block, *profile.Profile, error) {
	// The rollup's map of label sets serves the slices' rollups and the
	// timeline, which drop the same labels: each set is relabelled once.
	roll, labels := p.SumOverTimeMap(withoutPerTask)
	// The samples part holds the tables every slice query decodes first;
	// the series have a part of their own.
	samples := *p
	samples.Series = nil
	var sliced [][]byte // each slice's rollup and samples, compressed
	if len(p.Samples) >= minSlicedSamples && span > 0 && meta.FirstSample != 0 {
		sls := timeSlices(p, labels, meta.Partition, span/slicesPerBlock)
		if sls != nil {
			samples.Samples = nil
		}
		for _, sl := range sls {
			r := enc.EncodeAll(profile.AppendSamples(nil, sl.rollup), nil)
			s := enc.EncodeAll(profile.AppendSamples(nil, sl.samples), nil)
			meta.Slices = append(meta.Slices, sliceMeta{First: sl.first, Last: sl.last, From: sl.from, Until: sl.until,
				RollupSize: int64(len(r)), RollupSum: crc32.Checksum(r, castagnoli),
				SamplesSize: int64(len(s)), SamplesSum: crc32.Checksum(s, castagnoli),
				Ranges: intRanges(p, sl.samples, slices.Sorted(maps.Keys(meta.SampleRanges)))})
			sliced = append(sliced, r, s)
		}
	}
	// After the slices, whose rollups refer to roll's label sets.
	rb, err := roll.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	pb, err := samples.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	series := profile.New()
	series.Series = p.Series
	sb, err := series.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	tl := roll.WithoutStacks()
	tl.Samples = p.SumSamplesOverStacks(p.Samples, labels, 0) // at the store's resolution already
	tb, err := tl.MarshalBinary()
	if err != nil {
		return nil, nil, err
	}
	// JSON rather than gob: gob may allocate without bound on damaged
	// input, and the meta is small.
	mj, err := json.Marshal(&meta)
	if err != nil {
		return nil, nil, fmt.Errorf("encode block meta: %w", err)
	}
	b := &block{path: path, meta: meta}
	var buf bytes.Buffer
	if sliced != nil {
		buf.WriteString(blockMagic2)
	} else {
		buf.WriteString(blockMagic)
	}
	var n [4]byte
	parts := append([][]byte{mj, enc.EncodeAll(rb, nil), enc.EncodeAll(pb, nil), enc.EncodeAll(sb, nil), enc.EncodeAll(tb, nil)}, sliced...)
	for i, data := range parts {
		binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
		buf.Write(n[:])
		sum := crc32.Checksum(data, castagnoli)
		binary.LittleEndian.PutUint32(n[:], sum)
		buf.Write(n[:])
		if i > 0 && i <= numParts {
			b.parts[i-1] = part{off: int64(buf.Len()), size: int64(len(data)), sum: sum}
		}
		buf.Write(data)
	}
	b.size = int64(buf.Len())
	if err := b.locateSlices(b.parts[numParts-1].off + b.parts[numParts-1].size); err != nil {
		return nil, nil, err
	}
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

// timeSlice is the samples of a block within one time slice, and their
// rollup in the block rollup's tables.
type timeSlice struct {
	first, last     int64
	from, until     int64 // as in sliceMeta
	samples, rollup []profile.Sample
}

// timeSlices divides p's samples into slices of width ns from partition
// (samples before it in the first, after its last slice in the last) and
// one of the samples without a time, keeping their order within each;
// each timed slice stands for the time from its start to the next one's
// (the first from the beginning, the last to the end). Each slice's rollup
// refers to the label sets labels maps p's to: the rollup of all of p's.
// It returns nil when the samples with a time fall in one slice.
func timeSlices(p *profile.Profile, labels *profile.LabelMap, partition, width int64) []timeSlice {
	width = max(width, 1)
	const untimed = slicesPerBlock
	index := func(t int64) int {
		if t == 0 {
			return untimed
		}
		return int(min(max((t-partition)/width, 0), slicesPerBlock-1))
	}
	var start [slicesPerBlock + 2]int
	for _, s := range p.Samples {
		start[index(s.Time)+1]++
	}
	timed := 0
	for i := 1; i < len(start); i++ {
		if i <= slicesPerBlock && start[i] > 0 {
			timed++
		}
		start[i] += start[i-1]
	}
	if timed < 2 {
		return nil // one slice would be read whole, as the block is
	}
	ordered := make([]profile.Sample, len(p.Samples))
	next := start
	for _, s := range p.Samples {
		i := index(s.Time)
		ordered[next[i]] = s
		next[i]++
	}
	var out []timeSlice
	for i := range slicesPerBlock + 1 {
		samples := ordered[start[i]:start[i+1]]
		if len(samples) == 0 {
			continue
		}
		sl := timeSlice{samples: samples, rollup: p.SumSamplesOverTime(samples, labels)}
		if i != untimed {
			sl.first, sl.last = sampleSpan(samples)
			if len(out) > 0 {
				sl.from = partition + int64(i)*width
				out[len(out)-1].until = sl.from
			}
		}
		out = append(out, sl)
	}
	return out
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
	if _, err := r.ReadAt(head, 0); err != nil || (string(head) != blockMagic && string(head) != blockMagic2) {
		return nil, fmt.Errorf("%s: not a sparkprof block (no %q or %q at offset 0)", path, blockMagic, blockMagic2)
	}
	b := &block{path: path, size: size}
	off := int64(len(blockMagic))
	var metaPart part
	for i := -1; i < numParts; i++ {
		if i >= partSeries && off == size {
			break // written before blocks had a series or timeline part
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
	if (string(head) == blockMagic2) != (len(b.meta.Slices) > 0) {
		return nil, fmt.Errorf("%s: block meta lists %d time slices under %q", path, len(b.meta.Slices), head)
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
	if err != nil || which != partSamples || len(b.slices) == 0 {
		return p, err
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
// series part have none, and their samples hold the series.
func (b *block) has(part int) bool { return b.parts[part].off != 0 }

// load reads a block's rollup, samples or series from its file (decode).
func (b *block) load(which int, dec *zstd.Decoder) (*profile.Profile, error) {
	var p *profile.Profile
	err := b.withFile(func(f *os.File) (err error) {
		p, err = b.decode(f, which, dec)
		return err
	})
	return p, err
}

// withFile calls fn with b's file open.
func (b *block) withFile(fn func(*os.File) error) error {
	f, err := os.Open(b.path)
	if errors.Is(err, fs.ErrNotExist) {
		// A compaction or retention removed the block after the query
		// selected it.
		return fmt.Errorf("%w: compaction or retention removed block %s while the query ran; run it again", err, filepath.Base(b.path))
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(f)
}

// RollupDropped are the labels a block's rollup does not keep: those with
// a value per task or thread.
var RollupDropped = []string{profile.LabelTaskID, profile.LabelPartition, profile.LabelThreadName}

// rollup sums the samples of p over time and threads, with the labels in
// RollupDropped removed from their label sets: a whole-app or per-stage
// flame graph of a block then reads one row per stack and label set
// instead of one per sample. It shares p's frames and stacks.
func rollup(p *profile.Profile) *profile.Profile { return p.SumOverTime(withoutPerTask) }

// withoutPerTask removes the labels in RollupDropped from ls.
func withoutPerTask(ls profile.Labels) profile.Labels { return ls.Without(RollupDropped...) }

// timeline sums the samples of p over stacks and threads, with the labels
// in RollupDropped removed from their label sets, keeping their times to
// res (0 as they are: a block's are at the store's resolution already): a
// time series by app, executor or stage (the app page's CPU per executor)
// then reads one row per second, label set, type and state instead of one
// per sample.
func timeline(p *profile.Profile, res int64) *profile.Profile {
	return p.SumOverStacks(withoutPerTask, res)
}

// sampleSpan returns the first and last time of samples; samples without
// a time are left out.
func sampleSpan(samples []profile.Sample) (first, last int64) {
	for _, s := range samples {
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
