package profile

// MergeOptions control how a Merger combines samples.
type MergeOptions struct {
	// Aggregate combines samples that share stack, type, thread, state and
	// labels into one, dropping their times. Memory is then bounded by the
	// number of unique keys, not by the number of input samples.
	Aggregate bool
	// DropThreads forgets which thread each sample ran on (its labels, such
	// as thread_pool and stage, are kept). With Aggregate it bounds memory by
	// unique stacks when thread names are unique per task.
	DropThreads bool
}

// A Merger combines profiles into one. Each Add costs a hash per frame and
// per stack of the added profile plus a lookup per sample; only stacks the
// output does not have yet are interned node by node.
type Merger struct {
	opts  MergeOptions
	out   *Profile
	first bool
	// sampleIndex maps an aggregation key to its sample in out.Samples.
	sampleIndex map[sampleKey]int
	// stackByHash finds an output stack by the hash of its frames.
	stackByHash map[uint64]StackID

	// Per-Add scratch space, indexed by the added profile's ids.
	frameHash, stackHash []uint64
	frameMap             []FrameID // noFrame when not mapped yet
	stackMap             []StackID // NoStack when not mapped yet (but for 0)
}

const noFrame = ^FrameID(0)

type sampleKey struct {
	stack  StackID
	labels LabelSetID
	thread ThreadID
	typ    TypeID
	state  ThreadState
}

// NewMerger returns a Merger with the given options.
func NewMerger(opts MergeOptions) *Merger {
	m := &Merger{opts: opts, out: New(), first: true, stackByHash: map[uint64]StackID{}}
	if opts.Aggregate {
		m.sampleIndex = map[sampleKey]int{}
	}
	return m
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

// Add merges p into the result. p is not modified.
func (m *Merger) Add(p *Profile) {
	out := m.out
	extra := m.commonLabels(p.Labels)

	typeMap := make([]TypeID, len(p.Types))
	for i, t := range p.Types {
		typeMap[i] = out.AddType(t)
	}
	m.frameHash = p.frameHashes(true, m.frameHash)
	m.stackHash = p.stackHashes(m.frameHash, m.stackHash)
	m.frameMap = resize(m.frameMap, len(p.Frames))
	for i := range m.frameMap {
		m.frameMap[i] = noFrame
	}
	m.stackMap = resize(m.stackMap, len(p.stacks))
	threadMap := make([]ThreadID, len(p.Threads))
	if !m.opts.DropThreads {
		for i := 1; i < len(p.Threads); i++ {
			threadMap[i] = out.AddThread(p.Threads[i])
		}
	}
	labelMap := make([]LabelSetID, len(p.labelSets))
	for i, ls := range p.labelSets {
		if len(extra) > 0 {
			ls = extra.Merge(ls)
		}
		labelMap[i] = out.AddLabels(ls)
	}

	for _, s := range p.Samples {
		s.Stack = m.mapStack(p, s.Stack)
		s.Type = typeMap[s.Type]
		s.Thread = threadMap[s.Thread]
		s.Labels = labelMap[s.Labels]
		m.addSample(s)
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

// mapStack returns the output stack equal to stack s of p, adding the
// frames and stack nodes the output lacks.
func (m *Merger) mapStack(p *Profile, s StackID) StackID {
	if s == NoStack || m.stackMap[s] != NoStack {
		return m.stackMap[s]
	}
	h := m.stackHash[s]
	id, ok := m.stackByHash[h]
	if !ok {
		n := p.stacks[s]
		parent := m.mapStack(p, n.parent)
		f := m.frameMap[n.frame]
		if f == noFrame {
			f = m.out.AddFrame(p.Frames[n.frame])
			m.frameMap[n.frame] = f
		}
		id = m.out.Push(parent, f)
		m.stackByHash[h] = id
	}
	m.stackMap[s] = id
	return id
}

func (m *Merger) addSample(s Sample) {
	if !m.opts.Aggregate {
		m.out.Samples = append(m.out.Samples, s)
		return
	}
	k := sampleKey{s.Stack, s.Labels, s.Thread, s.Type, s.State}
	if i, ok := m.sampleIndex[k]; ok {
		m.out.Samples[i].Value += s.Value
		return
	}
	s.Time = 0
	m.sampleIndex[k] = len(m.out.Samples)
	m.out.Samples = append(m.out.Samples, s)
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
		index := make(map[sampleKey]int, len(m.sampleIndex))
		for k, i := range m.sampleIndex {
			k.labels = out.Samples[i].Labels
			index[k] = i
		}
		m.sampleIndex = index
	}
}
