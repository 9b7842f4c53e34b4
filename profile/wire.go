package profile

import (
	"bytes"
	"encoding/gob"
	"fmt"
)

// wireProfile is the stored form of a Profile: its tables as columns.
type wireProfile struct {
	Types       []SampleType
	Frames      []Frame
	StackParent []StackID // per stack, from stack 1
	StackFrame  []FrameID
	Threads     []Thread // from thread 1
	LabelSets   []Labels // from set 1
	Stack       []StackID
	Value       []int64
	Time        []int64
	SampleLabel []LabelSetID
	Thread      []ThreadID
	Type        []TypeID
	State       []ThreadState
	Labels      Labels
	Series      []Series
	Start, End  int64
	Source      string
	Warnings    []string
}

// MarshalBinary encodes the profile with all its tables, for storage.
func (p *Profile) MarshalBinary() ([]byte, error) {
	w := wireProfile{
		Types: p.Types, Frames: p.Frames, Labels: p.Labels, Series: p.Series,
		Start: p.Start, End: p.End, Source: p.Source, Warnings: p.Warnings,
	}
	for _, n := range p.stacks[1:] {
		w.StackParent = append(w.StackParent, n.parent)
		w.StackFrame = append(w.StackFrame, n.frame)
	}
	w.Threads = p.Threads[1:]
	w.LabelSets = p.labelSets[1:]
	n := len(p.Samples)
	w.Stack, w.Value, w.Time = make([]StackID, n), make([]int64, n), make([]int64, n)
	w.SampleLabel, w.Thread, w.Type, w.State = make([]LabelSetID, n), make([]ThreadID, n), make([]TypeID, n), make([]ThreadState, n)
	for i, s := range p.Samples {
		w.Stack[i], w.Value[i], w.Time[i] = s.Stack, s.Value, s.Time
		w.SampleLabel[i], w.Thread[i], w.Type[i], w.State[i] = s.Labels, s.Thread, s.Type, s.State
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&w); err != nil {
		return nil, fmt.Errorf("encode profile: %w", err)
	}
	return b.Bytes(), nil
}

// UnmarshalBinary restores a profile written by MarshalBinary into p,
// which must be new. Data with ids out of range is an error.
func (p *Profile) UnmarshalBinary(data []byte) error {
	var w wireProfile
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&w); err != nil {
		return fmt.Errorf("decode profile: %w", err)
	}
	*p = *New()
	if len(w.Types) > 256 {
		return fmt.Errorf("decode profile: %d sample types, at most 256", len(w.Types))
	}
	for _, t := range w.Types {
		p.AddType(t)
	}
	for _, f := range w.Frames {
		if id := p.AddFrame(f); int(id) != len(p.Frames)-1 {
			return fmt.Errorf("decode profile: frame %d repeats frame %d", len(p.Frames), id)
		}
	}
	if len(w.StackParent) != len(w.StackFrame) {
		return fmt.Errorf("decode profile: stack columns differ in length")
	}
	for i, parent := range w.StackParent {
		f := w.StackFrame[i]
		if int(parent) > i || int(f) >= len(p.Frames) {
			return fmt.Errorf("decode profile: stack %d out of range", i+1)
		}
		if id := p.Push(parent, f); int(id) != i+1 {
			return fmt.Errorf("decode profile: stack %d repeats stack %d", i+1, id)
		}
	}
	for _, t := range w.Threads {
		p.Threads = append(p.Threads, t)
		p.threadIdx[t] = ThreadID(len(p.Threads) - 1)
	}
	for _, ls := range w.LabelSets {
		p.labelIndex[ls.key()] = LabelSetID(len(p.labelSets))
		p.labelSets = append(p.labelSets, ls)
	}
	n := len(w.Stack)
	if len(w.Value) != n || len(w.Time) != n || len(w.SampleLabel) != n || len(w.Thread) != n || len(w.Type) != n || len(w.State) != n {
		return fmt.Errorf("decode profile: sample columns differ in length")
	}
	p.Samples = make([]Sample, n)
	for i := range n {
		s := Sample{Stack: w.Stack[i], Value: w.Value[i], Time: w.Time[i], Labels: w.SampleLabel[i],
			Thread: w.Thread[i], Type: w.Type[i], State: w.State[i]}
		if int(s.Stack) >= len(p.stacks) || int(s.Labels) >= len(p.labelSets) || int(s.Thread) >= len(p.Threads) || int(s.Type) >= len(p.Types) {
			return fmt.Errorf("decode profile: sample %d out of range", i)
		}
		p.Samples[i] = s
	}
	p.Labels, p.Series, p.Start, p.End, p.Source, p.Warnings = w.Labels, w.Series, w.Start, w.End, w.Source, w.Warnings
	return nil
}
