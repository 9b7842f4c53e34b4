// Package jfr decodes Java Flight Recorder recordings, as written by the JDK
// and by async-profiler, into sparkprof profiles.
//
// Samples are read with github.com/grafana/jfr-parser. A recording is a
// sequence of self-contained chunks; each chunk is handed to its own parser
// so that a damaged chunk costs only itself and errors name the byte offset
// of the chunk they occurred in.
package jfr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/grafana/jfr-parser/parser"
	"github.com/grafana/jfr-parser/parser/types"
	"github.com/grafana/jfr-parser/parser/types/def"
	"github.com/grafana/jfr-parser/pprof"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/sparkthread"
)

// magic starts every JFR chunk.
var magic = []byte("FLR\x00")

const (
	// chunkHeaderSize is the fixed size of a chunk header: magic, version,
	// then seven 64-bit fields and a 32-bit feature mask.
	chunkHeaderSize = 68
	// MaxChunkSize bounds the size a chunk header may declare. The JDK
	// rotates chunks long before this; a larger value means corrupt input.
	MaxChunkSize = 1 << 30
)

// Sniff reports whether head (the first bytes of decompressed data) is a JFR
// recording ("FLR\0" magic).
func Sniff(head []byte) bool { return bytes.HasPrefix(head, magic) }

// Options control decoding.
type Options struct {
	// Labels is a serialized Pyroscope LabelsSnapshot protobuf (as uploaded
	// next to a JFR by the Pyroscope Java agent, decompressed). When set,
	// each sample's contextId is mapped to the labels of that context.
	Labels []byte
}

// Decode reads a whole JFR recording (one or many concatenated chunks) into
// a profile.
func Decode(data []byte, source string) (*profile.Profile, error) {
	return DecodeWithOptions(data, source, Options{})
}

// DecodeWithOptions is Decode with options. On damaged input it returns the
// samples decoded so far together with a *profile.DecodeError.
func DecodeWithOptions(data []byte, source string, opts Options) (*profile.Profile, error) {
	d := newDecoder(source)
	if len(opts.Labels) > 0 {
		d.labels = new(pprof.LabelsSnapshot)
		if err := d.labels.UnmarshalVT(opts.Labels); err != nil {
			return nil, &profile.DecodeError{Source: source, Offset: -1, Field: "labels", Msg: "invalid LabelsSnapshot protobuf", Err: err}
		}
		d.ctxLabels = make(map[uint64]profile.LabelSetID)
	}
	buf := samplePool.Get().(*[]profile.Sample)
	d.p.Samples = (*buf)[:0]
	err := d.decode(data)
	d.finish()
	*buf = d.p.Samples[:0]
	if len(d.p.Samples) == 0 {
		d.p.Samples = nil
	} else {
		d.p.Samples = slices.Clone(d.p.Samples)
	}
	samplePool.Put(buf)
	return d.p, err
}

// samplePool holds buffers the samples are decoded into before they are
// copied out at their final size: appending tens of thousands of samples
// to a new slice grows it a dozen times, and on a virtual machine the
// fresh pages of each growth cost more than the copying.
var samplePool = sync.Pool{New: func() any { return new([]profile.Sample) }}

func newDecoder(source string) *decoder {
	d := &decoder{p: profile.New(), source: source, counts: make(map[string]int), series: make(map[string]int)}
	d.p.Source = source
	return d
}

// finish adds the Spark thread labels once all samples are in.
func (d *decoder) finish() { sparkthread.LabelProfile(d.p) }

// chunkHeader is the part of a chunk header the decoder needs.
type chunkHeader struct {
	size           int64
	metaOffset     int64
	features       uint32
	startNanos     int64
	durationNanos  int64
	startTicks     int64
	ticksPerSecond int64
}

