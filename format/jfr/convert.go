package jfr

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// sampleKind is a sample type the decoder writes.
type sampleKind uint8

const (
	kindCPU sampleKind = iota
	kindWall
	kindAllocObjects
	kindAllocBytes
	kindLockCount
	kindLockDelay
	kindLiveObjects
	kindLiveBytes
	numKinds
)

var sampleTypes = [numKinds]profile.SampleType{
	profile.TypeCPU, profile.TypeWall, profile.TypeAllocObjects, profile.TypeAllocBytes,
	profile.TypeLockCount, profile.TypeLockDelay, profile.TypeLiveObjects, profile.TypeLiveBytes,
}

// typeID returns the profile's id of a sample kind, adding the type on
// first use.
func (d *decoder) typeID(k sampleKind) profile.TypeID {
	if id := d.types[k]; id > 0 {
		return profile.TypeID(id - 1)
	}
	id := d.p.AddType(sampleTypes[k])
	d.types[k] = int(id) + 1
	return id
}

// event turns an event into samples, series points or settings.
func (d *decoder) event(k eventKind, e *record) {
	v := &e.v
	switch k {
	case evExecutionSample:
		// As jfr-parser's pprof package does: a sample of a sleeping thread
		// is no CPU time, and in wall mode every sample is wall time.
		st := d.state(v[roleState])
		// async-profiler 2.x with a "wall" interval beside cpu writes its
		// wall samples as ExecutionSamples too; the sleeping ones are
		// the off-CPU time a latency view needs, so they become wall
		// samples rather than being dropped.
		if !st.sleeping {
			d.add(kindCPU, d.period(), e, st.state)
		} else if !d.wallMode && d.wallInterval > 0 {
			d.add(kindWall, d.wallInterval, e, st.state)
		}
		if d.wallMode {
			d.add(kindWall, d.period(), e, st.state)
		}
	case evWallClockSample:
		st := d.state(v[roleState])
		n := int64(v[roleSamples]) * d.period()
		if d.wallMode && st.runnable {
			d.add(kindCPU, n, e, st.state)
		}
		d.add(kindWall, n, e, st.state)
	case evNativeMethodSample:
		d.add(kindWall, d.period(), e, d.state(v[roleState]).state)
	case evAllocInNewTLAB:
		d.addAlloc(kindAllocObjects, kindAllocBytes, int64(v[roleTLABSize]), e)
	case evAllocOutsideTLAB:
		d.addAlloc(kindAllocObjects, kindAllocBytes, int64(v[roleAllocationSize]), e)
	case evAllocSample:
		d.addAlloc(kindAllocObjects, kindAllocBytes, int64(v[roleWeight]), e)
	case evLiveObject:
		d.addAlloc(kindLiveObjects, kindLiveBytes, int64(v[roleAllocationSize]), e)
	case evMonitorEnter, evThreadPark:
		d.add(kindLockCount, 1, e, 0)
		d.add(kindLockDelay, d.ticksToNanos(v[roleDuration]), e, 0)
	case evActiveSetting:
		exec := d.md.execSample != nil && v[roleID] == d.md.execSample.id
		d.setting(exec, string(e.s[roleName]), string(e.s[roleValue]))
	case evGarbageCollection:
		name, ok := d.gcNames[v[roleName]]
		if !ok {
			if rec, ok := d.constant(poolGCName, v[roleName]); ok {
				name = string(rec.s[roleName])
			}
			d.gcNames[v[roleName]] = name
		}
		// A concurrent collection (G1's marking cycle, ZGC) lasts far longer
		// than it pauses the application: its sum of pauses is the pause.
		pause := v[roleSumOfPauses]
		if pause == 0 {
			pause = v[roleDuration]
		}
		d.point("jvm.gc.pause", "nanoseconds", "gc", name, d.hdr.time(v[roleStartTime]), float64(d.ticksToNanos(pause)))
	case evCPULoad:
		t := d.hdr.time(v[roleStartTime])
		d.point("jvm.cpu.user", "ratio", "", "", t, e.float(roleJVMUser))
		d.point("jvm.cpu.system", "ratio", "", "", t, e.float(roleJVMSystem))
		d.point("machine.cpu.total", "ratio", "", "", t, e.float(roleMachineTotal))
	case evGCHeapSummary:
		d.point("jvm.heap.used", "bytes", "", "", d.hdr.time(v[roleStartTime]), float64(v[roleHeapUsed]))
	}
}

