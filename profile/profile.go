// Package profile is sparkprof's profile model: frames, deduplicated stacks,
// typed samples with time, thread and labels, and metric series.
//
// Every decoder produces a *Profile and every encoder, the server and the UI
// consume one. Stacks are interned in a prefix tree (a stack is identified by
// its leaf node), so a profile holds each unique stack once and a sample is a
// stack id plus a value. Merging profiles therefore costs time proportional to
// the unique frames and stacks of the inputs, not to their tree sizes.
package profile

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// FrameKind says what kind of code a frame executes.
type FrameKind uint8

// Frame kinds.
const (
	KindUnknown FrameKind = iota
	KindJava              // interpreted, JIT-compiled or inlined JVM code
	KindNative            // native (C/C++) code in user space
	KindKernel            // operating-system kernel code
	KindPython            // Python code (PySpark workers)
)

var kindNames = [...]string{"unknown", "java", "native", "kernel", "python"}

// String returns the lower-case name of the kind.
func (k FrameKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Frame is one function activation on a stack.
type Frame struct {
	// Name is the function as people read it: "java.lang.Thread.run" for JVM
	// code, "helper.py:secondsSleep" for Python, the symbol for native code.
	Name string
	File string
	Line int32
	Kind FrameKind
}

// Class returns the class part of a JVM frame's name ("java.lang.Thread" of
// "java.lang.Thread.run"), or "" when the name has no class.
func (f Frame) Class() string {
	if f.Kind != KindJava {
		return ""
	}
	if i := strings.LastIndexByte(f.Name, '.'); i > 0 {
		return f.Name[:i]
	}
	return ""
}

// Method returns the method part of a JVM frame's name, or the whole name.
func (f Frame) Method() string {
	if f.Kind == KindJava {
		if i := strings.LastIndexByte(f.Name, '.'); i > 0 {
			return f.Name[i+1:]
		}
	}
	return f.Name
}

// FrameID indexes Profile.Frames.
type FrameID uint32

// StackID identifies an interned stack. NoStack (0) is the empty stack.
type StackID uint32

// NoStack is the empty stack: a sample with no frames.
const NoStack StackID = 0

// ThreadID indexes Profile.Threads. NoThread (0) means unknown.
type ThreadID uint32

// NoThread marks a sample whose thread is unknown.
const NoThread ThreadID = 0

// LabelSetID indexes the profile's label sets. NoLabels (0) is the empty set.
type LabelSetID uint32

// NoLabels is the empty label set.
const NoLabels LabelSetID = 0

// Thread is a thread a sample was taken on.
type Thread struct {
	ID   int64 // JVM or OS thread id; 0 when unknown
	Name string
}

// ThreadState is the state of the sampled thread at the time of a sample.
type ThreadState uint8

// Thread states, following java.lang.Thread.State plus the states
// async-profiler reports for native code.
const (
	StateUnknown ThreadState = iota
	StateRunnable
	StateBlocked
	StateWaiting
	StateTimedWaiting
	StateSleeping // async-profiler's STATE_SLEEPING: off-CPU in wall mode
	StateNative   // running native code or blocked in I/O
	StateNew
	StateTerminated
)

var stateNames = [...]string{"", "RUNNABLE", "BLOCKED", "WAITING", "TIMED_WAITING", "SLEEPING", "NATIVE", "NEW", "TERMINATED"}

// String returns the state as Java spells it, or "" when unknown.
func (s ThreadState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// ParseThreadState maps a Java, JFR or async-profiler state name
// ("RUNNABLE", "STATE_RUNNABLE", "TIMED_WAITING", ...) to a ThreadState.
func ParseThreadState(s string) ThreadState {
	s = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "STATE_")
	switch s {
	case "RUNNABLE", "RUNNING", "DEFAULT":
		return StateRunnable
	case "BLOCKED":
		return StateBlocked
	case "WAITING", "PARKED", "CONTENDED":
		return StateWaiting
	case "TIMED_WAITING":
		return StateTimedWaiting
	case "SLEEPING", "IDLE":
		return StateSleeping
	case "IN_NATIVE", "NATIVE", "IO", "SYSCALL":
		return StateNative
	case "NEW":
		return StateNew
	case "TERMINATED":
		return StateTerminated
	}
	return StateUnknown
}

// SampleType names what a sample's value measures.
type SampleType struct {
	Name string `json:"name"` // "cpu", "wall", "alloc_bytes", ...
	Unit string `json:"unit"` // "nanoseconds", "bytes", "count", ...
}

// String returns "name:unit".
func (t SampleType) String() string { return t.Name + ":" + t.Unit }

// The sample types sparkprof's decoders produce.
var (
	TypeCPU          = SampleType{"cpu", "nanoseconds"}
	TypeWall         = SampleType{"wall", "nanoseconds"}
	TypeItimer       = SampleType{"itimer", "count"} // cpu samples without a known period
	TypeSamples      = SampleType{"samples", "count"}
	TypeAllocBytes   = SampleType{"alloc_bytes", "bytes"}
	TypeAllocObjects = SampleType{"alloc_objects", "count"}
	TypeLockCount    = SampleType{"lock_contentions", "count"}
	TypeLockDelay    = SampleType{"lock_delay", "nanoseconds"}
	TypeLiveObjects  = SampleType{"live_objects", "count"}
	TypeLiveBytes    = SampleType{"live_bytes", "bytes"}
)

// Family returns the profile family a sample type belongs to, as the CLI's
// --type flag and the UI name them: "cpu", "wall", "alloc", "lock", "live",
// or the type's own name.
func (t SampleType) Family() string {
	switch t.Name {
	case "cpu", "itimer":
		return "cpu"
	case "alloc_bytes", "alloc_objects":
		return "alloc"
	case "lock_contentions", "lock_delay":
		return "lock"
	case "live_objects", "live_bytes":
		return "live"
	}
	return t.Name
}

// TypeID indexes Profile.Types.
type TypeID uint8

// Sample is one observation: Value units of Types[Type] on a stack.
// (The 64-bit fields come first, so a sample takes 32 bytes, not 40.)
type Sample struct {
	Value  int64
	Time   int64 // Unix nanoseconds; 0 when the source has no time
	Stack  StackID
	Labels LabelSetID
	Thread ThreadID
	Type   TypeID
	State  ThreadState
}

// Point is one value of a metric series.
type Point struct {
	Time  int64 // Unix nanoseconds
	Value float64
}

// Series is a metric over time: GC pauses, CPU load, heap used, RSS, ...
type Series struct {
	Name   string // e.g. "jvm.gc.pause", "process.cpu.load"
	Unit   string // e.g. "nanoseconds", "ratio", "bytes"
	Labels Labels
	Points []Point
}

// Profile is a set of samples with their frames, stacks, threads and labels.
// The zero value is not ready for use; call New.
type Profile struct {
	// Types lists the sample types; Sample.Type indexes it.
	Types []SampleType
	// Frames is the frame table; FrameID indexes it.
	Frames []Frame
	// Threads is the thread table; ThreadID indexes it, entry 0 is unknown.
	Threads []Thread
	// Samples holds the observations in the order they were added.
	Samples []Sample
	// Labels apply to every sample (app, executor, host, role, ...).
	Labels Labels
	// Series are metric series recorded with the profile.
	Series []Series
	// Start and End bound the recording in Unix nanoseconds (0 if unknown).
	Start, End int64
	// Source names where the profile came from, for messages.
	Source string
	// Warnings describe data that could not be decoded but was skipped.
	Warnings []string

	frameIndex map[Frame]FrameID
	stacks     []stackNode // stacks[0] is the empty stack
	stackIndex stackIndex  // built by the first Push: nil slots in a new profile and after DropIndexes
	threadIdx  map[Thread]ThreadID
	labelSets  []Labels // labelSets[0] is empty
	labelIndex map[string]LabelSetID
	typeIndex  map[SampleType]TypeID
}

type stackNode struct {
	parent StackID
	frame  FrameID
}

func (n stackNode) key() uint64 { return uint64(n.parent)<<32 | uint64(n.frame) }

// New returns an empty profile.
func New() *Profile {
	return &Profile{
		Threads:    []Thread{{}},
		frameIndex: map[Frame]FrameID{},
		stacks:     []stackNode{{}},
		threadIdx:  map[Thread]ThreadID{{}: NoThread},
		labelSets:  []Labels{nil}, // labelIndex is built by the first AddLabels
		typeIndex:  map[SampleType]TypeID{},
	}
}

// Grow makes room for about frames more frames and stacks more stacks, so
// that interning them does not grow the indexes step by step. It only
// sizes indexes that are still empty, taking them from profiles that
// dropped theirs when it can.
func (p *Profile) Grow(frames, stacks int) {
	if len(p.frameIndex) == 0 && len(p.Frames) == 0 {
		if m, ok := frameIndexes.Get().(map[Frame]FrameID); ok {
			p.frameIndex = m
		} else {
			p.frameIndex = make(map[Frame]FrameID, frames)
		}
	}
	if p.stackIndex.count == 0 && len(p.stacks) <= 1 && len(p.stackIndex.slots) < 2*stacks {
		p.stackIndex.drop()
		p.stackIndex = newStackIndex(stacks)
	}
	p.Frames = grow(p.Frames, frames)
	p.stacks = grow(p.stacks, stacks)
}

// GrowLabelSets makes room for about n more label sets (AppendLabels), as
// a decoder does that knows how many contexts a recording names.
func (p *Profile) GrowLabelSets(n int) { p.labelSets = grow(p.labelSets, n) }

// Indexes that intern frames and stacks, given up by DropIndexes for Grow
// to reuse: a decoder fills one per upload, and a new map of tens of
// thousands of entries costs more in fresh pages than in interning.
var (
	frameIndexes sync.Pool // of map[Frame]FrameID
)

// maxPooledIndex bounds the entries of an index kept for reuse: clearing
// a map costs its size, however few entries the next profile needs.
const maxPooledIndex = 1 << 18

// DropIndexes gives up the indexes that intern p's frames and stacks, for
// a profile that is complete: they are most of its memory beyond its
// tables. AddFrame, AddStack and Push build them again when called. Copies
// of p made before share the indexes given up: they must not intern
// afterwards.
func (p *Profile) DropIndexes() {
	if m := p.frameIndex; m != nil && len(m) <= maxPooledIndex {
		clear(m)
		frameIndexes.Put(m)
	}
	p.stackIndex.drop()
	p.frameIndex = nil
}

// indexFrames builds the frame index after DropIndexes.
func (p *Profile) indexFrames() {
	p.frameIndex = make(map[Frame]FrameID, len(p.Frames))
	for i, f := range p.Frames {
		if _, ok := p.frameIndex[f]; !ok {
			p.frameIndex[f] = FrameID(i)
		}
	}
}

// indexStacks brings the stack index up to date: builds it after
// DropIndexes, and takes in the stacks AppendStack added.
func (p *Profile) indexStacks() {
	x := &p.stackIndex
	if x.slots == nil {
		*x = newStackIndex(len(p.stacks))
	}
	for i := x.indexed + 1; i < len(p.stacks); i++ { // stacks[0], the empty stack, is not interned
		x.intern(p.stacks, p.stacks[i], StackID(i))
	}
	x.indexed = len(p.stacks) - 1
}

// AddType returns the id of sample type t, adding it if needed.
func (p *Profile) AddType(t SampleType) TypeID {
	if id, ok := p.typeIndex[t]; ok {
		return id
	}
	if len(p.Types) > 255 {
		panic("profile: more than 256 sample types")
	}
	id := TypeID(len(p.Types))
	p.Types = append(p.Types, t)
	p.typeIndex[t] = id
	return id
}

// SetType changes what sample type id is, for a format whose samples carry
// no type of their own and whose sender said what they measure. t must not
// be another of p's types.
func (p *Profile) SetType(id TypeID, t SampleType) {
	if other, ok := p.typeIndex[t]; ok && other != id {
		panic(fmt.Sprintf("profile: SetType(%d, %v): the profile has it as type %d", id, t, other))
	}
	delete(p.typeIndex, p.Types[id])
	p.Types[id] = t
	p.typeIndex[t] = id
}

// TypeIndex returns the id of sample type t and whether the profile has it.
func (p *Profile) TypeIndex(t SampleType) (TypeID, bool) {
	id, ok := p.typeIndex[t]
	return id, ok
}

// AddFrame returns the id of frame f, adding it if needed.
func (p *Profile) AddFrame(f Frame) FrameID {
	if p.frameIndex == nil {
		p.indexFrames()
	}
	if id, ok := p.frameIndex[f]; ok {
		return id
	}
	id := FrameID(len(p.Frames))
	p.Frames = append(p.Frames, f)
	p.frameIndex[f] = id
	return id
}

// AddStack interns a stack given root first and returns its id.
func (p *Profile) AddStack(rootFirst []FrameID) StackID {
	s := NoStack
	for _, f := range rootFirst {
		s = p.Push(s, f)
	}
	return s
}

// Push returns the id of the stack that is parent with frame f called on top.
func (p *Profile) Push(parent StackID, f FrameID) StackID {
	if p.stackIndex.indexed != len(p.stacks)-1 {
		p.indexStacks()
	}
	n := stackNode{parent, f}
	id, found := p.stackIndex.intern(p.stacks, n, StackID(len(p.stacks)))
	if !found {
		p.stacks = append(p.stacks, n)
		p.stackIndex.indexed++
	}
	return id
}

// AppendStack adds the stack that is parent with frame f called on top,
// which p must not have yet, and returns its id. It spares Push's lookup
// for a caller that knows the stack is new (a decoder extending a stack
// trace past the part it converted before); the index takes the stack in
// at the next Push.
func (p *Profile) AppendStack(parent StackID, f FrameID) StackID {
	p.stacks = append(p.stacks, stackNode{parent, f})
	return StackID(len(p.stacks) - 1)
}

// Stack appends the frames of stack s to buf, root first, and returns it.
func (p *Profile) Stack(s StackID, buf []FrameID) []FrameID {
	start := len(buf)
	for ; s != NoStack; s = p.stacks[s].parent {
		buf = append(buf, p.stacks[s].frame)
	}
	for i, j := start, len(buf)-1; i < j; i, j = i+1, j-1 {
		buf[i], buf[j] = buf[j], buf[i]
	}
	return buf
}

// Leaf returns the innermost frame of a non-empty stack.
func (p *Profile) Leaf(s StackID) FrameID { return p.stacks[s].frame }

// Parent returns the stack without its innermost frame.
func (p *Profile) Parent(s StackID) StackID { return p.stacks[s].parent }

// MemSize estimates the heap bytes p holds: its tables and samples at their
// capacity, the indexes it has built, its label sets and series. Strings
// count in full even where profiles share them (a decoder keeps the names
// of a JVM's frames between its uploads), so it errs high. It sizes caches
// and memory budgets, not exact accounting.
func (p *Profile) MemSize() int64 {
	const (
		mapSlot = 48 // a map entry with its share of the table, roughly
		frame   = int64(unsafe.Sizeof(Frame{}))
		thread  = int64(unsafe.Sizeof(Thread{}))
		stack   = int64(unsafe.Sizeof(stackNode{}))
		sample  = int64(unsafe.Sizeof(Sample{}))
		point   = int64(unsafe.Sizeof(Point{}))
		label   = int64(unsafe.Sizeof(Label{}))
	)
	n := int64(cap(p.Frames))*frame + int64(cap(p.Threads))*thread + int64(cap(p.Samples))*sample +
		int64(cap(p.stacks))*stack + int64(len(p.stackIndex.slots))*8 +
		int64(len(p.frameIndex)+len(p.threadIdx)+len(p.labelIndex))*mapSlot
	for _, f := range p.Frames {
		n += int64(len(f.Name) + len(f.File))
	}
	for _, t := range p.Threads {
		n += int64(len(t.Name))
	}
	for _, ls := range p.labelSets {
		n += 64 + int64(len(ls))*label
		for _, l := range ls {
			n += int64(len(l.Name) + len(l.Value))
		}
	}
	for _, s := range p.Series {
		n += int64(cap(s.Points)) * point
	}
	return n
}

// NumLabelSets returns the number of label sets, NoLabels included.
func (p *Profile) NumLabelSets() int { return len(p.labelSets) }

// NumStacks returns the number of interned stacks, the empty one included.
func (p *Profile) NumStacks() int { return len(p.stacks) }

// AddThread returns the id of thread t, adding it if needed.
func (p *Profile) AddThread(t Thread) ThreadID {
	if id, ok := p.threadIdx[t]; ok {
		return id
	}
	id := ThreadID(len(p.Threads))
	p.Threads = append(p.Threads, t)
	p.threadIdx[t] = id
	return id
}

// AddLabels returns the id of label set ls, adding it if needed. The set is
// normalised (sorted, empty values and duplicate names dropped).
func (p *Profile) AddLabels(ls Labels) LabelSetID {
	ls = ls.Normalize()
	key := ls.key()
	if p.labelIndex == nil {
		// A decoded profile has none until it is added to.
		p.labelIndex = make(map[string]LabelSetID, len(p.labelSets)+1)
		for i, set := range p.labelSets {
			p.labelIndex[set.key()] = LabelSetID(i)
		}
	}
	if id, ok := p.labelIndex[key]; ok {
		return id
	}
	id := LabelSetID(len(p.labelSets))
	p.labelSets = append(p.labelSets, ls)
	p.labelIndex[key] = id
	return id
}

// AppendLabels adds label set ls and returns its id without looking for an
// equal set first, so that a decoded profile of many sets need not build
// their index to add a few (a query's join to task windows). p may then
// hold equal sets under two ids; whatever reads labels by value (a
// Merger, a Filter) treats them alike.
func (p *Profile) AppendLabels(ls Labels) LabelSetID {
	ls = ls.Normalize()
	id := LabelSetID(len(p.labelSets))
	p.labelSets = append(p.labelSets, ls)
	if p.labelIndex != nil {
		k := ls.key()
		if _, ok := p.labelIndex[k]; !ok {
			p.labelIndex[k] = id
		}
	}
	return id
}

// OwnLabelSets gives p its own copy of the label-set table, so that label
// sets added to a shallow copy of a shared profile (cp := *p) leave the
// original unchanged.
func (p *Profile) OwnLabelSets() {
	p.labelSets = slices.Clip(p.labelSets)  // appends reallocate
	p.labelIndex = maps.Clone(p.labelIndex) // nil stays nil: AddLabels builds p's own
}

// LabelAll gives every sample of p the labels ls: p's labels take them,
// and the samples' own labels of the same names are dropped, so that ls
// take precedence over them (as Pyroscope gives an upload's labels
// precedence over a pprof's sample labels). It changes p's label sets in
// place: p must own them (OwnLabelSets).
func (p *Profile) LabelAll(ls Labels) {
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Name
	}
	for i, set := range p.labelSets {
		if slices.ContainsFunc(set, func(l Label) bool { return slices.Contains(names, l.Name) }) {
			p.labelSets[i] = set.Without(names...)
			p.labelIndex = nil // sets may be equal now; AddLabels indexes them anew
		}
	}
	p.Labels = p.Labels.Merge(ls)
}

