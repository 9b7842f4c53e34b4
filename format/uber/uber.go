// Package uber decodes the records of Uber's JVM profiler
// (github.com/uber-common/jvm-profiler): Stacktrace samples, CpuAndMemory
// metrics and ProcessInfo.
//
// Input is either the File reporter's output, one JSON record a line, or a
// log holding Console reporter lines ("... ConsoleOutputReporter -
// Stacktrace: {...}") among other lines, which are skipped and counted.
// PySpark stack records (package pyspark), which phil_stopwatch
// concatenates with Stacktrace records, are decoded as Python stacks.
//
// Stacktrace records become samples of type profile.TypeSamples valued by
// their count, on the record's thread and thread state, at endEpoch.
// CpuAndMemory records become profile.Series (see the Series* names) and
// ProcessInfo records profile labels and the SeriesXmx series. Host and app
// id label the samples; format.Decode adds the labels of Spark's thread
// names, as for every format.
package uber

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/sparkprof/sparkprof/profile"
)

// MaxLineSize bounds one input line; longer lines are skipped with a warning.
const MaxLineSize = 64 << 20

// Series names. Series of one JVM carry the LabelProcess label; per-collector
// and per-pool series also LabelGC, LabelPool.
const (
	SeriesProcessCPULoad   = "process.cpu.load"   // ratio of all CPUs
	SeriesSystemCPULoad    = "system.cpu.load"    // ratio of all CPUs
	SeriesProcessCPUTime   = "process.cpu.time"   // nanoseconds, cumulative
	SeriesHeapUsed         = "jvm.heap.used"      // bytes
	SeriesHeapCommitted    = "jvm.heap.committed" // bytes
	SeriesHeapMax          = "jvm.heap.max"       // bytes
	SeriesNonHeapUsed      = "jvm.nonheap.used"   // bytes
	SeriesNonHeapCommitted = "jvm.nonheap.committed"
	SeriesNonHeapMax       = "jvm.nonheap.max"
	SeriesGCCount          = "jvm.gc.count"         // collections, cumulative, per LabelGC
	SeriesGCTime           = "jvm.gc.time"          // nanoseconds, cumulative, per LabelGC
	SeriesPoolUsed         = "jvm.memory.pool.used" // bytes, per LabelPool
	SeriesBufferUsed       = "jvm.buffer.used"      // bytes, per LabelPool
	SeriesBufferCapacity   = "jvm.buffer.capacity"  // bytes, per LabelPool
	SeriesBufferCount      = "jvm.buffer.count"     // buffers, per LabelPool
	SeriesRSS              = "process.memory.rss"   // bytes (vmRSS)
	SeriesRSSPeak          = "process.memory.rss_peak"
	SeriesVirtual          = "process.memory.virtual"
	SeriesVirtualPeak      = "process.memory.virtual_peak"
	SeriesXmx              = "jvm.heap.xmx" // bytes, from ProcessInfo
)

// Series label names.
const (
	LabelProcess = "process" // the record's "name", pid@host
	LabelGC      = "gc"      // garbage collector name
	LabelPool    = "pool"    // memory or buffer pool name
)

// Sniff reports whether head, the start of a file, holds jvm-profiler
// records: a Stacktrace, CpuAndMemory or ProcessInfo JSON object, or a
// Console reporter line.
func Sniff(head []byte) bool {
	if bytes.Contains(head, consoleMarker) {
		return true
	}
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	// Records of several kinds may be concatenated, as in phil_stopwatch's
	// CombinedStack.json (PySpark stacks, then Uber ones): any record in
	// the head decides.
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		if uberRecord(line) {
			return true
		}
	}
	return false
}

// uberRecord reports whether a JSON line (possibly cut short) looks like
// one of the Uber record kinds.
func uberRecord(line []byte) bool {
	has := func(key string) bool { return bytes.Contains(line, []byte(`"`+key+`"`)) }
	// A PySpark stack record, which Decode reads too, ends with "i_d"; a
	// Stacktrace record's thread name may lie beyond a short head.
	return (has("stacktrace") && (has("threadName") || !has("i_d"))) ||
		has("processCpuLoad") || has("heapMemoryTotalUsed") ||
		has("xmxBytes") || has("jvmInputArguments")
}

