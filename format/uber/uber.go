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
// id label the samples, and sparkthread.LabelProfile adds Spark's thread
// pool, stage and task labels.
package uber

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/sparkprof/sparkprof/format/pyspark"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/sparkthread"
)

// MaxLineSize bounds one input line; longer lines are skipped with a warning.
const MaxLineSize = 64 << 20

// maxWarnings bounds the per-line warnings kept; the rest are counted.
const maxWarnings = 100

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
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	has := func(key string) bool { return bytes.Contains(head, []byte(`"`+key+`"`)) }
	// A PySpark stack record, which Decode reads too, ends with "i_d"; a
	// Stacktrace record's thread name may lie beyond a short head.
	return (has("stacktrace") && (has("threadName") || !has("i_d"))) ||
		has("processCpuLoad") || has("heapMemoryTotalUsed") ||
		has("xmxBytes") || has("jvmInputArguments")
}

var consoleMarker = []byte("ConsoleOutputReporter - ")

// num is a JSON number that may also be written as a string ("NaN",
// "Infinity", "12"), as the profiler's Jackson serialiser does for
// non-finite doubles. ok is false for null, absent and non-finite values.
type num struct {
	v  float64
	ok bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = num{}
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(s)
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("expected a number, found %q", b)
	}
	*n = num{v, !math.IsNaN(v) && !math.IsInf(v, 0)}
	return nil
}

type gcRecord struct {
	Name            string `json:"name"`
	CollectionCount num    `json:"collectionCount"`
	CollectionTime  num    `json:"collectionTime"` // milliseconds
}

type memoryPool struct {
	Name      string `json:"name"`
	UsageUsed num    `json:"usageUsed"`
}

type bufferPool struct {
	Name          string `json:"name"`
	Count         num    `json:"count"`
	TotalCapacity num    `json:"totalCapacity"`
	MemoryUsed    num    `json:"memoryUsed"`
}

// record is the union of the record kinds; present fields tell them apart.
type record struct {
	// Stacktrace.
	Stacktrace  *[]string `json:"stacktrace"`
	Count       *int64    `json:"count"`
	ThreadName  string    `json:"threadName"`
	ThreadState string    `json:"threadState"`
	StartEpoch  int64     `json:"startEpoch"`
	EndEpoch    int64     `json:"endEpoch"`

	// PySpark stack records.
	ID string `json:"i_d"`

	// Common to all jvm-profiler records.
	Host        string  `json:"host"`
	Name        string  `json:"name"`
	AppID       *string `json:"appId"`
	EpochMillis int64   `json:"epochMillis"`

	// CpuAndMemory.
	ProcessCPULoad         num          `json:"processCpuLoad"`
	SystemCPULoad          num          `json:"systemCpuLoad"`
	ProcessCPUTime         num          `json:"processCpuTime"`
	HeapMemoryTotalUsed    num          `json:"heapMemoryTotalUsed"`
	HeapMemoryCommitted    num          `json:"heapMemoryCommitted"`
	HeapMemoryMax          num          `json:"heapMemoryMax"`
	NonHeapMemoryTotalUsed num          `json:"nonHeapMemoryTotalUsed"`
	NonHeapMemoryCommitted num          `json:"nonHeapMemoryCommitted"`
	NonHeapMemoryMax       num          `json:"nonHeapMemoryMax"`
	VMRSS                  num          `json:"vmRSS"`
	VMHWM                  num          `json:"vmHWM"`
	VMSize                 num          `json:"vmSize"`
	VMPeak                 num          `json:"vmPeak"`
	GC                     []gcRecord   `json:"gc"`
	MemoryPools            []memoryPool `json:"memoryPools"`
	BufferPools            []bufferPool `json:"bufferPools"`

	// ProcessInfo.
	XmxBytes          *num    `json:"xmxBytes"`
	JVMInputArguments *string `json:"jvmInputArguments"`
}