// readChunkHeader validates the chunk header at the start of b.
func readChunkHeader(b []byte) (chunkHeader, error) {
	var h chunkHeader
	if len(b) < chunkHeaderSize {
		return h, fmt.Errorf("truncated chunk header: %d of %d bytes", len(b), chunkHeaderSize)
	}
	if !bytes.HasPrefix(b, magic) {
		return h, fmt.Errorf("bad chunk magic %q, want %q", b[:4], magic)
	}
	be := binary.BigEndian
	if major := be.Uint16(b[4:]); major != 1 && major != 2 {
		return h, fmt.Errorf("unsupported JFR version %d.%d, want 1.x or 2.x", major, be.Uint16(b[6:]))
	}
	h.size = int64(be.Uint64(b[8:]))
	cp, meta := int64(be.Uint64(b[16:])), int64(be.Uint64(b[24:]))
	h.startNanos = int64(be.Uint64(b[32:]))
	h.durationNanos = int64(be.Uint64(b[40:]))
	h.startTicks = int64(be.Uint64(b[48:]))
	h.ticksPerSecond = int64(be.Uint64(b[56:]))
	h.features = be.Uint32(b[64:])
	h.metaOffset = meta
	switch {
	case h.size < chunkHeaderSize || h.size > MaxChunkSize:
		return h, fmt.Errorf("chunk size %d out of range [%d, %d]", h.size, chunkHeaderSize, MaxChunkSize)
	case h.size > int64(len(b)):
		return h, fmt.Errorf("chunk of %d bytes truncated to %d", h.size, len(b))
	case meta < chunkHeaderSize || meta >= h.size:
		return h, fmt.Errorf("metadata offset %d outside chunk of %d bytes", meta, h.size)
	case cp < 0 || cp >= h.size:
		return h, fmt.Errorf("constant pool offset %d outside chunk of %d bytes", cp, h.size)
	case h.ticksPerSecond <= 0:
		return h, fmt.Errorf("ticks per second %d, want > 0", h.ticksPerSecond)
	}
	return h, nil
}

// time converts a tick count of this chunk to Unix nanoseconds.
func (h *chunkHeader) time(ticks uint64) int64 {
	dt := int64(ticks) - h.startTicks
	// Split to avoid overflowing int64 on long recordings at high tick rates.
	sec, rem := dt/h.ticksPerSecond, dt%h.ticksPerSecond
	return h.startNanos + sec*1e9 + rem*1e9/h.ticksPerSecond
}

// decoder holds state shared by all chunks of one recording.
type decoder struct {
	p      *profile.Profile
	source string

	labels    *pprof.LabelsSnapshot
	ctxLabels map[uint64]profile.LabelSetID
	allocSets map[allocKey]profile.LabelSetID

	counts map[string]int // events read per JFR event type, for tests

	series map[string]int // index in p.Series by name and label

	wallMode bool // async-profiler ran in wall mode: ExecutionSamples are wall samples
	interval int64
	// wallInterval is async-profiler's wall sampling period when it ran
	// wall-clock sampling beside another event (its "wall" option).
	wallInterval int64

	// per chunk
	jp     *parser.Parser
	hdr    chunkHeader
	stacks map[types.StackTraceRef]profile.StackID
	thrs   map[types.ThreadRef]profile.ThreadID
	// frames caches interned frames by method ref and line: stacks share
	// most of their frames, and building a frame's name is the costly part.
	frames map[uint64]profile.FrameID
	// prevKeys and prevIDs are the last converted trace, root first: its
	// frame keys and the stack after each.
	prevKeys []uint64
	prevIDs  []profile.StackID
}

func (d *decoder) errorf(off int64, err error, format string, args ...any) error {
	return &profile.DecodeError{Source: d.source, Offset: off, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (d *decoder) decode(data []byte) error {
	if !Sniff(data) {
		return d.errorf(0, nil, "not a JFR recording: want magic %q", magic)
	}
	for off := int64(0); off < int64(len(data)); {
		h, err := readChunkHeader(data[off:])
		if err != nil {
			return d.errorf(off, err, "chunk header")
		}
		start, end := h.startNanos, h.startNanos+h.durationNanos
		if d.p.Start == 0 || start < d.p.Start {
			d.p.Start = start
		}
		if end > d.p.End {
			d.p.End = end
		}
		if err := d.chunk(data[off:off+h.size], h); err != nil {
			return d.errorf(off, err, "chunk")
		}
		off += h.size
	}
	return nil
}

// chunk decodes one chunk, converting a panic in the parser into an error.
func (d *decoder) chunk(b []byte, h chunkHeader) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jfr-parser panic on malformed data: %v", r)
		}
	}()
	d.hdr = h
	d.jp = parser.NewParser(b, parser.Options{ChunkSizeLimit: MaxChunkSize, SymbolProcessor: parser.ProcessSymbols})
	d.stacks = make(map[types.StackTraceRef]profile.StackID)
	d.thrs = make(map[types.ThreadRef]profile.ThreadID)
	d.frames = make(map[uint64]profile.FrameID)
	d.prevKeys, d.prevIDs = d.prevKeys[:0], d.prevIDs[:0] // method ids are per chunk
	d.allocSets = nil                                     // class references are per chunk
	// Wall samples are recognised per recording: the setting is written at
	// the start of the first chunk only.
	for {
		typ, err := d.jp.ParseEvent()
		if err == io.EOF {
			d.skim(b)
			return nil
		}
		if err != nil {
			return err
		}
		d.event(typ)
	}
}