// LabelSet returns the labels of set id (nil for NoLabels). Callers must not
// modify the result.
func (p *Profile) LabelSet(id LabelSetID) Labels { return p.labelSets[id] }

// SampleLabels returns every label of sample s: the profile's labels
// overridden by the sample's own.
func (p *Profile) SampleLabels(s Sample) Labels {
	own := p.labelSets[s.Labels]
	if len(own) == 0 {
		return p.Labels
	}
	if len(p.Labels) == 0 {
		return own
	}
	return p.Labels.Merge(own)
}

// Label returns the value of label name for sample s, or "".
func (p *Profile) Label(s Sample, name string) string {
	if v, ok := p.labelSets[s.Labels].Get(name); ok {
		return v
	}
	v, _ := p.Labels.Get(name)
	return v
}

// Add appends a sample.
func (p *Profile) Add(s Sample) { p.Samples = append(p.Samples, s) }

// AddValues returns a+b, sample values or their sums, held at the bounds
// of int64 rather than wrapping past them: a sum too large to hold stays
// the largest value, never turns negative.
func AddValues(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// Total returns the sum of values of sample type t.
func (p *Profile) Total(t TypeID) int64 {
	var sum int64
	for _, s := range p.Samples {
		if s.Type == t {
			sum = AddValues(sum, s.Value)
		}
	}
	return sum
}

// Warnf records a warning about data that was skipped.
func (p *Profile) Warnf(format string, args ...any) {
	p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
}

// FindType returns the sample type of p named by want: a "name:unit", a
// type name, or a family ("cpu", "wall", "alloc", "lock", "live"), the
// exact names first.
func (p *Profile) FindType(want string) (SampleType, bool) { return FindType(p.Types, want) }

// FindType returns the type of types named by want, as Profile.FindType.
func FindType(types []SampleType, want string) (SampleType, bool) {
	for _, t := range types {
		if t.Name == want || t.String() == want {
			return t, true
		}
	}
	for _, t := range types {
		if t.Family() == want {
			return t, true
		}
	}
	return SampleType{}, false
}