var consoleMarker = []byte("ConsoleOutputReporter - ")

// num is a metric value; ok is false for null, absent and non-finite
// values (Jackson writes NaN as the string "NaN").
type num struct {
	v  float64
	ok bool
}

// getNum returns the number under key, which may be written as a JSON
// number or, for non-finite values, a string ("NaN", "Infinity").
func getNum(v *fastjson.Value, key string) (num, error) {
	f := v.Get(key)
	if f == nil {
		return num{}, nil
	}
	var x float64
	switch f.Type() {
	case fastjson.TypeNull:
		return num{}, nil
	case fastjson.TypeNumber:
		x = f.GetFloat64()
	case fastjson.TypeString:
		var err error
		if x, err = strconv.ParseFloat(string(f.GetStringBytes()), 64); err != nil {
			return num{}, fmt.Errorf("%q: expected a number, found %s", key, clip([]byte(f.String())))
		}
	default:
		return num{}, fmt.Errorf("%q: expected a number, found %s", key, clip([]byte(f.String())))
	}
	return num{x, !math.IsNaN(x) && !math.IsInf(x, 0)}, nil
}

// getString returns the string under key, "" when absent or null.
func getString(v *fastjson.Value, key string) (string, error) {
	f := v.Get(key)
	if f == nil || f.Type() == fastjson.TypeNull {
		return "", nil
	}
	b, err := f.StringBytes()
	if err != nil {
		return "", fmt.Errorf("%q: expected a string, found %s", key, clip([]byte(f.String())))
	}
	return string(b), nil
}

// getInt returns the integer under key and whether it is present.
func getInt(v *fastjson.Value, key string) (int64, bool, error) {
	f := v.Get(key)
	if f == nil || f.Type() == fastjson.TypeNull {
		return 0, false, nil
	}
	n, err := f.Int64()
	if err != nil {
		// Counts and epochs are integers, but accept integral floats.
		x, ferr := f.Float64()
		if ferr != nil || x != math.Trunc(x) || math.Abs(x) > 1<<62 {
			return 0, false, fmt.Errorf("%q: expected an integer, found %s", key, clip([]byte(f.String())))
		}
		n = int64(x)
	}
	return n, true, nil
}

// getArray returns the array under key, nil when absent or null.
func getArray(v *fastjson.Value, key string) ([]*fastjson.Value, error) {
	f := v.Get(key)
	if f == nil || f.Type() == fastjson.TypeNull {
		return nil, nil
	}
	a, err := f.Array()
	if err != nil {
		return nil, fmt.Errorf("%q: expected an array, found %s", key, clip([]byte(f.String())))
	}
	return a, nil
}