// event turns the event the parser just read into samples.
func (d *decoder) event(typ def.TypeID) {
	jp := d.jp
	tm := &jp.TypeMap
	if c := tm.IDMap[typ]; c != nil {
		d.counts[c.Name]++
	}
	switch typ {
	case tm.T_EXECUTION_SAMPLE:
		// As jfr-parser's pprof package does: a sample of a sleeping thread
		// is no CPU time, and in wall mode every sample is wall time.
		e := &jp.ExecutionSample
		state := d.stateName(e.State)
		// async-profiler 2.x with a "wall" interval beside cpu writes its
		// wall samples as ExecutionSamples too; the sleeping ones are
		// the off-CPU time a latency view needs, so they become wall
		// samples rather than being dropped.
		if state != "STATE_SLEEPING" {
			d.add(profile.TypeCPU, d.period(), e.StartTime, e.StackTrace, e.SampledThread, state, e.ContextId)
		} else if !d.wallMode && d.wallInterval > 0 {
			d.add(profile.TypeWall, d.wallInterval, e.StartTime, e.StackTrace, e.SampledThread, state, e.ContextId)
		}
		if d.wallMode {
			d.add(profile.TypeWall, d.period(), e.StartTime, e.StackTrace, e.SampledThread, state, e.ContextId)
		}
	case tm.T_WALL_CLOCK_SAMPLE:
		e := &jp.WallClockSample
		state := d.stateName(e.State)
		v := int64(e.Samples) * d.period()
		if d.wallMode && state == "STATE_RUNNABLE" {
			d.add(profile.TypeCPU, v, e.StartTime, e.StackTrace, e.SampledThread, state, e.ContextId)
		}
		d.add(profile.TypeWall, v, e.StartTime, e.StackTrace, e.SampledThread, state, e.ContextId)
	case tm.T_ALLOC_IN_NEW_TLAB:
		e := &jp.ObjectAllocationInNewTLAB
		d.addAlloc(profile.TypeAllocObjects, profile.TypeAllocBytes, int64(e.TlabSize), e.StartTime, e.StackTrace, e.EventThread, e.ContextId, e.ObjectClass)
	case tm.T_ALLOC_OUTSIDE_TLAB:
		e := &jp.ObjectAllocationOutsideTLAB
		d.addAlloc(profile.TypeAllocObjects, profile.TypeAllocBytes, int64(e.AllocationSize), e.StartTime, e.StackTrace, e.EventThread, e.ContextId, e.ObjectClass)
	case tm.T_ALLOC_SAMPLE:
		e := &jp.ObjectAllocationSample
		d.addAlloc(profile.TypeAllocObjects, profile.TypeAllocBytes, int64(e.Weight), e.StartTime, e.StackTrace, e.EventThread, 0, e.ObjectClass)
	case tm.T_MONITOR_ENTER:
		e := &jp.JavaMonitorEnter
		d.add(profile.TypeLockCount, 1, e.StartTime, e.StackTrace, e.EventThread, "", e.ContextId)
		d.add(profile.TypeLockDelay, d.ticksToNanos(e.Duration), e.StartTime, e.StackTrace, e.EventThread, "", e.ContextId)
	case tm.T_THREAD_PARK:
		e := &jp.ThreadPark
		d.add(profile.TypeLockCount, 1, e.StartTime, e.StackTrace, e.EventThread, "", 0)
		d.add(profile.TypeLockDelay, d.ticksToNanos(e.Duration), e.StartTime, e.StackTrace, e.EventThread, "", 0)
	case tm.T_LIVE_OBJECT:
		e := &jp.LiveObject
		d.addAlloc(profile.TypeLiveObjects, profile.TypeLiveBytes, int64(e.AllocationSize), e.StartTime, e.StackTrace, e.EventThread, 0, e.ObjectClass)
	case tm.T_ACTIVE_SETTING:
		d.setting(jp.ActiveSetting.Id == uint64(tm.T_EXECUTION_SAMPLE), jp.ActiveSetting.Name, jp.ActiveSetting.Value)
	}
}

