// Package speedscope reads and writes speedscope's JSON file format
// (https://www.speedscope.app/file-format-schema.json): frames shared by
// several profiles, each either "sampled" (stacks with weights) or
// "evented" (frame open and close events).
//
// The format is one small JSON document; encoding/json reads and writes it.
package speedscope

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// Schema is the $schema value that identifies a speedscope file.
const Schema = "https://www.speedscope.app/file-format-schema.json"

// Sniff reports whether head, the start of a file, is a speedscope JSON
// document: a JSON object naming the speedscope schema.
func Sniff(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '{' && bytes.Contains(head, []byte("speedscope.app/file-format-schema.json"))
}

// The document, as the schema describes it.
type (
	file struct {
		Schema             string    `json:"$schema"`
		Shared             shared    `json:"shared"`
		Profiles           []jsonPrf `json:"profiles"`
		Name               string    `json:"name,omitempty"`
		ActiveProfileIndex int       `json:"activeProfileIndex"`
		Exporter           string    `json:"exporter,omitempty"`
	}
	shared struct {
		Frames []frame `json:"frames"`
	}
	frame struct {
		Name *string `json:"name"`
		File string  `json:"file,omitempty"`
		Line int64   `json:"line,omitempty"`
		Col  int64   `json:"col,omitempty"`
	}
	jsonPrf struct {
		Type       string    `json:"type"`
		Name       string    `json:"name"`
		Unit       string    `json:"unit"`
		StartValue float64   `json:"startValue"`
		EndValue   float64   `json:"endValue"`
		Samples    [][]int   `json:"samples"` // sampled profiles only
		Weights    []float64 `json:"weights"` // sampled profiles only
		Events     []event   `json:"events,omitempty"`
	}
	event struct {
		Type  string  `json:"type"` // "O" opens a frame, "C" closes it
		At    float64 `json:"at"`
		Frame int     `json:"frame"`
	}
)

// unitScale converts a speedscope unit to sparkprof's unit and the factor
// from one to the other.
func unitScale(unit string) (string, float64, bool) {
	switch unit {
	case "nanoseconds":
		return "nanoseconds", 1, true
	case "microseconds":
		return "nanoseconds", 1e3, true
	case "milliseconds":
		return "nanoseconds", 1e6, true
	case "seconds":
		return "nanoseconds", 1e9, true
	case "bytes":
		return "bytes", 1, true
	case "none":
		return "count", 1, true
	}
	return "", 0, false
}

var knownTypes = []profile.SampleType{
	profile.TypeCPU, profile.TypeWall, profile.TypeItimer, profile.TypeSamples,
	profile.TypeAllocBytes, profile.TypeAllocObjects, profile.TypeLockCount,
	profile.TypeLockDelay, profile.TypeLiveObjects, profile.TypeLiveBytes,
}

// sampleType returns the sample type of a speedscope profile: the known
// type its name names (as Encode writes them), else wall time, allocated
// bytes or samples by unit. named reports whether the name named a type.
func sampleType(name, unit string) (t profile.SampleType, named bool) {
	for _, k := range knownTypes {
		if k.Name == name && k.Unit == unit {
			return k, true
		}
	}
	switch unit {
	case "nanoseconds":
		return profile.TypeWall, false
	case "bytes":
		return profile.TypeAllocBytes, false
	}
	return profile.TypeSamples, false
}

// Decode parses a speedscope document. Each sampled profile's stacks
// become samples; each evented profile's open frames become samples
// weighted by the time until the next event. Weights are converted to
// nanoseconds, bytes or counts. A profile named after a sample type
// ("cpu", "alloc_bytes", as Encode writes) has that type; otherwise its
// unit decides (time: wall, bytes: alloc_bytes, none: samples) and its
// name, if any, names the thread of its samples (py-spy writes one profile
// per thread). Samples have no time: speedscope's values are relative.
func Decode(data []byte, source string) (*profile.Profile, error) {
	p := profile.New()
	p.Source = source
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return p, profile.JSONError(source, "not a speedscope JSON document", err)
	}
	if len(f.Profiles) == 0 {
		return p, &profile.DecodeError{Source: source, Offset: -1, Field: "profiles", Msg: "expected at least one profile"}
	}
	if len(f.Profiles) > 256 {
		return p, &profile.DecodeError{Source: source, Offset: -1, Field: "profiles",
			Msg: fmt.Sprintf("%d profiles, at most 256 supported", len(f.Profiles))}
	}
	frames := make([]profile.FrameID, len(f.Shared.Frames))
	for i, fr := range f.Shared.Frames {
		if fr.Name == nil {
			return p, &profile.DecodeError{Source: source, Offset: -1, Field: fmt.Sprintf("shared.frames[%d]", i), Msg: "expected a \"name\""}
		}
		line := fr.Line
		if line < 0 || line > math.MaxInt32 {
			line = 0
		}
		frames[i] = p.AddFrame(newFrame(*fr.Name, fr.File, int32(line)))
	}
	d := decoder{p: p, frames: frames, source: source}
	for i := range f.Profiles {
		if err := d.profile(&f.Profiles[i], i); err != nil {
			return p, err
		}
	}
	return p, nil
}

