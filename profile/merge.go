package profile

import (
	"slices"

	"github.com/sparkprof/sparkprof/internal/hashtab"
)

// MergeOptions control how a Merger combines samples.
type MergeOptions struct {
	// Aggregate combines samples that share stack, type, thread, state and
	// labels into one, dropping their times. Memory is then bounded by the
	// number of unique keys, not by the number of input samples.
	Aggregate bool
	// Resolution, with Aggregate, keeps time to this many nanoseconds:
	// samples combine only within the same Resolution-long bucket and keep
	// the bucket's start as their time. Zero drops times.
	Resolution int64
	// DropLabels forgets the samples' label sets; the merged profile's
	// Labels still hold those every input shares.
	DropLabels bool
	// Relabel, unless DropLabels, changes each label set of the merged
	// samples (the profile's labels included), e.g. to drop labels with a
	// value per task; samples whose label sets become equal then combine.
	// It is called once per label set and input, not per sample.
	Relabel func(Labels) Labels
	// DropThreads forgets which thread each sample ran on (its labels, such
	// as thread_pool and stage, are kept). With Aggregate it bounds memory by
	// unique stacks when thread names are unique per task.
	DropThreads bool
	// ThreadNames, unless DropThreads, keeps only the names of threads:
	// threads of one name in many JVMs (an executor's "Executor task launch
	// worker" threads) become one.
	ThreadNames bool
	// WithinAdd, with Aggregate, combines only samples of the same Add,
	// whose lookups then stay in a table the size of one input instead of
	// one that grows with the output and misses the processor's cache.
	// Meant for inputs whose keys rarely meet across Adds, such as a
	// compaction's uploads, each of one executor's window: a key two inputs
	// share stays two samples, whose values every reader sums.
	WithinAdd bool
}

// A Merger combines profiles into one. Each Add costs a hash per frame and
// per stack of the added profile plus a lookup per sample; only stacks the
// output does not have yet are interned node by node. The first Add of a
// profile with no more samples than stacks (a flame graph's rollup) takes
// its frames and stacks as they are instead: the merged profile may then
// share that profile's tables, which must not change while it is in use.
type Merger struct {
	opts  MergeOptions
	out   *Profile
	first bool
	// unindexed is set while the stacks the first Add took are not in
	// stackByHash: the next Add puts them there.
	unindexed bool
	// byTime finds the aggregated samples in out.Samples, a table per
	// sample time: a compaction's samples come in runs of one time, whose
	// table stays in the processor's cache, where one table of millions of
	// samples would miss it on each lookup. lastTime and lastTable are the
	// table used last. fast does for samples with no time, labels or
	// thread (all a flame graph merges) by type and state, then by stack
	// in a slice: an array index per sample instead of a hash. lastFast is
	// the last one used.
	byTime    map[int64]*sampleTable
	lastTime  int64
	lastTable *sampleTable
	fast      []fastIndex
	lastFast  int
	// addTable finds the aggregated samples of the current Add, with
	// WithinAdd.
	addTable sampleTable
	// stackByHash finds an output stack by the hash of its frames.
	stackByHash hashtab.Table

	// Per-Add scratch space, indexed by the added profile's ids.
	frameHash, stackHash []uint64
	frameMap             []FrameID // noFrame when not mapped yet
	stackMap             []StackID // NoStack when not mapped yet (but for 0)
}

const (
	noFrame        = ^FrameID(0)
	unmappedLabels = ^LabelSetID(0)
)

// sampleKey is what aggregated samples share: a sample but its value.
type sampleKey struct {
	time   int64
	stack  StackID
	labels LabelSetID
	thread ThreadID
	typ    TypeID
	state  ThreadState
}

// keyOf returns the aggregation key of s.
func keyOf(s *Sample) sampleKey {
	return sampleKey{s.Time, s.Stack, s.Labels, s.Thread, s.Type, s.State}
}

