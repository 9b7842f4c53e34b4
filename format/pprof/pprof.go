// Package pprof converts between sparkprof profiles and the pprof format
// (github.com/google/pprof/proto/profile.proto), read and written with
// github.com/google/pprof/profile.
package pprof

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	gprofile "github.com/google/pprof/profile"
	"github.com/klauspost/compress/gzip"

	"github.com/sparkprof/sparkprof/profile"
)

// MaxSize bounds the decompressed size of a pprof profile.
const MaxSize = 1 << 30

// Label names Encode adds to carry a sample's thread and thread state.
const (
	LabelThreadState = "thread_state"
	LabelThreadID    = "thread_id"
)

// Sniff reports whether head, the start of decompressed data, looks like
// a pprof profile: a protobuf message whose first field is a sample_type
// (field 1, length-delimited) holding a ValueType whose first field is a
// varint (type or unit, fields 1 and 2), as every pprof writer emits it.
func Sniff(head []byte) bool {
	if len(head) < 3 || head[0] != 0x0a {
		return false
	}
	// Skip the length varint.
	i := 1
	for i < len(head) && i < 6 && head[i]&0x80 != 0 {
		i++
	}
	i++
	return i < len(head) && (head[i] == 0x08 || head[i] == 0x10)
}

// knownTypes maps pprof sample types, by "type/unit", to sparkprof's.
var knownTypes = map[string]profile.SampleType{
	"cpu/nanoseconds":                  profile.TypeCPU,
	"wall/nanoseconds":                 profile.TypeWall,
	"samples/count":                    profile.TypeSamples,
	"itimer/count":                     profile.TypeItimer,
	"alloc_space/bytes":                profile.TypeAllocBytes,
	"alloc_in_new_tlab_bytes/bytes":    profile.TypeAllocBytes,
	"alloc_sample_bytes/bytes":         profile.TypeAllocBytes,
	"alloc_outside_tlab_bytes/bytes":   profile.TypeAllocBytes,
	"alloc_objects/count":              profile.TypeAllocObjects,
	"alloc_in_new_tlab_objects/count":  profile.TypeAllocObjects,
	"alloc_sample_objects/count":       profile.TypeAllocObjects,
	"alloc_outside_tlab_objects/count": profile.TypeAllocObjects,
	"contentions/count":                profile.TypeLockCount,
	"delay/nanoseconds":                profile.TypeLockDelay,
	"inuse_space/bytes":                profile.TypeLiveBytes,
	"inuse_objects/count":              profile.TypeLiveObjects,
	"live/count":                       profile.TypeLiveObjects,
}

// Decode parses a pprof profile, gzipped or not. Well-known sample types
// ("cpu/nanoseconds", "alloc_space/bytes", "contentions/count", ...) map to
// profile.TypeCPU, profile.TypeAllocBytes, ...; others keep their names.
// String labels become sample labels except "thread_name", which names the
// sample's thread; numeric labels become labels with the number as value
// (of several values per key, the first is kept). Inlined functions become
// frames of their own. Frames without function information are named by
// their address. The profile's time and duration set Start and End;
// samples have no time of their own.
func Decode(data []byte, source string) (*profile.Profile, error) {
	p := profile.New()
	p.Source = source
	data, err := gunzip(data, source)
	if err != nil {
		return p, err
	}
	gp, err := gprofile.ParseUncompressed(data)
	if err != nil {
		return p, &profile.DecodeError{Source: source, Offset: -1, Msg: "not a valid pprof profile", Err: err}
	}
	types, err := addTypes(p, gp.SampleType, source)
	if err != nil {
		return p, err
	}
	if gp.TimeNanos > 0 {
		p.Start = gp.TimeNanos
		if gp.DurationNanos > 0 {
			p.End = gp.TimeNanos + gp.DurationNanos
		}
	}

	// Each location is a run of frames, outermost first, pushed in one go.
	locFrames := map[uint64][]profile.FrameID{}
	for _, loc := range gp.Location {
		locFrames[loc.ID] = locationFrames(p, loc)
	}
	var ls profile.Labels
	for i, s := range gp.Sample {
		if len(s.Value) != len(types) {
			return p, &profile.DecodeError{Source: source, Offset: -1, Field: fmt.Sprintf("sample[%d]", i),
				Msg: fmt.Sprintf("%d values, want one per sample type (%d)", len(s.Value), len(types))}
		}
		stack := profile.NoStack
		for j := len(s.Location) - 1; j >= 0; j-- {
			if s.Location[j] == nil {
				return p, &profile.DecodeError{Source: source, Offset: -1, Field: fmt.Sprintf("sample[%d].location_id[%d]", i, j),
					Msg: "refers to no location"}
			}
			for _, f := range locFrames[s.Location[j].ID] {
				stack = p.Push(stack, f)
			}
		}
		var thread profile.Thread
		ls, thread = sampleLabels(s, ls[:0])
		var state profile.ThreadState
		if vs := s.Label[LabelThreadState]; len(vs) > 0 {
			state = profile.ParseThreadState(vs[0])
		}
		labels := p.AddLabels(slicesClone(ls))
		tid := p.AddThread(thread)
		for j, v := range s.Value {
			if v == 0 {
				continue
			}
			p.Add(profile.Sample{Stack: stack, Value: v, Labels: labels, Thread: tid, Type: types[j], State: state})
		}
	}
	return p, nil
}