// Decode decodes jvm-profiler records. Lines that are not records are
// skipped: log lines silently but counted in one warning, bad records with a
// warning each naming the line. Decode fails with a *profile.DecodeError
// naming the first bad line only when no line is a record.
func Decode(data []byte, source string) (*profile.Profile, error) {
	d := &decoder{
		p:      profile.New(),
		series: map[seriesKey]int{},
		frames: map[string]profile.FrameID{},
		sets:   map[setKey]profile.LabelSetID{},
	}
	d.p.Source = source
	bad := profile.BadLines{Source: source}
	var records, other int
	lineNo := 0
	for line := range bytes.Lines(data) {
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		kind := ""
		if line[0] != '{' {
			i := bytes.Index(line, consoleMarker)
			if i < 0 {
				other++
				continue
			}
			rest := line[i+len(consoleMarker):]
			j := bytes.Index(rest, []byte(": {"))
			if j < 0 {
				other++
				continue
			}
			kind, line = string(rest[:j]), rest[j+2:]
			switch kind {
			case "Stacktrace", "CpuAndMemory", "ProcessInfo":
			default:
				d.unsupported++ // MethodDuration, IO, ThreadInfo, ...
				continue
			}
		}
		if err := d.record(line, kind); err != nil {
			bad.Add(d.p, lineNo, err)
			continue
		}
		records++
	}
	firstErr := bad.Finish(d.p)
	if records == 0 {
		if firstErr == nil {
			return d.p, &profile.DecodeError{Source: source, Offset: 0,
				Msg: fmt.Sprintf("no Stacktrace, CpuAndMemory or ProcessInfo records in %d lines: expected JSON records or ConsoleOutputReporter lines", lineNo)}
		}
		return d.p, firstErr
	}
	if other > 0 {
		d.p.Warnf("skipped %d lines that are not jvm-profiler records", other)
	}
	if d.unsupported > 0 {
		d.p.Warnf("skipped %d records of unsupported kinds", d.unsupported)
	}
	d.finish()
	return d.p, nil
}

type seriesKey struct {
	name, process, sub string
}

type setKey struct {
	host, app string
}

type decoder struct {
	p           *profile.Profile
	typ         profile.TypeID
	hasTyp      bool
	series      map[seriesKey]int
	frames      map[string]profile.FrameID
	sets        map[setKey]profile.LabelSetID
	info        profile.Labels // from ProcessInfo records
	unsupported int
	parser      fastjson.Parser
	strs        [][]byte // scratch for a record's frames
}

// record decodes one JSON record; kind is the Console reporter's profiler
// name, or "" for File reporter lines. jvm-profiler writes a handful of
// record kinds told apart by their fields; fastjson parses a line once
// without reflection, and the fields each kind needs are read from it.
func (d *decoder) record(line []byte, kind string) error {
	if len(line) > MaxLineSize {
		return fmt.Errorf("line of %d bytes exceeds the %d-byte limit", len(line), MaxLineSize)
	}
	v, err := d.parser.ParseBytes(line)
	if err != nil {
		return fmt.Errorf("not a jvm-profiler record: %v", err)
	}
	if v.Type() != fastjson.TypeObject {
		return fmt.Errorf("not a jvm-profiler record: expected a JSON object, found %s", clip(line))
	}
	switch {
	case v.Exists("stacktrace"):
		return d.stacktrace(v)
	case v.Exists("gc") || v.Exists("processCpuLoad") || v.Exists("heapMemoryTotalUsed") || v.Exists("memoryPools"):
		return d.cpuAndMemory(v)
	case v.Exists("xmxBytes") || v.Exists("jvmInputArguments"):
		return d.processInfo(v)
	case kind != "":
		return fmt.Errorf("%s record without its fields: %q", kind, clip(line))
	}
	return fmt.Errorf("not a Stacktrace, CpuAndMemory or ProcessInfo record: %q", clip(line))
}

// common holds the fields every jvm-profiler record has.
type common struct {
	host, name, appID string
	hasApp            bool
	epochMillis       int64
}

func getCommon(v *fastjson.Value) (c common, err error) {
	if c.host, err = getString(v, "host"); err != nil {
		return c, err
	}
	if c.name, err = getString(v, "name"); err != nil {
		return c, err
	}
	if c.appID, err = getString(v, "appId"); err != nil {
		return c, err
	}
	c.hasApp = c.appID != ""
	c.epochMillis, _, err = getInt(v, "epochMillis")
	return c, err
}

