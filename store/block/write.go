package block

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/profile"
)

// Input is an upload a block is made of (Merge).
type Input struct {
	ID          uint64
	Received    int64 // Unix ns when it was stored
	From, Until int64 // Unix ns, the window its profile covers
	Labels      profile.Labels
	Bytes       int // its request body's size
	Profile     *profile.Profile
}

// Merge merges ups (and the blocks they join, whose samples are
// oldProfiles) into one block profile of partition, keeping sample times
// to res, and returns it with the block's meta.
func Merge(partition int64, olds []*Block, oldProfiles []*profile.Profile, ups []Input, res int64) (*profile.Profile, Meta) {
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
	meta := Meta{Partition: partition, Values: map[string][]string{}, Carried: map[string]int{}}
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
		for i := 0; i+1 < len(b.Meta.IDs); i += 2 {
			for id := b.Meta.IDs[i]; id <= b.Meta.IDs[i+1]; id++ {
				ids = append(ids, id)
			}
		}
		for name, vals := range b.Meta.Values {
			for _, v := range vals {
				addValues(profile.Labels{{Name: name, Value: v}})
			}
		}
		for name, n := range b.Meta.Carried {
			meta.Carried[name] += n
		}
		span(b.Meta.From, b.Meta.Until, b.Meta.Received)
		meta.Uploads += b.Meta.Uploads
		meta.Bytes += b.Meta.Bytes
		meta.Sources = append(meta.Sources, b.Meta.Sources...)
		meta.Replaces = append(meta.Replaces, filepath.Base(b.Path))
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
	meta.IDs = IDRanges(ids)
	slices.Sort(meta.Sources)
	meta.Sources = slices.Compact(meta.Sources)
	p := m.Profile()
	p.Samples = slices.Clip(p.Samples) // MemSize counts the samples kept, not the room made
	p.Warnings = slices.Compact(p.Warnings)
	meta.FirstSample, meta.LastSample = SampleSpan(p.Samples)
	meta.MemSize = p.MemSize()
	meta.SampleLabels = SampleLabels(p, nil)
	meta.SampleRanges = intRanges(p, p.Samples, unlisted(meta.SampleLabels))
	return p, meta
}