type decoder struct {
	p      *profile.Profile
	frames []profile.FrameID
	source string
}

func (d *decoder) errorf(field, format string, args ...any) error {
	return &profile.DecodeError{Source: d.source, Offset: -1, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) profile(jp *jsonPrf, i int) error {
	field := fmt.Sprintf("profiles[%d]", i)
	unit, scale, ok := unitScale(jp.Unit)
	if !ok {
		return d.errorf(field+".unit", "expected one of none, nanoseconds, microseconds, milliseconds, seconds, bytes; found %q", jp.Unit)
	}
	typ, named := sampleType(jp.Name, unit)
	tid := d.p.AddType(typ)
	var thread profile.ThreadID
	if !named && jp.Name != "" {
		thread = d.p.AddThread(profile.Thread{Name: jp.Name})
	}
	add := func(stack profile.StackID, w float64, where string) error {
		v := w * scale
		if math.IsNaN(v) || v < 0 || v > math.MaxInt64/2 {
			return d.errorf(where, "expected a non-negative weight, found %v", w)
		}
		if v := int64(math.Round(v)); v != 0 {
			d.p.Add(profile.Sample{Stack: stack, Value: v, Type: tid, Thread: thread})
		}
		return nil
	}
	switch jp.Type {
	case "sampled":
		if len(jp.Weights) != len(jp.Samples) {
			return d.errorf(field+".weights", "expected one weight per sample (%d), found %d", len(jp.Samples), len(jp.Weights))
		}
		for j, st := range jp.Samples {
			s := profile.NoStack
			for k, fi := range st {
				if fi < 0 || fi >= len(d.frames) {
					return d.errorf(fmt.Sprintf("%s.samples[%d][%d]", field, j, k), "frame index %d out of range [0, %d)", fi, len(d.frames))
				}
				s = d.p.Push(s, d.frames[fi])
			}
			if err := add(s, jp.Weights[j], fmt.Sprintf("%s.weights[%d]", field, j)); err != nil {
				return err
			}
		}
	case "evented":
		return d.evented(jp, field, add)
	default:
		return d.errorf(field+".type", "expected \"sampled\" or \"evented\", found %q", jp.Type)
	}
	return nil
}

// evented turns open and close events into time-weighted stacks: between
// two events the open frames are the stack, weighted by the time between.
// Frames still open at the end are closed at endValue.
func (d *decoder) evented(jp *jsonPrf, field string, add func(profile.StackID, float64, string) error) error {
	var open []int // frame indices, outermost first
	stacks := []profile.StackID{profile.NoStack}
	weights := map[profile.StackID]float64{}
	var order []profile.StackID
	last := jp.StartValue
	advance := func(at float64, where string) error {
		if at < last || math.IsNaN(at) {
			return d.errorf(where, "event at %v precedes the previous one at %v", at, last)
		}
		if top := stacks[len(stacks)-1]; len(open) > 0 && at > last {
			if _, ok := weights[top]; !ok {
				order = append(order, top)
			}
			weights[top] += at - last
		}
		last = at
		return nil
	}
	for j, ev := range jp.Events {
		where := fmt.Sprintf("%s.events[%d]", field, j)
		if ev.Frame < 0 || ev.Frame >= len(d.frames) {
			return d.errorf(where+".frame", "frame index %d out of range [0, %d)", ev.Frame, len(d.frames))
		}
		if err := advance(ev.At, where+".at"); err != nil {
			return err
		}
		switch ev.Type {
		case "O":
			open = append(open, ev.Frame)
			stacks = append(stacks, d.p.Push(stacks[len(stacks)-1], d.frames[ev.Frame]))
		case "C":
			if len(open) == 0 || open[len(open)-1] != ev.Frame {
				return d.errorf(where, "closes frame %d, which is not the innermost open frame", ev.Frame)
			}
			open = open[:len(open)-1]
			stacks = stacks[:len(stacks)-1]
		default:
			return d.errorf(where+".type", "expected \"O\" or \"C\", found %q", ev.Type)
		}
	}
	if len(open) > 0 && jp.EndValue > last {
		if err := advance(jp.EndValue, field+".endValue"); err != nil {
			return err
		}
	}
	for _, s := range order {
		if err := add(s, weights[s], field+".events"); err != nil {
			return err
		}
	}
	return nil
}

// kindOf guesses a frame's kind from its file, else from its name as
// profile.GuessKind does.
// newFrame is the profile frame of a speedscope frame. A Python frame is
// named "file:function", as PySpark's, cProfile's and py-spy's folded
// frames are, so that one function has one name whatever recorded it.
func newFrame(name, file string, line int32) profile.Frame {
	f := profile.Frame{Name: name, File: file, Line: line, Kind: kindOf(name, file)}
	if f.Kind == profile.KindPython && file != "" && !strings.HasPrefix(name, file+":") {
		f.Name = file + ":" + name
	}
	return f
}

func kindOf(name, file string) profile.FrameKind {
	switch path.Ext(file) {
	case ".py":
		return profile.KindPython
	case ".java", ".scala", ".kt":
		return profile.KindJava
	}
	return profile.GuessKind(name)
}

// EncodeOptions control Encode.
type EncodeOptions struct {
	// Types selects the sample types to write, one speedscope profile each,
	// in this order; nil selects all of the profile's types.
	Types []profile.SampleType
}

// Encode writes p as a speedscope document with one "sampled" profile per
// selected sample type, named after the type ("cpu", "alloc_bytes", ...).
// Each distinct stack is one sample weighted by the sum of its values, in
// order of first appearance. Units other than nanoseconds and bytes are
// written as "none".
func Encode(w io.Writer, p *profile.Profile, opts EncodeOptions) error {
	types := opts.Types
	if types == nil {
		types = p.Types
	}
	f := file{Schema: Schema, Name: p.Source, Exporter: "sparkprof", Profiles: []jsonPrf{}}
	used := map[profile.FrameID]int{}
	var buf []profile.FrameID
	for _, t := range types {
		id, ok := p.TypeIndex(t)
		if !ok {
			return fmt.Errorf("speedscope: profile has no sample type %v", t)
		}
		unit := "none"
		switch t.Unit {
		case "nanoseconds", "bytes":
			unit = t.Unit
		}
		sums := map[profile.StackID]int64{}
		var order []profile.StackID
		var total int64
		for _, s := range p.Samples {
			if s.Type != id || s.Value == 0 {
				continue
			}
			if _, ok := sums[s.Stack]; !ok {
				order = append(order, s.Stack)
			}
			sums[s.Stack] += s.Value
			total += s.Value
		}
		jp := jsonPrf{Type: "sampled", Name: t.Name, Unit: unit, EndValue: float64(total),
			Samples: make([][]int, 0, len(order)), Weights: make([]float64, 0, len(order))}
		for _, st := range order {
			buf = p.Stack(st, buf[:0])
			idx := make([]int, len(buf))
			for i, fr := range buf {
				j, ok := used[fr]
				if !ok {
					j = len(f.Shared.Frames)
					used[fr] = j
					pf := p.Frames[fr]
					name := pf.Name
					f.Shared.Frames = append(f.Shared.Frames, frame{Name: &name, File: pf.File, Line: int64(pf.Line)})
				}
				idx[i] = j
			}
			jp.Samples = append(jp.Samples, idx)
			jp.Weights = append(jp.Weights, float64(sums[st]))
		}
		f.Profiles = append(f.Profiles, jp)
	}
	if f.Shared.Frames == nil {
		f.Shared.Frames = []frame{}
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(&f); err != nil {
		return fmt.Errorf("speedscope: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("speedscope: %w", err)
	}
	return nil
}