func (d *decoder) stacktrace(v *fastjson.Value) error {
	st, err := getArray(v, "stacktrace")
	if err != nil {
		return err
	}
	count, ok, err := getInt(v, "count")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("missing \"count\" in Stacktrace record")
	}
	if count < 0 {
		return fmt.Errorf("negative count %d in Stacktrace record", count)
	}
	thread, err := getString(v, "threadName")
	if err != nil {
		return err
	}
	if !d.hasTyp {
		d.typ, d.hasTyp = d.p.AddType(profile.TypeSamples), true
	}
	frames := d.strs[:0]
	for i, f := range st {
		b, err := f.StringBytes()
		if err != nil {
			return fmt.Errorf("\"stacktrace\"[%d]: expected a string, found %s", i, clip([]byte(f.String())))
		}
		frames = append(frames, b)
	}
	d.strs = frames
	if thread == "" && v.Exists("i_d") {
		// A PySpark stack record: no thread, host or time.
		leafFirst := make([]string, len(frames))
		for i, b := range frames {
			leafFirst[i] = string(b)
		}
		d.p.Add(profile.Sample{Stack: d.p.AddPythonStack(leafFirst), Value: count, Type: d.typ})
		return nil
	}
	c, err := getCommon(v)
	if err != nil {
		return err
	}
	state, err := getString(v, "threadState")
	if err != nil {
		return err
	}
	start, _, err := getInt(v, "startEpoch")
	if err != nil {
		return err
	}
	end, _, err := getInt(v, "endEpoch")
	if err != nil {
		return err
	}
	s := profile.NoStack
	for i := len(frames) - 1; i >= 0; i-- {
		f, ok := d.frames[string(frames[i])]
		if !ok {
			name := string(frames[i])
			f = d.p.AddFrame(profile.Frame{Name: name, Kind: profile.KindJava})
			d.frames[name] = f
		}
		s = d.p.Push(s, f)
	}
	var tid profile.ThreadID
	if thread != "" {
		tid = d.p.AddThread(profile.Thread{Name: thread})
	}
	d.p.Add(profile.Sample{
		Stack:  s,
		Value:  count,
		Time:   end * 1e6,
		Labels: d.labels(c),
		Thread: tid,
		Type:   d.typ,
		State:  profile.ParseThreadState(state),
	})
	d.span(start)
	d.span(end)
	return nil
}

// labels returns the label set of the record's host and app id.
func (d *decoder) labels(c common) profile.LabelSetID {
	k := setKey{host: c.host, app: c.appID}
	id, ok := d.sets[k]
	if !ok {
		id = d.p.AddLabels(profile.Labels{{Name: profile.LabelHost, Value: k.host}, {Name: profile.LabelAppID, Value: k.app}})
		d.sets[k] = id
	}
	return id
}

// span widens the profile's time range to include ms, Unix milliseconds.
func (d *decoder) span(ms int64) {
	if ms <= 0 {
		return
	}
	t := ms * 1e6
	if d.p.Start == 0 || t < d.p.Start {
		d.p.Start = t
	}
	if t > d.p.End {
		d.p.End = t
	}
}