// gunzip returns data decompressed when it is gzipped, else data itself.
func gunzip(data []byte, source string) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, &profile.DecodeError{Source: source, Offset: 0, Msg: "bad gzip header", Err: err}
	}
	raw, err := io.ReadAll(io.LimitReader(zr, MaxSize+1))
	if err != nil {
		return nil, &profile.DecodeError{Source: source, Offset: -1, Msg: "decompressing gzip", Err: err}
	}
	if len(raw) > MaxSize {
		return nil, &profile.DecodeError{Source: source, Offset: -1, Msg: fmt.Sprintf("decompressed profile exceeds %d bytes", MaxSize)}
	}
	return raw, nil
}

// addTypes adds the pprof sample types to p, well-known ones as
// sparkprof's (knownTypes), and returns their ids in order.
func addTypes(p *profile.Profile, sampleTypes []*gprofile.ValueType, source string) ([]profile.TypeID, error) {
	if len(sampleTypes) > 256 {
		return nil, &profile.DecodeError{Source: source, Offset: -1, Field: "sample_type",
			Msg: fmt.Sprintf("%d sample types, at most 256 supported", len(sampleTypes))}
	}
	types := make([]profile.TypeID, len(sampleTypes))
	for i, vt := range sampleTypes {
		t, ok := knownTypes[vt.Type+"/"+vt.Unit]
		if _, dup := p.TypeIndex(t); !ok || dup {
			t = profile.SampleType{Name: vt.Type, Unit: vt.Unit}
		}
		if _, dup := p.TypeIndex(t); dup {
			return nil, &profile.DecodeError{Source: source, Offset: -1, Field: "sample_type",
				Msg: fmt.Sprintf("sample type %v appears twice", t)}
		}
		types[i] = p.AddType(t)
	}
	return types, nil
}

// sampleLabels appends the labels of pprof sample s to ls, the first value
// of each key, and returns them with the thread its thread_name and
// thread_id labels name; the thread state label is left out.
func sampleLabels(s *gprofile.Sample, ls profile.Labels) (profile.Labels, profile.Thread) {
	var thread profile.Thread
	for k, vs := range s.Label {
		if len(vs) == 0 {
			continue
		}
		switch k {
		case profile.LabelThreadName:
			thread.Name = vs[0]
		case LabelThreadState:
		default:
			ls = append(ls, profile.Label{Name: k, Value: vs[0]})
		}
	}
	for k, vs := range s.NumLabel {
		if len(vs) == 0 {
			continue
		}
		if k == LabelThreadID {
			thread.ID = vs[0]
			continue
		}
		ls = append(ls, profile.Label{Name: k, Value: strconv.FormatInt(vs[0], 10)})
	}
	return ls, thread
}

func slicesClone(ls profile.Labels) profile.Labels {
	if len(ls) == 0 {
		return nil
	}
	return append(profile.Labels(nil), ls...)
}

// locationFrames returns the frames of a location, outermost first.
func locationFrames(p *profile.Profile, loc *gprofile.Location) []profile.FrameID {
	if len(loc.Line) == 0 {
		f := profile.Frame{Name: fmt.Sprintf("0x%x", loc.Address), Kind: profile.KindNative}
		if loc.Mapping != nil && loc.Mapping.File != "" {
			f.Name = path.Base(loc.Mapping.File) + "+" + f.Name
			f.File = loc.Mapping.File
		}
		return []profile.FrameID{p.AddFrame(f)}
	}
	out := make([]profile.FrameID, 0, len(loc.Line))
	for i := len(loc.Line) - 1; i >= 0; i-- {
		ln := loc.Line[i]
		f := profile.Frame{Line: int32(ln.Line)}
		if ln.Function != nil {
			f.Name, f.File = ln.Function.Name, ln.Function.Filename
		}
		if f.Name == "" {
			f.Name = fmt.Sprintf("0x%x", loc.Address)
		}
		f.Kind = kind(f, loc.Mapping)
		if f.Kind == profile.KindPython && f.File != "" && !strings.HasPrefix(f.Name, f.File+":") {
			// Named as PySpark's, cProfile's and py-spy's Python frames are.
			f.Name = f.File + ":" + f.Name
		}
		out = append(out, p.AddFrame(f))
	}
	return out
}