// compressedInts is the chunk feature flag of LEB128-style integers, which
// the skimmer requires (the JDK and async-profiler always set it).
const compressedInts = 1

// skim reads the events jfr-parser skips: GC pauses, CPU load and heap
// usage become series, native method samples become wall samples. A
// failure costs only those and is reported as a warning.
func (d *decoder) skim(chunk []byte) {
	if d.hdr.features&compressedInts == 0 {
		d.p.Warnings = append(d.p.Warnings, "chunk without compressed integers: GC, CPU load and heap series skipped")
		return
	}
	// Reading the metadata again costs as much as a small chunk's events:
	// skip it when the parser's metadata declares none of the events.
	declared := false
	for _, c := range d.jp.TypeMap.IDMap {
		declared = declared || wantedEvents[c.Name]
	}
	if !declared {
		return
	}
	gcNames := map[int64]string{}
	var gcs []event
	names, err := skimEvents(chunk, d.hdr.metaOffset, func(ev event) {
		d.counts[ev.typ]++
		f := ev.fields
		t := d.hdr.time(uint64(f["startTime"].i))
		switch ev.typ {
		case "jdk.GarbageCollection":
			gcs = append(gcs, ev) // names come from the constant pool, read last
		case "jdk.CPULoad":
			d.point("jvm.cpu.user", "ratio", "", "", t, f["jvmUser"].f)
			d.point("jvm.cpu.system", "ratio", "", "", t, f["jvmSystem"].f)
			d.point("machine.cpu.total", "ratio", "", "", t, f["machineTotal"].f)
		case "jdk.GCHeapSummary":
			d.point("jvm.heap.used", "bytes", "", "", t, float64(f["heapUsed"].i))
		case "jdk.NativeMethodSample":
			state := d.stateName(types.ThreadStateRef(f["state"].i))
			d.add(profile.TypeWall, d.period(), uint64(f["startTime"].i), types.StackTraceRef(f["stackTrace"].i),
				types.ThreadRef(f["sampledThread"].i), state, 0)
		}
	})
	for k, v := range names {
		gcNames[k] = v
	}
	for _, ev := range gcs {
		f := ev.fields
		d.point("jvm.gc.pause", "nanoseconds", "gc", gcNames[f["name"].i],
			d.hdr.time(uint64(f["startTime"].i)), float64(d.ticksToNanos(uint64(f["duration"].i))))
	}
	if err != nil {
		d.p.Warnings = append(d.p.Warnings, fmt.Sprintf("%s: GC, CPU load and heap events: %v", d.source, err))
	}
}

// point appends a point to the series of that name and label.
func (d *decoder) point(name, unit, label, value string, t int64, v float64) {
	key := name + "\x00" + value
	i, ok := d.series[key]
	if !ok {
		i = len(d.p.Series)
		d.series[key] = i
		s := profile.Series{Name: name, Unit: unit}
		if label != "" && value != "" {
			s.Labels = profile.Labels{{Name: label, Value: value}}
		}
		d.p.Series = append(d.p.Series, s)
	}
	d.p.Series[i].Points = append(d.p.Series[i].Points, profile.Point{Time: t, Value: v})
}

// setting records the async-profiler settings the sample values depend on.
// async-profiler writes its options as jdk.ActiveSetting events: "event" is
// the profiling mode (cpu, itimer, wall, ...) and "interval" the sampling
// period in nanoseconds. Like jfr-parser's pprof package, an "event" of
// "wall" makes jdk.ExecutionSample events wall-clock samples. The JDK itself
// writes the jdk.ExecutionSample "period" setting as "20 ms".
func (d *decoder) setting(execSample bool, name, value string) {
	switch {
	case name == "event":
		d.wallMode = value == "wall"
	case name == "wall":
		if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil && n > 0 {
			d.wallInterval = n
		}
	case name == "interval":
		if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil && n > 0 {
			d.interval = n
		}
	case name == "period" && execSample:
		if n := parseJDKDuration(value); n > 0 {
			d.interval = n
		}
	}
}