func (r *record) isCPUAndMemory() bool {
	return r.GC != nil || r.ProcessCPULoad.ok || r.HeapMemoryTotalUsed.ok || r.MemoryPools != nil
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
	var firstErr *profile.DecodeError
	var records, bad, other int
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
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
		}
		if err := d.record(line, kind); err != nil {
			bad++
			if firstErr == nil {
				firstErr = &profile.DecodeError{Source: source, Offset: -1, Line: lineNo, Msg: err.Error()}
			}
			if bad <= maxWarnings {
				d.p.Warnf("line %d: %v", lineNo, err)
			}
			continue
		}
		records++
	}
	if bad > maxWarnings {
		d.p.Warnf("%d more bad lines not shown", bad-maxWarnings)
	}
	if records == 0 {
		if firstErr == nil {
			return d.p, &profile.DecodeError{Source: source, Offset: 0,
				Msg: fmt.Sprintf("no jvm-profiler records in %d lines: expected JSON records or ConsoleOutputReporter lines", other)}
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
}

// record decodes one JSON record; kind is the Console reporter's profiler
// name, or "" for File reporter lines.
func (d *decoder) record(line []byte, kind string) error {
	if len(line) > MaxLineSize {
		return fmt.Errorf("line of %d bytes exceeds the %d-byte limit", len(line), MaxLineSize)
	}
	switch kind {
	case "", "Stacktrace", "CpuAndMemory", "ProcessInfo":
	default:
		d.unsupported++
		return nil
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("not a jvm-profiler record: %v", err)
	}
	switch {
	case r.Stacktrace != nil:
		return d.stacktrace(&r)
	case r.isCPUAndMemory():
		d.cpuAndMemory(&r)
	case r.XmxBytes != nil || r.JVMInputArguments != nil:
		d.processInfo(&r)
	case kind != "":
		return fmt.Errorf("%s record without its fields: %q", kind, clip(line))
	default:
		return fmt.Errorf("not a Stacktrace, CpuAndMemory or ProcessInfo record: %q", clip(line))
	}
	return nil
}

func (d *decoder) stacktrace(r *record) error {
	if r.Count == nil {
		return fmt.Errorf("missing \"count\" in Stacktrace record")
	}
	if *r.Count < 0 {
		return fmt.Errorf("negative count %d in Stacktrace record", *r.Count)
	}
	if !d.hasTyp {
		d.typ, d.hasTyp = d.p.AddType(profile.TypeSamples), true
	}
	st := *r.Stacktrace
	if r.ID != "" && r.ThreadName == "" {
		// A PySpark stack record: no thread, host or time.
		d.p.Add(profile.Sample{Stack: pyspark.AddStack(d.p, st), Value: *r.Count, Type: d.typ})
		return nil
	}
	s := profile.NoStack
	for i := len(st) - 1; i >= 0; i-- {
		f, ok := d.frames[st[i]]
		if !ok {
			f = d.p.AddFrame(profile.Frame{Name: st[i], Kind: profile.KindJava})
			d.frames[st[i]] = f
		}
		s = d.p.Push(s, f)
	}
	var thread profile.ThreadID
	if r.ThreadName != "" {
		thread = d.p.AddThread(profile.Thread{Name: r.ThreadName})
	}
	d.p.Add(profile.Sample{
		Stack:  s,
		Value:  *r.Count,
		Time:   r.EndEpoch * 1e6,
		Labels: d.labels(r),
		Thread: thread,
		Type:   d.typ,
		State:  profile.ParseThreadState(r.ThreadState),
	})
	d.span(r.StartEpoch)
	d.span(r.EndEpoch)
	return nil
}

// labels returns the label set of the record's host and app id.
func (d *decoder) labels(r *record) profile.LabelSetID {
	k := setKey{host: r.Host}
	if r.AppID != nil {
		k.app = *r.AppID
	}
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

func (d *decoder) cpuAndMemory(r *record) {
	t := r.EpochMillis * 1e6
	d.span(r.EpochMillis)
	pt := func(name, unit, label, sub string, v num, scale float64) {
		if v.ok {
			d.point(name, unit, r.Name, label, sub, t, v.v*scale)
		}
	}
	pt(SeriesProcessCPULoad, "ratio", "", "", r.ProcessCPULoad, 1)
	pt(SeriesSystemCPULoad, "ratio", "", "", r.SystemCPULoad, 1)
	pt(SeriesProcessCPUTime, "nanoseconds", "", "", r.ProcessCPUTime, 1)
	pt(SeriesHeapUsed, "bytes", "", "", r.HeapMemoryTotalUsed, 1)
	pt(SeriesHeapCommitted, "bytes", "", "", r.HeapMemoryCommitted, 1)
	pt(SeriesHeapMax, "bytes", "", "", r.HeapMemoryMax, 1)
	pt(SeriesNonHeapUsed, "bytes", "", "", r.NonHeapMemoryTotalUsed, 1)
	pt(SeriesNonHeapCommitted, "bytes", "", "", r.NonHeapMemoryCommitted, 1)
	pt(SeriesNonHeapMax, "bytes", "", "", r.NonHeapMemoryMax, 1)
	pt(SeriesRSS, "bytes", "", "", r.VMRSS, 1)
	pt(SeriesRSSPeak, "bytes", "", "", r.VMHWM, 1)
	pt(SeriesVirtual, "bytes", "", "", r.VMSize, 1)
	pt(SeriesVirtualPeak, "bytes", "", "", r.VMPeak, 1)
	for _, g := range r.GC {
		pt(SeriesGCCount, "count", LabelGC, g.Name, g.CollectionCount, 1)
		pt(SeriesGCTime, "nanoseconds", LabelGC, g.Name, g.CollectionTime, 1e6)
	}
	for _, m := range r.MemoryPools {
		pt(SeriesPoolUsed, "bytes", LabelPool, m.Name, m.UsageUsed, 1)
	}
	for _, b := range r.BufferPools {
		pt(SeriesBufferUsed, "bytes", LabelPool, b.Name, b.MemoryUsed, 1)
		pt(SeriesBufferCapacity, "bytes", LabelPool, b.Name, b.TotalCapacity, 1)
		pt(SeriesBufferCount, "count", LabelPool, b.Name, b.Count, 1)
	}
}

func (d *decoder) processInfo(r *record) {
	d.span(r.EpochMillis)
	if r.Host != "" {
		d.info = append(d.info, profile.Label{Name: profile.LabelHost, Value: r.Host})
	}
	if r.AppID != nil {
		d.info = append(d.info, profile.Label{Name: profile.LabelAppID, Value: *r.AppID})
	}
	if r.XmxBytes != nil && r.XmxBytes.ok {
		d.point(SeriesXmx, "bytes", r.Name, "", "", r.EpochMillis*1e6, r.XmxBytes.v)
	}
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

// finish moves labels every sample shares to the profile, adds ProcessInfo
// labels and labels samples by Spark thread.
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
	sparkthread.LabelProfile(p)
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 80
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