// hash mixes every field of k into 64 bits (each step a multiply and a
// xor-shift, as in a 64-bit finalizer).
func (k sampleKey) hash() uint64 {
	h := uint64(k.time) * 0x9e3779b97f4a7c15
	h = (h ^ h>>29 ^ uint64(k.stack)<<32 ^ uint64(k.labels)) * 0xff51afd7ed558ccd
	h = (h ^ h>>32 ^ uint64(k.thread)<<16 ^ uint64(k.typ)<<8 ^ uint64(k.state)) * 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// NewMerger returns a Merger with the given options.
func NewMerger(opts MergeOptions) *Merger {
	return &Merger{opts: opts, out: New(), first: true}
}

// Merge returns one profile holding the samples of all of ps, with times.
func Merge(ps ...*Profile) *Profile {
	m := NewMerger(MergeOptions{})
	for _, p := range ps {
		m.Add(p)
	}
	return m.Profile()
}

// Profile returns the merged profile. The Merger must not be used after.
func (m *Merger) Profile() *Profile { return m.out }

// Grow makes room for about n more merged samples, so that adding them does
// not grow the sample table step by step: each growth moves the samples
// into fresh memory, whose page faults cost more than the copy.
func (m *Merger) Grow(n int) { m.out.Samples = grow(m.out.Samples, n) }

// Add merges p into the result. p is not modified.
func (m *Merger) Add(p *Profile) { m.AddFunc(p, nil) }

// AddFunc merges the samples of p that keep accepts; keep may first change
// the sample, e.g. to a label set it has added to p. A nil keep accepts
// every sample.
func (m *Merger) AddFunc(p *Profile, keep func(*Sample) bool) {
	out := m.out
	labels := p.Labels
	if m.opts.Relabel != nil && !m.opts.DropLabels {
		labels = m.opts.Relabel(labels)
	}
	extra := m.commonLabels(labels)

	typeMap := make([]TypeID, len(p.Types))
	for i, t := range p.Types {
		typeMap[i] = out.AddType(t)
	}
	if m.opts.Aggregate && m.opts.WithinAdd {
		m.addTable.reset(len(p.Samples))
	}
	samples, taken := p.Samples, false
	if len(out.stacks) == 1 && len(p.Samples) <= len(p.stacks) {
		samples, taken, keep = m.takeStacks(p, keep), true, nil
	} else {
		m.startMap(p, keep != nil)
	}
	threadMap := make([]ThreadID, len(p.Threads))
	if !m.opts.DropThreads {
		for i := 1; i < len(p.Threads); i++ {
			t := p.Threads[i]
			if m.opts.ThreadNames {
				t = Thread{Name: t.Name}
			}
			threadMap[i] = out.AddThread(t)
		}
	}
	// Label sets are mapped when a sample first uses them: keep may add
	// sets, and a block's many sets are not all selected.
	sets := p.MapLabels(out, func(ls Labels) Labels {
		if len(extra) > 0 {
			ls = extra.Merge(ls)
		}
		if m.opts.Relabel != nil {
			ls = m.opts.Relabel(ls)
		}
		return ls
	})
	mapLabels := func(id LabelSetID) LabelSetID {
		if m.opts.DropLabels {
			return NoLabels
		}
		return sets.ID(id)
	}

	s := new(Sample) // one allocation: keep's argument escapes
	for i := range samples {
		*s = samples[i]
		if keep != nil && !keep(s) {
			continue
		}
		if !taken {
			s.Stack = m.mapStack(p, s.Stack)
		}
		s.Type = typeMap[s.Type]
		s.Thread = threadMap[s.Thread]
		s.Labels = mapLabels(s.Labels)
		m.addSample(*s)
	}
	for _, sr := range p.Series {
		sr.Labels = p.Labels.Merge(sr.Labels)
		out.Series = append(out.Series, sr)
	}
	if p.Start != 0 && (out.Start == 0 || p.Start < out.Start) {
		out.Start = p.Start
	}
	if p.End > out.End {
		out.End = p.End
	}
	out.Warnings = append(out.Warnings, p.Warnings...)
	if out.Source == "" {
		out.Source = p.Source
	} else if p.Source != "" && p.Source != out.Source {
		out.Source = "merged profiles"
	}
}

// startMap readies the mapping of p's stacks to the output's (mapStack).
func (m *Merger) startMap(p *Profile, filtered bool) {
	if m.unindexed {
		m.indexOutput()
	}
	m.frameHash = p.frameHashes(true, m.frameHash)
	m.stackHash = p.stackHashes(m.frameHash, m.stackHash)
	m.resetFrameMap(len(p.Frames))
	m.stackMap = resize(m.stackMap, len(p.stacks))
	if !filtered || m.stackByHash.Len() == 0 {
		// Room for every stack of p at once spares the table's doublings,
		// a fifth of merging a profile of a million stacks into an empty
		// merger. Without a filter every stack with a sample is mapped;
		// with one, a first profile's room is taken on trust, later ones
		// grow as they need.
		m.stackByHash.Grow(len(p.stacks))
		m.out.stacks = grow(m.out.stacks, len(p.stacks))
	}
}

// takeStacks makes p's stacks the output's, which has none yet, and
// returns the samples of p that keep accepts, on the output's stacks: all
// of p's frames and stacks, shared, when the kept samples are on every
// stack (a rollup, a decoded upload), else copies of those they are on,
// in the order of p's (a caller's id is below its callees'), so that a
// time slice of a block does not bring the block's other stacks. No frame
// or stack is hashed or looked up.
func (m *Merger) takeStacks(p *Profile, keep func(*Sample) bool) []Sample {
	kept := make([]Sample, 0, len(p.Samples))
	s := new(Sample) // one allocation: keep's argument escapes
	for i := range p.Samples {
		*s = p.Samples[i]
		if keep == nil || keep(s) {
			kept = append(kept, *s)
		}
	}
	// newID is 1 for a stack a kept sample is on, or its caller, then its
	// id in the output.
	newID := resize(m.stackMap, len(p.stacks))
	clear(newID)
	used := 0
	for _, s := range kept {
		for st := s.Stack; st != NoStack && newID[st] == 0; st = p.stacks[st].parent {
			newID[st] = 1
			used++
		}
	}
	m.stackMap = newID
	out := m.out
	out.frameIndex = nil // built if frames are ever added
	m.unindexed = true
	if used == len(p.stacks)-1 {
		out.Frames, out.stacks = slices.Clip(p.Frames), slices.Clip(p.stacks)
		return kept
	}
	m.resetFrameMap(len(p.Frames))
	for i := 1; i < len(p.stacks); i++ {
		if newID[i] == 0 {
			continue
		}
		n := p.stacks[i]
		f := m.frameMap[n.frame]
		if f == noFrame {
			f = FrameID(len(out.Frames))
			out.Frames = append(out.Frames, p.Frames[n.frame])
			m.frameMap[n.frame] = f
		}
		newID[i] = out.AppendStack(newID[n.parent], f)
	}
	for i := range kept {
		kept[i].Stack = newID[kept[i].Stack]
	}
	return kept
}

// resetFrameMap sizes frameMap for n frames, none mapped.
func (m *Merger) resetFrameMap(n int) {
	m.frameMap = resize(m.frameMap, n)
	for i := range m.frameMap {
		m.frameMap[i] = noFrame
	}
}

// indexOutput puts the stacks the first Add took into stackByHash.
func (m *Merger) indexOutput() {
	out := m.out
	m.frameHash = out.frameHashes(true, m.frameHash)
	m.stackHash = out.stackHashes(m.frameHash, m.stackHash)
	m.stackByHash.Grow(len(out.stacks))
	for i := 1; i < len(out.stacks); i++ {
		m.stackByHash.Put(m.stackHash[i], uint32(i))
	}
	m.unindexed = false
}

// mapStack returns the output stack equal to stack s of p, adding the
// frames and stack nodes the output lacks.
func (m *Merger) mapStack(p *Profile, s StackID) StackID {
	if s == NoStack || m.stackMap[s] != NoStack {
		return m.stackMap[s]
	}
	h := m.stackHash[s]
	v, ok := m.stackByHash.Get(h)
	id := StackID(v)
	if !ok {
		n := p.stacks[s]
		parent := m.mapStack(p, n.parent)
		f := m.frameMap[n.frame]
		if f == noFrame {
			f = m.out.AddFrame(p.Frames[n.frame])
			m.frameMap[n.frame] = f
		}
		// Every stack of the output is in stackByHash, so a stack missing
		// there is new: appended without Push's lookup.
		id = m.out.AppendStack(parent, f)
		m.stackByHash.Put(h, uint32(id))
	}
	m.stackMap[s] = id
	return id
}

func (m *Merger) addSample(s Sample) {
	if !m.opts.Aggregate {
		m.out.Samples = append(m.out.Samples, s)
		return
	}
	s.Time = bucket(s.Time, m.opts.Resolution)
	if s.Time == 0 && s.Labels == NoLabels && s.Thread == NoThread {
		slot := m.fastSlot(s)
		if *slot != 0 {
			m.out.Samples[*slot-1].Value = AddValues(m.out.Samples[*slot-1].Value, s.Value)
			return
		}
		*slot = int32(len(m.out.Samples) + 1)
		m.out.Samples = append(m.out.Samples, s)
		return
	}
	tab := &m.addTable
	if !m.opts.WithinAdd {
		tab = m.samplesAt(s.Time)
	}
	if i, ok := tab.find(keyOf(&s), m.out.Samples, len(m.out.Samples)); ok {
		m.out.Samples[i].Value = AddValues(m.out.Samples[i].Value, s.Value)
		return
	}
	m.out.Samples = append(m.out.Samples, s)
}

// samplesAt returns the table of the aggregated samples of time t. A new
// table starts with room for as many samples as the last one holds: the
// seconds of a compaction hold about as many samples each, and growing a
// table step by step moves its samples a dozen times.
func (m *Merger) samplesAt(t int64) *sampleTable {
	if m.lastTable != nil && m.lastTime == t {
		return m.lastTable
	}
	tab := m.byTime[t]
	if tab == nil {
		if m.byTime == nil {
			m.byTime = map[int64]*sampleTable{}
		}
		tab = new(sampleTable)
		if m.lastTable != nil {
			tab.byHash.Grow(m.lastTable.byHash.Len())
		}
		m.byTime[t] = tab
	}
	m.lastTime, m.lastTable = t, tab
	return tab
}

// sampleTable finds aggregated samples by their key: by the key's 64-bit
// hash in an open-addressing table, and in a map for the rare key whose
// hash another key took first.
type sampleTable struct {
	byHash hashtab.Table
	others map[sampleKey]int
}

// reset empties t and makes room for n keys. It keeps its memory unless
// that is far more than n keys need: after a compaction's old block, each
// small upload would otherwise clear the block's table.
func (t *sampleTable) reset(n int) {
	t.byHash.Reset(max(1<<10, 8*n))
	t.byHash.Grow(n)
	clear(t.others)
}

// find returns the index in samples of the sample of key k, or records
// that it is next and reports false.
func (t *sampleTable) find(k sampleKey, samples []Sample, next int) (int, bool) {
	h := k.hash()
	i, ok := t.byHash.Get(h)
	if !ok {
		t.byHash.Put(h, uint32(next))
		return next, false
	}
	if keyOf(&samples[i]) == k {
		return int(i), true
	}
	if i, ok := t.others[k]; ok {
		return i, true
	}
	if t.others == nil {
		t.others = map[sampleKey]int{}
	}
	t.others[k] = next
	return next, false
}

// commonLabels keeps out.Labels equal to the labels every added profile
// shares. It returns the labels of the incoming profile that are not common
// (they move into its samples' label sets); labels that stop being common
// move into the label sets of the samples already merged.
func (m *Merger) commonLabels(in Labels) Labels {
	out := m.out
	if m.first {
		m.first = false
		out.Labels = append(Labels(nil), in...)
		return nil
	}
	var common, dropped, extra Labels
	for _, l := range out.Labels {
		if v, ok := in.Get(l.Name); ok && v == l.Value {
			common = append(common, l)
		} else {
			dropped = append(dropped, l)
		}
	}
	for _, l := range in {
		if v, ok := common.Get(l.Name); !ok || v != l.Value {
			extra = append(extra, l)
		}
	}
	if len(dropped) > 0 {
		m.pushDown(dropped)
		out.Labels = common
	}
	return extra
}

// pushDown adds labels to the label set of every sample merged so far.
func (m *Merger) pushDown(ls Labels) {
	out := m.out
	remap := make([]LabelSetID, len(out.labelSets))
	for i := range remap {
		remap[i] = out.AddLabels(ls.Merge(out.labelSets[i]))
	}
	for i := range out.Samples {
		out.Samples[i].Labels = remap[out.Samples[i].Labels]
	}
	if m.opts.Aggregate {
		// Every sample now has labels, those in the fast index too: all
		// are found by key.
		m.fast = nil
		m.byTime, m.lastTable = nil, nil
		if m.opts.WithinAdd {
			return // the Add to come starts a new table
		}
		for i := range out.Samples {
			s := &out.Samples[i]
			m.samplesAt(s.Time).find(keyOf(s), out.Samples, i)
		}
	}
}

// fastIndex finds the aggregated samples of one type and state that have
// no time, labels or thread.
type fastIndex struct {
	kind uint16  // type<<8 | state
	at   []int32 // by stack: the sample's index in out.Samples + 1, or 0
}

// fastSlot returns where the fast index keeps the sample of s's type,
// state and stack.
func (m *Merger) fastSlot(s Sample) *int32 {
	kind := uint16(s.Type)<<8 | uint16(s.State)
	if m.lastFast >= len(m.fast) || m.fast[m.lastFast].kind != kind {
		m.lastFast = slices.IndexFunc(m.fast, func(f fastIndex) bool { return f.kind == kind })
		if m.lastFast < 0 {
			m.fast = append(m.fast, fastIndex{kind: kind})
			m.lastFast = len(m.fast) - 1
		}
	}
	f := &m.fast[m.lastFast]
	if n := int(s.Stack) + 1; n > len(f.at) {
		f.at = append(f.at, make([]int32, n-len(f.at))...)
	}
	return &f.at[s.Stack]
}

// bucket returns the start of the res-long bucket holding t, or 0 when res
// is not positive.
func bucket(t, res int64) int64 {
	if res <= 0 {
		return 0
	}
	b := t - t%res
	if t < 0 && t%res != 0 {
		b -= res
	}
	return b
}

// SumOverTime returns p's samples summed over time and threads, each label
// set replaced by relabel of it (nil keeps it), in a profile that shares
// p's types, frames and stacks instead of interning them again: a flame
// graph of p then reads one row per stack, label set, type and state. The
// result has no threads, series or warnings; p must not change while it is
// in use.
func (p *Profile) SumOverTime(relabel func(Labels) Labels) *Profile {
	out, _ := p.SumOverTimeMap(relabel)
	return out
}

// SumOverTimeMap is SumOverTime, and also returns the map from p's label
// sets to the result's, with which parts of p's samples are summed into the
// result's label sets (SumSamplesOverTime, SumSamplesOverStacks) without
// relabelling each set again.
func (p *Profile) SumOverTimeMap(relabel func(Labels) Labels) (*Profile, *LabelMap) {
	out := p.shell()
	out.Frames, out.stacks = slices.Clip(p.Frames), slices.Clip(p.stacks)
	out.frameIndex = nil // built if frames are ever added
	m := p.MapLabels(out, relabel)
	out.Samples = p.SumSamplesOverTime(p.Samples, m)
	return out, m
}

// SumSamplesOverTime returns samples, some of p's, summed over time and
// threads per stack, label set, type and state, each label set replaced by
// what m (a map from p's label sets) maps it to.
func (p *Profile) SumSamplesOverTime(samples []Sample, m *LabelMap) []Sample {
	return p.sumSamplesOverTime(samples, m, false)
}

// SumOverTimeByThread is SumOverTime keeping the samples' threads: a
// flame graph of some threads (a thread-name matcher) then reads one row
// per stack, thread and label set instead of one per sample. It shares
// p's frames, stacks and threads.
func (p *Profile) SumOverTimeByThread(relabel func(Labels) Labels) *Profile {
	out := p.shell()
	out.Frames, out.stacks = slices.Clip(p.Frames), slices.Clip(p.stacks)
	out.frameIndex = nil // built if frames are ever added
	out.Threads = slices.Clip(p.Threads)
	out.Samples = p.sumSamplesOverTime(p.Samples, p.MapLabels(out, relabel), true)
	return out
}

// sumSamplesOverTime is SumSamplesOverTime, keeping the samples' threads
// when byThread is set.
func (p *Profile) sumSamplesOverTime(samples []Sample, m *LabelMap, byThread bool) []Sample {
	// The samples are summed one output label set at a time: within a
	// set, a stack's sums are found through an array indexed by stack id
	// (stamped with the set, so that it is never cleared) and a short
	// chain over types and states (and threads). One table of all the
	// samples' keys, hashed, missed the cache on nearly every lookup of a
	// block's hundreds of thousands of samples.
	g := groupBySet(samples, m)
	byStack := make([]slotSums, len(p.stacks))
	sums := chainedSums{byThread: byThread}
	dest := make([]int32, len(samples))
	for id := range g.sets() {
		stamp := int32(id) + 1
		for _, j := range g.of(id) {
			s := &samples[j]
			dest[j], _ = sums.find(&byStack[s.Stack], stamp, s)
		}
	}
	// Each sample's sum is found first (dest), and the sums are made at
	// their final count after: appending them grew a slice of hundreds of
	// thousands of samples step by step, moving it several times.
	out := make([]Sample, len(sums.kinds))
	for j := range samples {
		s, o := &samples[j], &out[dest[j]]
		o.Value = AddValues(o.Value, s.Value)
		o.Stack, o.Labels, o.Type, o.State = s.Stack, m.ID(s.Labels), s.Type, s.State
		if byThread {
			o.Thread = s.Thread
		}
	}
	return out
}

// SumOverStacks returns p's samples summed over stacks and threads, each
// label set replaced by relabel of it (nil keeps it), keeping their times
// to res nanoseconds (0 keeps them as they are; samples without a time
// keep none): what a time series of p needs, one row per time, label set,
// type and state. The result shares p's types; it has no frames, stacks,
// threads, series or warnings.
func (p *Profile) SumOverStacks(relabel func(Labels) Labels, res int64) *Profile {
	out := p.shell()
	out.Samples = p.SumSamplesOverStacks(p.Samples, p.MapLabels(out, relabel), res)
	return out
}

// WithoutStacks returns a profile of p's types, labels and label sets with
// no frames, stacks, threads, samples, series or warnings: where sums of
// p's samples over stacks in p's label sets go (SumSamplesOverStacks with
// a map into p). Sets added to it leave p's unchanged.
func (p *Profile) WithoutStacks() *Profile {
	out := p.shell()
	out.labelSets = slices.Clip(p.labelSets) // appends reallocate
	out.labelIndex = nil                     // built by the first AddLabels
	return out
}

// shell returns an empty profile of p's types, labels, span and source.
func (p *Profile) shell() *Profile {
	out := New()
	out.Types = slices.Clip(p.Types)
	for i, t := range out.Types {
		out.typeIndex[t] = TypeID(i)
	}
	out.Labels = slices.Clone(p.Labels)
	out.Start, out.End, out.Source = p.Start, p.End, p.Source
	return out
}

// SumSamplesOverStacks returns samples, some of p's, summed over stacks
// and threads per time (to res, as SumOverStacks), label set, type and
// state, each label set replaced by what m (a map from p's label sets)
// maps it to. The sums have no stack.
func (p *Profile) SumSamplesOverStacks(samples []Sample, m *LabelMap, res int64) []Sample {
	// As SumSamplesOverTime, one output label set at a time, with times
	// in place of stacks: each distinct time gets a dense index once (a
	// set's samples mostly come in time order, so the map is asked only
	// when the time changes), and the index finds the set's sums of that
	// time in a stamped array and a chain over types and states. A map of
	// times per set, asked for every sample, took three times as long.
	g := groupBySet(samples, m)
	timeIndex := map[int64]int32{}
	var byTime []slotSums
	var times []int64 // per sum: its time
	var sums chainedSums
	dest := make([]int32, len(samples))
	for id := range g.sets() {
		stamp := int32(id) + 1
		lastTime, ti := int64(0), int32(-1)
		for _, j := range g.of(id) {
			s := &samples[j]
			t := s.Time
			if t != 0 && res > 0 {
				t = bucket(t, res)
			}
			if t != lastTime || ti < 0 {
				var ok bool
				if ti, ok = timeIndex[t]; !ok {
					ti = int32(len(byTime))
					timeIndex[t] = ti
					byTime = append(byTime, slotSums{})
				}
				lastTime = t
			}
			i, added := sums.find(&byTime[ti], stamp, s)
			if added {
				times = append(times, t)
			}
			dest[j] = i
		}
	}
	out := make([]Sample, len(sums.kinds))
	for j := range samples {
		s, o := &samples[j], &out[dest[j]]
		o.Value = AddValues(o.Value, s.Value)
		o.Time, o.Labels, o.Type, o.State = times[dest[j]], m.ID(s.Labels), s.Type, s.State
	}
	return out
}

// chainedSums finds the sums of samples of one label set at a time by a
// slot they share (their stack, or their time): each slot heads a chain of
// the set's sums there, one per type and state (and thread, when byThread
// is set), which is short.
type chainedSums struct {
	kinds    []uint64 // per sum: its thread<<16 | type<<8 | state
	chain    []int32  // per sum: the slot's sum of the set before it, or -1
	byThread bool
}

// slotSums heads a slot's chain of sums.
type slotSums struct {
	stamp int32 // 1 + the label set whose sums last holds
	last  int32 // the set's last sum at the slot, or -1
}

// find returns the index of the sum of s's type and state (and thread) at
// slot at among the sums of the label set stamped stamp (1 + its id),
// adding the sum when there is none yet (added). A slot stamped with another set is
// taken over: the sets come one at a time.
func (c *chainedSums) find(at *slotSums, stamp int32, s *Sample) (i int32, added bool) {
	kind := uint64(s.Type)<<8 | uint64(s.State)
	if c.byThread {
		kind |= uint64(s.Thread) << 16
	}
	if at.stamp != stamp {
		*at = slotSums{stamp, -1}
	}
	for i = at.last; i >= 0; i = c.chain[i] {
		if c.kinds[i] == kind {
			return i, false
		}
	}
	i = int32(len(c.kinds))
	c.kinds = append(c.kinds, kind)
	c.chain = append(c.chain, at.last)
	at.last = i
	return i, true
}

// setGroups orders the indices of samples by the label set a LabelMap maps
// theirs to (a counting sort), keeping their order within a set.
type setGroups struct {
	start []int32 // by set: where its samples start in order; one more entry ends the last
	order []int32 // indices of samples
}

func groupBySet(samples []Sample, m *LabelMap) setGroups {
	var count []int32 // samples per output label set
	for _, s := range samples {
		id := m.ID(s.Labels)
		if int(id) >= len(count) {
			count = append(count, make([]int32, int(id)+1-len(count))...)
		}
		count[id]++
	}
	g := setGroups{start: make([]int32, len(count)+1), order: make([]int32, len(samples))}
	for id, n := range count {
		g.start[id+1] = g.start[id] + n
	}
	next := slices.Clone(g.start[:len(count)])
	for i, s := range samples {
		id := m.ID(s.Labels)
		g.order[next[id]] = int32(i)
		next[id]++
	}
	return g
}

// sets returns the number of output label sets, each of which of lists.
func (g setGroups) sets() int { return len(g.start) - 1 }

// of returns the indices of the samples of output label set id.
func (g setGroups) of(id int) []int32 { return g.order[g.start[id]:g.start[id+1]] }

// LabelMap maps the label sets of one profile to those of another after a
// relabelling, adding each to the other when it is first asked for, sets
// added to the first profile meanwhile included.
type LabelMap struct {
	from, to *Profile
	relabel  func(Labels) Labels // nil keeps a set
	ids      []LabelSetID        // by from's set, unmappedLabels until asked for
}

// MapLabels returns the map from p's label sets to to's, each relabelled by
// relabel (nil keeps a set).
func (p *Profile) MapLabels(to *Profile, relabel func(Labels) Labels) *LabelMap {
	return &LabelMap{from: p, to: to, relabel: relabel}
}

// ID returns the id in the map's target of the source's label set set,
// relabelled. Small enough to inline: it runs once or twice per sample.
func (m *LabelMap) ID(set LabelSetID) LabelSetID {
	if int(set) < len(m.ids) && m.ids[set] != unmappedLabels {
		return m.ids[set]
	}
	return m.add(set)
}

func (m *LabelMap) add(set LabelSetID) LabelSetID {
	if int(set) >= len(m.ids) { // room for every set from has now
		m.ids = append(m.ids, slices.Repeat([]LabelSetID{unmappedLabels}, len(m.from.labelSets)-len(m.ids))...)
	}
	ls := m.from.labelSets[set]
	if m.relabel != nil {
		ls = m.relabel(ls)
	}
	m.ids[set] = m.to.AddLabels(ls)
	return m.ids[set]
}