// IDRanges compresses ids into sorted [lo, hi] pairs.
func IDRanges(ids []uint64) []uint64 {
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

// Write writes a block file atomically (a temporary file, fsynced,
// renamed into place, the directory fsynced), after the Parquet files of
// its samples and stacks, and returns the block, whose rollup and samples
// stay on disk, and the rollup. A block of at least MinSlicedSamples
// samples is cut into time slices of its partition's span (the block
// span), each with a rollup of its own and a row group of the samples
// file. When it fails, it leaves none of the files behind.
func Write(path string, meta Meta, p *profile.Profile, enc *zstd.Encoder, span int64) (*Block, *profile.Profile, error) {
	b, roll, err := writeBlockFiles(path, meta, p, enc, span)
	if err != nil {
		Remove(path)
		os.Remove(path + ".tmp")
	}
	return b, roll, err
}

// writeBlockFiles writes the files of Write.
func writeBlockFiles(path string, meta Meta, p *profile.Profile, enc *zstd.Encoder, span int64) (*Block, *profile.Profile, error) {
	// The rollup's map of label sets serves the slices' rollups and the
	// timeline, which drop the same labels: each set is relabelled once.
	roll, labels := p.SumOverTimeMap(withoutPerTask)
	// The samples part holds the tables every slice query decodes first;
	// the series have a part of their own.
	// The samples themselves are in the Parquet samples file, a row group
	// per slice.
	samples := *p
	samples.Series = nil
	samples.Samples = nil
	sliced, groups := sliceBlock(&meta, p, labels, enc, span)
	lm, err := writeLake(path, p, groups)
	if err != nil {
		return nil, nil, err
	}
	meta.Lake = lm
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
	// The thread rollup is written only when it saves a query of some
	// threads at least half the samples' rows; it has at least as many as
	// the rollup.
	var hb []byte
	if 2*len(roll.Samples) <= len(p.Samples) {
		if tr := ThreadRollup(p); 2*len(tr.Samples) <= len(p.Samples) {
			if hb, err = tr.MarshalBinary(); err != nil {
				return nil, nil, err
			}
		}
	}
	// JSON rather than gob: gob may allocate without bound on damaged
	// input, and the meta is small.
	mj, err := json.Marshal(&meta)
	if err != nil {
		return nil, nil, fmt.Errorf("encode block meta: %w", err)
	}
	b := &Block{Path: path, Meta: meta}
	var buf bytes.Buffer
	buf.WriteString(Magic4)
	var n [4]byte
	var hz []byte // an empty part: no thread rollup
	if hb != nil {
		hz = enc.EncodeAll(hb, nil)
	}
	parts := append([][]byte{mj, enc.EncodeAll(rb, nil), enc.EncodeAll(pb, nil), enc.EncodeAll(sb, nil), enc.EncodeAll(tb, nil), hz}, sliced...)
	for i, data := range parts {
		binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
		buf.Write(n[:])
		sum := crc32.Checksum(data, castagnoli)
		binary.LittleEndian.PutUint32(n[:], sum)
		buf.Write(n[:])
		if i > 0 && i <= NumParts {
			b.Parts[i-1] = Part{Off: int64(buf.Len()), Size: int64(len(data)), Sum: sum}
		}
		buf.Write(data)
	}
	b.Size = int64(buf.Len())
	if err := b.locateSlices(b.Parts[NumParts-1].Off + b.Parts[NumParts-1].Size); err != nil {
		return nil, nil, err
	}
	tmp := path + ".tmp"
	if err := syncfile.Write(tmp, bytes.NewReader(buf.Bytes())); err != nil {
		return nil, nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, nil, err
	}
	if err := syncfile.Dir(filepath.Dir(path)); err != nil {
		return nil, nil, err
	}
	return b, roll, nil
}

// sliceBlock cuts the samples of p, a block's profile whose meta is meta,
// into time slices when it has at least MinSlicedSamples, recording them
// in meta. It returns each slice's rollup part (compressed, its label sets
// those labels maps p's to) followed by its samples part (empty: the
// slice's samples are a row group of the Parquet samples file), and the
// row groups of that file: the slices' samples, or all of p's.
func sliceBlock(meta *Meta, p *profile.Profile, labels *profile.LabelMap, enc *zstd.Encoder, span int64) (parts [][]byte, groups [][]profile.Sample) {
	if len(p.Samples) < MinSlicedSamples || span <= 0 || meta.FirstSample == 0 {
		return nil, [][]profile.Sample{p.Samples}
	}
	sls := timeSlices(p, labels, meta.Partition, span/SlicesPerBlock)
	if sls == nil {
		return nil, [][]profile.Sample{p.Samples}
	}
	for _, sl := range sls {
		r := enc.EncodeAll(profile.AppendSamples(nil, sl.rollup), nil)
		meta.Slices = append(meta.Slices, SliceMeta{First: sl.first, Last: sl.last, From: sl.from, Until: sl.until,
			RollupSize: int64(len(r)), RollupSum: crc32.Checksum(r, castagnoli),
			Ranges: intRanges(p, sl.samples, slices.Sorted(maps.Keys(meta.SampleRanges)))})
		parts = append(parts, r, nil)
		groups = append(groups, sl.samples)
	}
	return parts, groups
}

// timeSlice is the samples of a block within one time slice, and their
// rollup in the block rollup's tables.
type timeSlice struct {
	first, last     int64
	from, until     int64 // as in SliceMeta
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
	const untimed = SlicesPerBlock
	index := func(t int64) int {
		if t == 0 {
			return untimed
		}
		return int(min(max((t-partition)/width, 0), SlicesPerBlock-1))
	}
	var start [SlicesPerBlock + 2]int
	for _, s := range p.Samples {
		start[index(s.Time)+1]++
	}
	timed := 0
	for i := 1; i < len(start); i++ {
		if i <= SlicesPerBlock && start[i] > 0 {
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
	for i := range SlicesPerBlock + 1 {
		samples := ordered[start[i]:start[i+1]]
		if len(samples) == 0 {
			continue
		}
		sl := timeSlice{samples: samples, rollup: p.SumSamplesOverTime(samples, labels)}
		if i != untimed {
			sl.first, sl.last = SampleSpan(samples)
			if len(out) > 0 {
				sl.from = partition + int64(i)*width
				out[len(out)-1].until = sl.from
			}
		}
		out = append(out, sl)
	}
	return out
}

// RollupDropped are the labels a block's rollup does not keep: those with
// a value per task or thread.
var RollupDropped = []string{profile.LabelTaskID, profile.LabelPartition, profile.LabelThreadName}

// Rollup sums the samples of p over time and threads, with the labels in
// RollupDropped removed from their label sets: a whole-app or per-stage
// flame graph of a block then reads one row per stack and label set
// instead of one per sample. It shares p's frames and stacks.
func Rollup(p *profile.Profile) *profile.Profile { return p.SumOverTime(withoutPerTask) }

// withoutPerTask removes the labels in RollupDropped from ls.
func withoutPerTask(ls profile.Labels) profile.Labels { return ls.Without(RollupDropped...) }

// ThreadRollupDropped are the labels a block's thread rollup does not
// keep: those with a value per task.
var ThreadRollupDropped = []string{profile.LabelTaskID, profile.LabelPartition}

// ThreadRollup sums the samples of p over time per thread, with the labels
// in ThreadRollupDropped removed from their label sets: a flame graph of
// some threads (a thread-name matcher, or the threads kept) of a block
// then reads one row per stack, thread and label set instead of one per
// sample. It shares p's frames, stacks and threads.
func ThreadRollup(p *profile.Profile) *profile.Profile {
	return p.SumOverTimeByThread(func(ls profile.Labels) profile.Labels { return ls.Without(ThreadRollupDropped...) })
}

// Timeline sums the samples of p over stacks and threads, with the labels
// in RollupDropped removed from their label sets, keeping their times to
// res (0 as they are: a block's are at the store's resolution already): a
// time series by app, executor or stage (the app page's CPU per executor)
// then reads one row per second, label set, type and state instead of one
// per sample.
func Timeline(p *profile.Profile, res int64) *profile.Profile {
	return p.SumOverStacks(withoutPerTask, res)
}

// SampleSpan returns the first and last time of samples; samples without
// a time are left out.
func SampleSpan(samples []profile.Sample) (first, last int64) {
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