// add appends one sample of the event e.
func (d *decoder) add(k sampleKind, value int64, e *record, state profile.ThreadState) {
	s := profile.Sample{
		Type:   d.typeID(k),
		Value:  value,
		Time:   d.hdr.time(e.v[roleStartTime]),
		Stack:  d.stack(e.v[roleStackTrace]),
		Thread: d.thread(e.v[roleThread]),
		State:  state,
	}
	if ctx := e.v[roleContextID]; d.labels != nil && ctx != 0 {
		s.Labels = d.contextLabels(ctx)
	}
	d.p.Add(s)
}

// addAlloc adds an allocation (or live object) event as two samples, one
// object and its bytes, labelled with the allocated class.
func (d *decoder) addAlloc(objects, bytes sampleKind, size int64, e *record) {
	s := profile.Sample{
		Type:   d.typeID(objects),
		Value:  1,
		Time:   d.hdr.time(e.v[roleStartTime]),
		Stack:  d.stack(e.v[roleStackTrace]),
		Thread: d.thread(e.v[roleThread]),
		Labels: d.allocLabels(e.v[roleContextID], e.v[roleObjectClass]),
	}
	d.p.Add(s)
	s.Type, s.Value = d.typeID(bytes), size
	d.p.Add(s)
}

type allocKey struct {
	ctx, class uint64
}

// allocLabels returns the label set of a context id (when labels are
// known) plus the allocated class's Java name.
func (d *decoder) allocLabels(ctx, class uint64) profile.LabelSetID {
	k := allocKey{ctx, class}
	if ctx == 0 { // no context, as in every JDK recording: a dense index, not a map
		if id, ok := d.classLabels.get(class); ok {
			return profile.LabelSetID(id)
		}
	} else if id, ok := d.allocSets[k]; ok {
		return id
	}
	var ls profile.Labels
	if d.labels != nil && ctx != 0 {
		ls = append(ls, d.p.LabelSet(d.contextLabels(ctx))...)
	}
	if c, ok := d.class(class); ok {
		ls = append(ls, profile.Label{Name: profile.LabelAllocClass, Value: c.dotted})
	}
	if ctx == 0 {
		// Class keys are per chunk: a recording of many chunks names a
		// class again in each, under the same label set.
		id := d.p.AddLabels(ls)
		d.classLabels.put(class, uint32(id))
		return id
	}
	if d.allocSets == nil {
		d.allocSets = make(map[allocKey]profile.LabelSetID)
	}
	id := d.p.AppendLabels(ls) // once per context and class of a chunk
	d.allocSets[k] = id
	return id
}

// contextLabels returns the label set of a Pyroscope context id.
func (d *decoder) contextLabels(ctx uint64) profile.LabelSetID {
	if id, ok := d.ctxLabels[ctx]; ok {
		return id
	}
	id := profile.NoLabels
	if ls := d.labels.labels(ctx, &d.labelBuf); len(ls) > 0 {
		id = d.p.AppendLabels(ls) // once per context: no need to look it up
	}
	d.ctxLabels[ctx] = id
	return id
}

// state returns the thread state of a key of the chunk's state pool.
func (d *decoder) state(key uint64) stateInfo {
	if i, ok := d.states.get(key); ok {
		return d.stateInfos[i]
	}
	var st stateInfo
	if rec, ok := d.constant(poolThreadState, key); ok {
		name := rec.s[roleName]
		st = stateInfo{
			state:    profile.ParseThreadState(string(name)),
			sleeping: string(name) == "STATE_SLEEPING",
			runnable: string(name) == "STATE_RUNNABLE",
		}
	}
	d.states.put(key, uint32(len(d.stateInfos)))
	d.stateInfos = append(d.stateInfos, st)
	return st
}