// kind guesses a frame's kind from its file name, falling back on its
// mapping (the kernel) and name (see profile.GuessKind).
func kind(f profile.Frame, m *gprofile.Mapping) profile.FrameKind {
	switch path.Ext(f.File) {
	case ".java", ".scala", ".kt", ".groovy", ".clj":
		return profile.KindJava
	case ".py":
		return profile.KindPython
	case ".go", ".c", ".cc", ".cpp", ".h", ".hpp", ".rs", ".s", ".S":
		return profile.KindNative
	}
	if m != nil && strings.Contains(m.File, "kernel") {
		return profile.KindKernel
	}
	if strings.HasSuffix(f.Name, "_[k]") {
		return profile.KindKernel
	}
	return profile.GuessKind(f.Name)
}

// EncodeOptions control Encode.
type EncodeOptions struct {
	// Types selects the sample types to write, in this order; nil selects
	// all of the profile's types.
	Types []profile.SampleType
}

// Encode writes p as one gzipped pprof profile holding the selected
// sample types. The default sample type, and the period type, is the
// natural one of the profile: CPU time if selected, else wall time, else
// the first type; the period is the largest value every sample of it is a
// multiple of (the sampling interval of a recording's time samples). Samples with the same stack, labels, thread and state are
// merged into one pprof sample with one value per type. A sample's labels
// (the profile's overridden by its own) become string labels; its thread
// becomes the "thread_name" label (and the numeric LabelThreadID label when
// known) and its state the LabelThreadState label. Per-sample times are not
// kept: pprof has none.
func Encode(w io.Writer, p *profile.Profile, opts EncodeOptions) error {
	types := opts.Types
	if types == nil {
		types = p.Types
	}
	col := make([]int, len(p.Types)) // profile TypeID -> pprof value index, or -1
	for i := range col {
		col[i] = -1
	}
	gp := &gprofile.Profile{
		Mapping: []*gprofile.Mapping{{ID: 1, HasFunctions: true, HasFilenames: true, HasLineNumbers: true}},
	}
	for i, t := range types {
		id, ok := p.TypeIndex(t)
		if !ok {
			return fmt.Errorf("pprof: profile has no sample type %v", t)
		}
		if col[id] >= 0 {
			return fmt.Errorf("pprof: sample type %v selected twice", t)
		}
		col[id] = i
		gp.SampleType = append(gp.SampleType, &gprofile.ValueType{Type: t.Name, Unit: t.Unit})
	}
	def := naturalType(types)
	if def >= 0 {
		gp.DefaultSampleType = types[def].Name
		gp.PeriodType = &gprofile.ValueType{Type: types[def].Name, Unit: types[def].Unit}
	}
	if p.Start > 0 {
		gp.TimeNanos = p.Start
		if p.End > p.Start {
			gp.DurationNanos = p.End - p.Start
		}
	}

	e := encoder{p: p, gp: gp, funcs: map[funcKey]*gprofile.Function{}, locs: make([]*gprofile.Location, len(p.Frames)),
		stacks: map[profile.StackID][]*gprofile.Location{}, labelMaps: map[labelKey]map[string][]string{}, threadIDs: map[profile.ThreadID]map[string][]int64{}}
	type sampleKey struct {
		stack profile.StackID
		labelKey
	}
	merged := map[sampleKey]*gprofile.Sample{}
	var keys []sampleKey
	values := make([]int64, 0, 1024*len(types)) // the samples' values, allocated in runs
	for _, s := range p.Samples {
		c := col[s.Type]
		if c < 0 {
			continue
		}
		k := sampleKey{s.Stack, labelKey{s.Labels, s.Thread, s.State}}
		gs := merged[k]
		if gs == nil {
			if cap(values)-len(values) < len(types) {
				values = make([]int64, 0, 1024*len(types))
			}
			values = values[:len(values)+len(types)]
			// Samples share their stack's locations and their label
			// maps: the library only reads them, and a merged app has
			// many samples per stack and per label set.
			gs = &gprofile.Sample{Value: values[len(values)-len(types) : len(values) : len(values)],
				Location: e.stack(s.Stack), Label: e.labels(k.labelKey)}
			if t := p.Threads[s.Thread]; t.ID != 0 {
				gs.NumLabel = e.threadID(s.Thread)
			}
			merged[k] = gs
			keys = append(keys, k)
		}
		gs.Value[c] += s.Value
		if c == def {
			gp.Period = gcd(gp.Period, s.Value)
		}
	}
	// Samples in first-seen order, so that output is deterministic.
	for _, k := range keys {
		gp.Sample = append(gp.Sample, merged[k])
	}
	if err := gp.CheckValid(); err != nil {
		return fmt.Errorf("pprof: building profile: %w", err)
	}
	if err := gp.Write(w); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	return nil
}