// parseJDKDuration parses a JFR setting duration such as "20 ms", returning
// 0 when value is not one.
func parseJDKDuration(value string) int64 {
	num, unit, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	mul := map[string]int64{"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}[unit]
	return n * mul
}

// defaultPeriod is async-profiler's default sampling interval (10 ms), used
// when a recording does not state its interval.
const defaultPeriod = 10_000_000

// period is the sampling interval in nanoseconds.
func (d *decoder) period() int64 {
	if d.interval > 0 {
		return d.interval
	}
	return defaultPeriod
}

// stateName returns the name of a JFR thread state, or "".
func (d *decoder) stateName(ref types.ThreadStateRef) string {
	if ts := d.jp.GetThreadState(ref); ts != nil {
		return ts.Name
	}
	return ""
}

// ticksToNanos converts a duration in ticks to nanoseconds.
func (d *decoder) ticksToNanos(t uint64) int64 {
	tps := d.hdr.ticksPerSecond
	dt := int64(t)
	return dt/tps*1e9 + dt%tps*1e9/tps
}

// add appends one sample.
func (d *decoder) add(t profile.SampleType, v int64, ticks uint64, st types.StackTraceRef, th types.ThreadRef, state string, ctx uint64) {
	s := profile.Sample{
		Type:   d.p.AddType(t),
		Value:  v,
		Time:   d.hdr.time(ticks),
		Stack:  d.stack(st),
		Thread: d.thread(th),
	}
	if state != "" {
		s.State = profile.ParseThreadState(state)
	}
	if d.labels != nil && ctx != 0 {
		s.Labels = d.contextLabels(ctx)
	}
	d.p.Add(s)
}

// addAlloc adds an allocation (or live object) event as two samples, one
// object and its bytes, labelled with the allocated class.
func (d *decoder) addAlloc(objects, bytes profile.SampleType, size int64, ticks uint64, st types.StackTraceRef, th types.ThreadRef, ctx uint64, class types.ClassRef) {
	s := profile.Sample{
		Type:   d.p.AddType(objects),
		Value:  1,
		Time:   d.hdr.time(ticks),
		Stack:  d.stack(st),
		Thread: d.thread(th),
		Labels: d.allocLabels(ctx, class),
	}
	d.p.Add(s)
	s.Type, s.Value = d.p.AddType(bytes), size
	d.p.Add(s)
}

type allocKey struct {
	ctx   uint64
	class types.ClassRef
}

// allocLabels returns the label set of a context id (when labels are
// known) plus the allocated class's Java name.
func (d *decoder) allocLabels(ctx uint64, class types.ClassRef) profile.LabelSetID {
	k := allocKey{ctx, class}
	if id, ok := d.allocSets[k]; ok {
		return id
	}
	var ls profile.Labels
	if d.labels != nil && ctx != 0 {
		ls = append(ls, d.p.LabelSet(d.contextLabels(ctx))...)
	}
	if c := d.jp.GetClass(class); c != nil {
		ls = append(ls, profile.Label{Name: profile.LabelAllocClass, Value: strings.ReplaceAll(d.jp.GetSymbolString(c.Name), "/", ".")})
	}
	id := d.p.AddLabels(ls)
	if d.allocSets == nil {
		d.allocSets = map[allocKey]profile.LabelSetID{}
	}
	d.allocSets[k] = id
	return id
}

// contextLabels returns the label set of a Pyroscope context id.
func (d *decoder) contextLabels(ctx uint64) profile.LabelSetID {
	if id, ok := d.ctxLabels[ctx]; ok {
		return id
	}
	var ls profile.Labels
	if c := d.labels.Contexts[int64(ctx)]; c != nil {
		for k, v := range c.Labels {
			ls = append(ls, profile.Label{Name: d.labels.Strings[k], Value: d.labels.Strings[v]})
		}
	}
	id := d.p.AddLabels(ls)
	d.ctxLabels[ctx] = id
	return id
}

// thread returns the profile thread of a JFR thread reference.
func (d *decoder) thread(ref types.ThreadRef) profile.ThreadID {
	if id, ok := d.thrs[ref]; ok {
		return id
	}
	id := profile.NoThread
	if i, ok := d.jp.Threads.IDMap[ref]; ok && int(i) < len(d.jp.Threads.Thread) {
		t := &d.jp.Threads.Thread[i]
		th := profile.Thread{ID: int64(t.JavaThreadId), Name: t.JavaName}
		if th.Name == "" {
			th.Name = t.OsName
		}
		if th.ID == 0 {
			th.ID = int64(t.OsThreadId)
		}
		id = d.p.AddThread(profile.Thread{ID: th.ID, Name: strings.Clone(th.Name)})
	}
	d.thrs[ref] = id
	return id
}

// stack returns the profile stack of a JFR stack trace reference. JFR lists
// frames leaf first.
func (d *decoder) stack(ref types.StackTraceRef) profile.StackID {
	if id, ok := d.stacks[ref]; ok {
		return id
	}
	st := d.jp.GetStacktrace(ref)
	if st == nil {
		d.stacks[ref] = profile.NoStack
		return profile.NoStack
	}
	// Traces in the pool often share their root side with the trace
	// before them: that prefix is taken from the previous trace instead of
	// being looked up frame by frame (two map lookups per frame otherwise,
	// a fifth of a labelled upload's ingest time).
	id := profile.NoStack
	depth := 0
	n := len(st.Frames)
	for depth < n && depth < len(d.prevKeys) && frameKey(&st.Frames[n-1-depth]) == d.prevKeys[depth] {
		id = d.prevIDs[depth]
		depth++
	}
	d.prevKeys, d.prevIDs = d.prevKeys[:depth], d.prevIDs[:depth]
	for i := n - 1 - depth; i >= 0; i-- {
		f := &st.Frames[i]
		key := frameKey(f)
		fid, ok := d.frames[key]
		if !ok {
			m := d.jp.GetMethod(f.Method)
			if m == nil {
				fid = noFrame
			} else {
				var class string
				if c := d.jp.GetClass(m.Type); c != nil {
					class = d.jp.GetSymbolString(c.Name)
				}
				fid = d.p.AddFrame(frame(class, d.jp.GetSymbolString(m.Name), f.LineNumber))
			}
			d.frames[key] = fid
		}
		if fid != noFrame {
			id = d.p.Push(id, fid)
		}
		d.prevKeys = append(d.prevKeys, key)
		d.prevIDs = append(d.prevIDs, id)
	}
	d.stacks[ref] = id
	return id
}

// frameKey identifies a JFR frame by method and line.
func frameKey(f *types.StackFrame) uint64 { return uint64(f.Method)<<32 | uint64(f.LineNumber) }

// noFrame marks a method ref the chunk does not resolve.
const noFrame = ^profile.FrameID(0)

// frame builds a frame from a JFR class (with slashes) and method name.
//
// jfr-parser does not expose a frame's type, so the kind is derived from the
// names the way async-profiler writes them: native frames have no class or
// have their shared library as class (File keeps it), and kernel symbols
// carry a "_[k]" suffix.
func frame(class, method string, line uint32) profile.Frame {
	if isLibrary(class) {
		k := profile.KindNative
		if strings.HasSuffix(method, "_[k]") {
			k = profile.KindKernel
		}
		return profile.Frame{Name: strings.Clone(method), File: strings.Clone(class), Line: int32(line), Kind: k}
	}
	return profile.Frame{
		Name: strings.ReplaceAll(class, "/", ".") + "." + method,
		Line: int32(line),
		Kind: profile.KindJava,
	}
}

// isLibrary reports whether a frame's class is in fact a native library
// (or empty), as async-profiler writes native frames.
func isLibrary(class string) bool {
	if class == "" || class == "vdso" || class == "[vdso]" {
		return true
	}
	if strings.IndexByte(class, '/') >= 0 {
		return false
	}
	return strings.HasSuffix(class, ".so") || strings.Contains(class, ".so.") || strings.HasSuffix(class, ".dylib")
}