// thread returns the profile thread of a key of the chunk's thread pool.
func (d *decoder) thread(key uint64) profile.ThreadID {
	if id, ok := d.threads.get(key); ok {
		return profile.ThreadID(id)
	}
	id := profile.NoThread
	if rec, ok := d.constant(poolThread, key); ok {
		th := profile.Thread{ID: int64(rec.v[roleJavaThreadID]), Name: string(rec.s[roleJavaName])}
		if th.Name == "" {
			th.Name = string(rec.s[roleOSName])
		}
		if th.ID == 0 {
			th.ID = int64(rec.v[roleOSThreadID])
		}
		id = d.p.AddThread(th)
	}
	d.threads.put(key, uint32(id))
	return id
}

// symbol returns the string of a key of the chunk's symbol pool.
func (d *decoder) symbol(key uint64) []byte {
	if rec, ok := d.constant(poolSymbol, key); ok {
		return rec.s[roleString]
	}
	return nil
}

// classInfo is a resolved class.
type classInfo struct {
	name   string // with slashes, generated names merged (see mergeGenerated)
	dotted string // Java's form of name
	lib    bool   // a native library, as async-profiler names native frames' class
}

// class returns a class of the chunk's class pool.
func (d *decoder) class(key uint64) (*classInfo, bool) {
	if i, ok := d.classes.get(key); ok {
		return &d.classInfos[i], true
	}
	rec, ok := d.constant(poolClass, key)
	if !ok {
		return nil, false
	}
	sym := d.symbol(rec.v[roleName])
	c, ok := d.classNames[string(sym)]
	if !ok {
		raw := string(sym)
		name := mergeGenerated(raw)
		c = classInfo{name: name, dotted: strings.ReplaceAll(name, "/", "."), lib: isLibrary(name)}
		if len(d.classNames) >= maxNames {
			clear(d.classNames)
		}
		d.classNames[raw] = c
	}
	d.classes.put(key, uint32(len(d.classInfos)))
	d.classInfos = append(d.classInfos, c)
	return &d.classInfos[len(d.classInfos)-1], true
}

// maxNames bounds the class and frame names a decoder keeps between
// recordings.
const maxNames = 1 << 16

// frameName returns the string of a frame name, the same string for the
// same name in every recording the decoder reads.
func (d *decoder) frameName(b []byte) string {
	if s, ok := d.frameNames[string(b)]; ok {
		return s
	}
	if len(d.frameNames) >= maxNames {
		clear(d.frameNames)
	}
	s := string(b)
	d.frameNames[s] = s
	return s
}

// method returns the position in methodInfos of a method key.
func (d *decoder) method(key uint64) uint32 {
	if i, ok := d.methods.get(key); ok {
		return i
	}
	i := uint32(len(d.methodInfos))
	mi := methodInfo{lines: d.lineBuf(i)}
	if rec, ok := d.constant(poolMethod, key); ok {
		classKey, nameKey := rec.v[roleType], rec.v[roleName]
		c, ok := d.class(classKey)
		if !ok {
			c = &classInfo{lib: true}
		}
		d.setFrameName(&mi, c, d.symbol(nameKey))
	}
	d.methods.put(key, i)
	d.methodInfos = append(d.methodInfos, mi)
	return i
}

// setFrameName names the frames of a method of class c.
//
// The kind is derived from the names the way async-profiler writes them:
// native frames have no class or have their shared library as class (File
// keeps it), and kernel symbols carry a "_[k]" suffix.
func (d *decoder) setFrameName(mi *methodInfo, c *classInfo, method []byte) {
	mi.ok = true
	if c.lib {
		mi.name, mi.file, mi.kind = d.frameName(method), c.name, profile.KindNative
		if bytes.HasSuffix(method, []byte("_[k]")) {
			mi.kind = profile.KindKernel
		}
		return
	}
	d.nameBuf = append(append(append(d.nameBuf[:0], c.dotted...), '.'), method...)
	mi.name, mi.kind = d.frameName(d.nameBuf), profile.KindJava
}