// naturalType returns the index among types of the one a profile of them
// is read as by default: CPU time for a CPU profile, else wall time, else
// the first; -1 when there are none.
func naturalType(types []profile.SampleType) int {
	for _, fam := range []string{"cpu", "wall"} {
		for i, t := range types {
			if t.Family() == fam {
				return i
			}
		}
	}
	if len(types) == 0 {
		return -1
	}
	return 0
}

// gcd returns the greatest common divisor of a and b (of their absolute
// values; gcd(0, b) is |b|).
func gcd(a, b int64) int64 {
	a, b = max(a, -a), max(b, -b)
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

type funcKey struct {
	name, file string
}

type encoder struct {
	p         *profile.Profile
	gp        *gprofile.Profile
	funcs     map[funcKey]*gprofile.Function
	locs      []*gprofile.Location // by FrameID
	stacks    map[profile.StackID][]*gprofile.Location
	labelMaps map[labelKey]map[string][]string
	threadIDs map[profile.ThreadID]map[string][]int64
}

// labelKey is what a sample's pprof labels are made of.
type labelKey struct {
	labels profile.LabelSetID
	thread profile.ThreadID
	state  profile.ThreadState
}

// stack returns the pprof locations of stack st, leaf first.
func (e *encoder) stack(st profile.StackID) []*gprofile.Location {
	if ls, ok := e.stacks[st]; ok {
		return ls
	}
	frames := e.p.Stack(st, nil)
	ls := make([]*gprofile.Location, len(frames))
	for i, f := range frames {
		ls[len(frames)-1-i] = e.location(f)
	}
	e.stacks[st] = ls
	return ls
}

// threadID returns the numeric labels of thread t.
func (e *encoder) threadID(t profile.ThreadID) map[string][]int64 {
	m, ok := e.threadIDs[t]
	if !ok {
		m = map[string][]int64{LabelThreadID: {e.p.Threads[t].ID}}
		e.threadIDs[t] = m
	}
	return m
}

// location returns the pprof location of frame f, adding it if needed.
func (e *encoder) location(f profile.FrameID) *gprofile.Location {
	if l := e.locs[f]; l != nil {
		return l
	}
	fr := e.p.Frames[f]
	k := funcKey{fr.Name, fr.File}
	fn := e.funcs[k]
	if fn == nil {
		fn = &gprofile.Function{ID: uint64(len(e.gp.Function) + 1), Name: fr.Name, SystemName: fr.Name, Filename: fr.File}
		e.gp.Function = append(e.gp.Function, fn)
		e.funcs[k] = fn
	}
	l := &gprofile.Location{
		ID:      uint64(len(e.gp.Location) + 1),
		Mapping: e.gp.Mapping[0],
		Line:    []gprofile.Line{{Function: fn, Line: int64(fr.Line)}},
	}
	e.gp.Location = append(e.gp.Location, l)
	e.locs[f] = l
	return l
}

// labels returns the pprof string labels of samples with key k.
func (e *encoder) labels(k labelKey) map[string][]string {
	if m, ok := e.labelMaps[k]; ok {
		return m
	}
	m := e.newLabels(k)
	e.labelMaps[k] = m
	return m
}

func (e *encoder) newLabels(k labelKey) map[string][]string {
	ls := e.p.SampleLabels(profile.Sample{Labels: k.labels})
	t := e.p.Threads[k.thread]
	if len(ls) == 0 && t.Name == "" && k.state == profile.StateUnknown {
		return nil
	}
	m := make(map[string][]string, len(ls)+2)
	for _, l := range ls {
		m[l.Name] = []string{l.Value}
	}
	if t.Name != "" {
		m[profile.LabelThreadName] = []string{t.Name}
	}
	if k.state != profile.StateUnknown {
		m[LabelThreadState] = []string{k.state.String()}
	}
	return m
}