// cpuAndMemory adds a CpuAndMemory record's metrics to the series.
func (d *decoder) cpuAndMemory(v *fastjson.Value) error {
	c, err := getCommon(v)
	if err != nil {
		return err
	}
	t := c.epochMillis * 1e6
	d.span(c.epochMillis)
	add := func(o *fastjson.Value, key, name, unit, label, sub string, scale float64) error {
		n, err := getNum(o, key)
		if err != nil {
			return err
		}
		if n.ok {
			d.point(name, unit, c.name, label, sub, t, n.v*scale)
		}
		return nil
	}
	for _, m := range []struct{ key, name, unit string }{
		{"processCpuLoad", SeriesProcessCPULoad, "ratio"},
		{"systemCpuLoad", SeriesSystemCPULoad, "ratio"},
		{"processCpuTime", SeriesProcessCPUTime, "nanoseconds"},
		{"heapMemoryTotalUsed", SeriesHeapUsed, "bytes"},
		{"heapMemoryCommitted", SeriesHeapCommitted, "bytes"},
		{"heapMemoryMax", SeriesHeapMax, "bytes"},
		{"nonHeapMemoryTotalUsed", SeriesNonHeapUsed, "bytes"},
		{"nonHeapMemoryCommitted", SeriesNonHeapCommitted, "bytes"},
		{"nonHeapMemoryMax", SeriesNonHeapMax, "bytes"},
		{"vmRSS", SeriesRSS, "bytes"},
		{"vmHWM", SeriesRSSPeak, "bytes"},
		{"vmSize", SeriesVirtual, "bytes"},
		{"vmPeak", SeriesVirtualPeak, "bytes"},
	} {
		if err := add(v, m.key, m.name, m.unit, "", "", 1); err != nil {
			return err
		}
	}
	// Per-collector and per-pool arrays: key, series fields.
	type metric struct {
		key, name, unit string
		scale           float64
	}
	arrays := []struct {
		key, label string
		metrics    []metric
	}{
		{"gc", LabelGC, []metric{
			{"collectionCount", SeriesGCCount, "count", 1},
			{"collectionTime", SeriesGCTime, "nanoseconds", 1e6}, // milliseconds
		}},
		{"memoryPools", LabelPool, []metric{{"usageUsed", SeriesPoolUsed, "bytes", 1}}},
		{"bufferPools", LabelPool, []metric{
			{"memoryUsed", SeriesBufferUsed, "bytes", 1},
			{"totalCapacity", SeriesBufferCapacity, "bytes", 1},
			{"count", SeriesBufferCount, "count", 1},
		}},
	}
	for _, a := range arrays {
		elems, err := getArray(v, a.key)
		if err != nil {
			return err
		}
		for i, e := range elems {
			if e.Type() != fastjson.TypeObject {
				return fmt.Errorf("%q[%d]: expected an object", a.key, i)
			}
			name, err := getString(e, "name")
			if err != nil {
				return fmt.Errorf("%q[%d]: %v", a.key, i, err)
			}
			for _, m := range a.metrics {
				if err := add(e, m.key, m.name, m.unit, a.label, name, m.scale); err != nil {
					return fmt.Errorf("%q[%d]: %v", a.key, i, err)
				}
			}
		}
	}
	return nil
}

// processInfo adds a ProcessInfo record's host and app id to the
// profile's labels and its -Xmx to the SeriesXmx series.
func (d *decoder) processInfo(v *fastjson.Value) error {
	c, err := getCommon(v)
	if err != nil {
		return err
	}
	xmx, err := getNum(v, "xmxBytes")
	if err != nil {
		return err
	}
	d.span(c.epochMillis)
	d.info = append(d.info,
		profile.Label{Name: profile.LabelHost, Value: c.host},
		profile.Label{Name: profile.LabelAppID, Value: c.appID})
	if xmx.ok {
		d.point(SeriesXmx, "bytes", c.name, "", "", c.epochMillis*1e6, xmx.v)
	}
	return nil
}

func (d *decoder) point(name, unit, process, label, sub string, t int64, v float64) {
	k := seriesKey{name, process, sub}
	i, ok := d.series[k]
	if !ok {
		ls := profile.Labels{{Name: LabelProcess, Value: process}}
		if label != "" {
			ls = append(ls, profile.Label{Name: label, Value: sub})
		}
		i = len(d.p.Series)
		d.p.Series = append(d.p.Series, profile.Series{Name: name, Unit: unit, Labels: ls.Normalize()})
		d.series[k] = i
	}
	d.p.Series[i].Points = append(d.p.Series[i].Points, profile.Point{Time: t, Value: v})
}

// finish moves labels every sample shares to the profile and adds
// ProcessInfo labels.
func (d *decoder) finish() {
	p := d.p
	common := profile.NoLabels
	for i, s := range p.Samples {
		if i == 0 {
			common = s.Labels
		} else if s.Labels != common {
			common = profile.NoLabels
			break
		}
	}
	if common != profile.NoLabels {
		p.Labels = p.LabelSet(common)
		for i := range p.Samples {
			p.Samples[i].Labels = profile.NoLabels
		}
	}
	if len(d.info) > 0 {
		p.Labels = d.info.Normalize().Merge(p.Labels)
	}
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 80
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