// lineBuf returns an empty line list for methodInfos[i], reusing the
// memory of the previous chunk's or recording's method there.
func (d *decoder) lineBuf(i uint32) []lineFrame {
	if int(i) < cap(d.methodInfos) {
		return d.methodInfos[:i+1][i].lines[:0]
	}
	return nil
}

// stack returns the profile stack of a key of the chunk's stack trace pool.
func (d *decoder) stack(key uint64) profile.StackID {
	if id, ok := d.stacks.get(key); ok {
		return profile.StackID(id)
	}
	id := profile.NoStack
	if d.readTrace(key) {
		id = d.convertTrace()
	}
	d.stacks.put(key, uint32(id))
	return id
}

// readTrace points d.trace at the frames of a stack trace, leaf first,
// reporting whether the chunk has the trace.
func (d *decoder) readTrace(key uint64) bool {
	i, ok := d.pools[poolStackTrace].get(key)
	if !ok || int(i) >= len(d.traceSpans) {
		return false
	}
	sp := d.traceSpans[i]
	d.trace = d.traceFrames[sp.start:sp.end]
	return true
}

// traceSpan locates a stack trace's frames in traceFrames.
type traceSpan struct{ start, end int }

// appendTrace reads one stack trace of class c at r, appending its frames
// (leaf first) to traceFrames and its span to traceSpans. Traces are read
// this way once, while the pools are indexed: an event refers to most of
// them, and skipping them then reading them again parsed them twice.
func (d *decoder) appendTrace(r *reader, c *class) {
	start := len(d.traceFrames)
	for i := range c.fields {
		f := &c.fields[i]
		if f.role != roleFrames || !f.array || f.cpool || f.class.kind != kindStruct {
			skipField(r, f)
			continue
		}
		rec := &d.frameRec
		for n := r.count(max(len(f.class.varints), 1)); n > 0 && r.err == nil; n-- {
			readFields(r, f.class, rec)
			d.traceFrames = append(d.traceFrames, frameRef{method: rec.v[roleMethod], line: uint32(rec.v[roleLineNumber])})
		}
	}
	d.traceSpans = append(d.traceSpans, traceSpan{start, len(d.traceFrames)})
}

// convertTrace interns the frames of d.trace as a profile stack.
//
// Distinct traces share most of their root side with some trace converted
// before them. Each root-side prefix converted so far is kept by a 128-bit
// hash of its frames, and the longest known prefix of a new trace is found
// by binary search over its prefixes (known prefixes are closed under
// shortening), so only the frames past it are resolved and interned: a few
// map lookups per trace instead of several per frame.
func (d *decoder) convertTrace() profile.StackID {
	n := len(d.trace)
	d.hashes = d.hashes[:0]
	h := prefixKey{0x243f6a8885a308d3, 0x13198a2e03707344}
	for i := n - 1; i >= 0; i-- {
		h = h.next(d.trace[i])
		d.hashes = append(d.hashes, h)
	}
	id := profile.NoStack
	lo, hi := 0, n // the prefix of lo frames is known, none longer than hi is
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if sid, ok := d.prefixes.get(d.hashes[mid-1]); ok {
			lo, id = mid, sid
		} else {
			hi = mid - 1
		}
	}
	for k := lo; k < n; k++ {
		if fid := d.frame(d.trace[n-1-k]); fid != noFrame {
			id = d.push(id, fid)
		} else {
			// The stacks past a skipped frame may be ones its
			// parent already has.
			d.fresh = false
		}
		d.prefixes.put(d.hashes[k], id)
	}
	return id
}

