package pstats

import (
	"math"
	"slices"

	"github.com/sparkprof/sparkprof/profile"
)

// Limits of the stacks Decode makes of a call graph. Splitting a
// function's time among every path to it could make a number of stacks
// exponential in the graph's depth; these bound it.
const (
	// maxStackDepth bounds a stack: a path climbs no further.
	maxStackDepth = 64
	// minShareNanos and minShareFraction (of the total self time) are the
	// least time a path is split further for.
	minShareNanos    = 1000
	minShareFraction = 1.0 / 20000
	// maxWork bounds the caller edges one Decode visits; past it, paths
	// stop where they are. A dense graph (every function calling every
	// other) reaches it; the profiles of real programs stay far below.
	maxWork = 4 << 20
)

// Decode decodes a pstats file into a profile of wall time (cProfile's
// default timer): samples of profile.TypeWall, one a stack, each
// function's self time on stacks of its callers. Frames are
// profile.KindPython, named "file:function" with File and Line set, as
// profile.ParsePythonFrame makes them; built-ins are named as Python names
// them ("<built-in method builtins.len>" by cProfile, "len" by the profile
// module) without a file.
func Decode(data []byte, source string) (*profile.Profile, error) {
	stats, err := Read(data, source)
	if err != nil {
		return nil, err
	}
	p := profile.New()
	p.Source = source
	b := newBuilder(p, stats)
	for i := range stats {
		b.function(i)
	}
	b.flush()
	if len(stats) > 0 && len(p.Samples) == 0 {
		p.Warnf("%s: %d functions, all with no self time", source, len(stats))
	}
	return p, nil
}

// nanos converts seconds to nanoseconds.
func nanos(s float64) int64 { return int64(math.Round(s * 1e9)) }

// builder turns the call graph into stacks of the profile.
type builder struct {
	p        *profile.Profile
	stats    []Stat
	frames   []profile.FrameID
	typ      profile.TypeID
	minShare int64
	values   map[profile.StackID]int64
	path     []int // the functions from the leaf up
	work     int   // caller edges visited
	onPath   []bool
	rootBuf  []profile.FrameID
}

func newBuilder(p *profile.Profile, stats []Stat) *builder {
	b := &builder{p: p, stats: stats, typ: p.AddType(profile.TypeWall), values: map[profile.StackID]int64{},
		frames: make([]profile.FrameID, len(stats)), onPath: make([]bool, len(stats))}
	var total int64
	for i, s := range stats {
		b.frames[i] = p.AddFrame(frame(s.Func))
		total += nanos(s.Self)
	}
	b.minShare = max(minShareNanos, int64(float64(total)*minShareFraction))
	return b
}

// frame is the profile frame of a function.
func frame(f Func) profile.Frame {
	if f.File == "" || f.File == "~" {
		return profile.Frame{Name: f.Name, Kind: profile.KindPython}
	}
	return profile.Frame{Name: f.File + ":" + f.Name, File: f.File, Line: int32(min(max(f.Line, 0), math.MaxInt32)), Kind: profile.KindPython}
}

// function places the self time of stats[i].
func (b *builder) function(i int) {
	v := nanos(b.stats[i].Self)
	if v <= 0 {
		return
	}
	b.path = append(b.path[:0], i)
	b.onPath[i] = true
	b.climb(v, true)
	b.onPath[i] = false
}

// climb splits v, the time of the path b.path, among the callers of its
// top function: by the self time each call site accounts for at the leaf,
// by their cumulative time above it. The share no caller accounts for (a
// function called from the top level) ends the path there.
func (b *builder) climb(v int64, leaf bool) {
	top := b.stats[b.path[len(b.path)-1]]
	if len(b.path) >= maxStackDepth || v < b.minShare || len(top.Callers) == 0 || b.work >= maxWork {
		b.emit(v)
		return
	}
	b.work += len(top.Callers)
	weight := func(e Edge) float64 {
		if leaf {
			return e.Self
		}
		return e.Cumulative
	}
	own, all := top.Cumulative, 0.0
	if leaf {
		own = top.Self
	}
	for _, e := range top.Callers {
		all += weight(e)
	}
	if all == 0 {
		// The profile module records call counts only.
		weight = func(e Edge) float64 { return float64(e.Calls) }
		for _, e := range top.Callers {
			all += weight(e)
		}
		own = all
	}
	rest := max(own-all, 0)
	sum := rest
	for _, e := range top.Callers {
		if !b.onPath[e.Caller] {
			sum += weight(e)
		}
	}
	if sum <= 0 {
		b.emit(v)
		return
	}
	// Floor the shares, then give the rounding to the largest one.
	shares := make([]int64, len(top.Callers))
	given, largest := int64(0), -1
	for i, e := range top.Callers {
		if b.onPath[e.Caller] || weight(e) <= 0 {
			continue
		}
		shares[i] = int64(float64(v) * weight(e) / sum)
		given += shares[i]
		if largest < 0 || shares[i] > shares[largest] {
			largest = i
		}
	}
	atTop := min(int64(float64(v)*rest/sum), v-given)
	if largest >= 0 {
		shares[largest] += v - given - atTop
	} else {
		atTop = v
	}
	for i, e := range top.Callers {
		if shares[i] <= 0 {
			continue
		}
		b.path = append(b.path, e.Caller)
		b.onPath[e.Caller] = true
		b.climb(shares[i], false)
		b.onPath[e.Caller] = false
		b.path = b.path[:len(b.path)-1]
	}
	if atTop > 0 {
		b.emit(atTop) // the share of calls from the top level
	}
}

// emit adds v to the stack of b.path.
func (b *builder) emit(v int64) {
	b.rootBuf = b.rootBuf[:0]
	for _, f := range slices.Backward(b.path) {
		b.rootBuf = append(b.rootBuf, b.frames[f])
	}
	b.values[b.p.AddStack(b.rootBuf)] += v
}

// flush adds one sample a stack, in the order of the stacks' ids.
func (b *builder) flush() {
	ids := make([]profile.StackID, 0, len(b.values))
	for id := range b.values {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b.p.Add(profile.Sample{Stack: id, Value: b.values[id], Type: b.typ})
	}
}