// push returns the profile stack that is parent with frame f called on
// top, for a frame past the longest converted prefix of a trace.
//
// Interning a stack costs a probe of a table of tens of thousands of
// stacks, most of them new: a quarter of a JDK recording's decode. While
// d.fresh, a stack whose path holds only frames made of one JFR frame each
// is new, since its trace prefix is: it is appended without a lookup. In a
// JDK recording a handful of a chunk's thousands of frames are merged (a
// generated class's methods named alike, overloads without lines), below
// them a few hundred of its tens of thousands of stacks; those are looked
// up in belowIndex.
func (d *decoder) push(parent profile.StackID, f profile.FrameID) profile.StackID {
	if !d.fresh {
		return d.p.Push(parent, f)
	}
	if !d.below[parent] && (int(f) >= len(d.merged) || !d.merged[f]) {
		d.below = append(d.below, false)
		return d.p.AppendStack(parent, f)
	}
	key := uint64(parent)<<32 | uint64(f)
	if id, ok := d.belowIndex.Get(key); ok {
		return profile.StackID(id)
	}
	id := d.p.AppendStack(parent, f)
	d.below = append(d.below, true)
	d.belowIndex.Put(key, uint32(id))
	return id
}

// merge marks frame f as made of a second JFR frame, and the stacks it is
// on the path of as below a merged frame.
func (d *decoder) merge(f profile.FrameID) {
	if int(f) >= len(d.merged) {
		d.merged = append(d.merged, make([]bool, int(f)+1-len(d.merged))...)
	}
	if d.merged[f] {
		return
	}
	d.merged[f] = true
	if d.merges++; d.merges > maxMerges {
		d.fresh = false // the passes below would cost more than lookups
		return
	}
	for i := 1; i < len(d.below); i++ { // parents come before their children
		s := profile.StackID(i)
		if d.below[i] {
			continue
		}
		if parent, leaf := d.p.Parent(s), d.p.Leaf(s); d.below[parent] || leaf == f {
			d.below[i] = true
			d.belowIndex.Put(uint64(parent)<<32|uint64(leaf), uint32(s))
		}
	}
	if 4*d.belowIndex.Len() > len(d.below) {
		d.fresh = false // most stacks need a lookup anyway
	}
}

// maxMerges is how many merged frames a chunk may have before its stacks
// are all looked up: each costs a pass over the chunk's stacks. A JDK
// recording's chunk has a handful; async-profiler's may have dozens.
const maxMerges = 8

// frame returns the profile frame of a JFR frame, or noFrame when the
// chunk lacks its method.
func (d *decoder) frame(ref frameRef) profile.FrameID {
	mi := &d.methodInfos[d.method(ref.method)]
	// A method is seen at a few lines: a short list beats a map.
	for _, lf := range mi.lines {
		if lf.line == ref.line {
			return lf.frame
		}
	}
	if len(mi.lines) >= maxLines {
		if fid, ok := d.frames[ref]; ok {
			return fid
		}
		fid := d.newFrame(mi, ref.line)
		d.frames[ref] = fid
		return fid
	}
	fid := d.newFrame(mi, ref.line)
	mi.lines = append(mi.lines, lineFrame{ref.line, fid})
	return fid
}

// maxLines is how many lines of a method frame keeps in its list; further
// lines go to a map.
const maxLines = 16

// lineFrame is the profile frame of a method at a line.
type lineFrame struct {
	line  uint32
	frame profile.FrameID
}

func (d *decoder) newFrame(mi *methodInfo, line uint32) profile.FrameID {
	if !mi.ok {
		return noFrame
	}
	n := len(d.p.Frames)
	id := d.p.AddFrame(profile.Frame{Name: mi.name, File: mi.file, Line: int32(line), Kind: mi.kind})
	if int(id) < n && d.fresh {
		d.merge(id)
	}
	return id
}

// noFrame marks a method key the chunk does not resolve.
const noFrame = ^profile.FrameID(0)

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

// ticksToNanos converts a duration in ticks to nanoseconds.
func (d *decoder) ticksToNanos(t uint64) int64 {
	tps := d.hdr.ticksPerSecond
	dt := int64(t)
	return dt/tps*1e9 + dt%tps*1e9/tps
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
