// Package pyspark decodes the records of phil_stopwatch's PySpark profilers:
// the stack sampler's s_<rdd>_stack.json and the psutil sampler's
// s_<rdd>_<pid>_cpumem.json, both JSON lines.
//
// A stack record is {"stacktrace":[...],"count":N,"i_d":"..."} with frames
// leaf first, each "file:function:line". Frames become profile.KindPython
// frames named "file:function" (the file as written, usually an absolute
// path) with File and Line set (profile.ParsePythonFrame), so a flame graph
// shows one node per function; encoders that want line granularity append
// Line themselves.
//
// A cpumem record is {"pid","epochMillis","pmem_rss","pmem_vms",
// "pmem_pfaults","cpu_percent"}; each field becomes a profile.Series
// labelled with the worker's pid.
package pyspark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
)

// MaxLineSize bounds one JSON line; longer lines are skipped with a warning.
const MaxLineSize = 64 << 20

// Series names of cpumem records.
const (
	SeriesRSS        = "python.memory.rss"
	SeriesVMS        = "python.memory.vms"
	SeriesPageFaults = "python.page_faults"
	SeriesCPU        = "python.cpu.percent"
)

// LabelPID labels the series of one Python worker process.
const LabelPID = "pid"

// Sniff reports whether head, the start of a file, looks like PySpark
// profiler records: a JSON object with "stacktrace" and "i_d", or with
// "pid", "epochMillis" and "cpu_percent".
func Sniff(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	}
	has := func(key string) bool { return bytes.Contains(head, []byte(`"`+key+`"`)) }
	return (has("stacktrace") && has("i_d")) || (has("pid") && has("epochMillis") && has("cpu_percent"))
}

// record is the union of both record kinds; present fields tell them apart.
type record struct {
	Stacktrace  *[]string `json:"stacktrace"`
	Count       *int64    `json:"count"`
	ID          string    `json:"i_d"`
	PID         *int64    `json:"pid"`
	EpochMillis *int64    `json:"epochMillis"`
	RSS         float64   `json:"pmem_rss"`
	VMS         float64   `json:"pmem_vms"`
	PageFaults  float64   `json:"pmem_pfaults"`
	CPUPercent  float64   `json:"cpu_percent"`
}

// Decode decodes PySpark profiler records, stack and cpumem records alike,
// one JSON object a line. Lines that are not such records are skipped and
// reported in the profile's Warnings; Decode fails only when no line is a
// record, returning a *profile.DecodeError naming the first bad line.
// Stack samples have type profile.TypeSamples and no time.
func Decode(data []byte, source string) (*profile.Profile, error) {
	p := profile.New()
	p.Source = source
	d := decoder{p: p, series: map[seriesKey]int{}}
	bad := profile.BadLines{Source: source}
	records, lineNo := 0, 0
	for line := range bytes.Lines(data) {
		lineNo++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := d.line(line); err != nil {
			bad.Add(p, lineNo, err)
			continue
		}
		records++
	}
	firstErr := bad.Finish(p)
	if records == 0 {
		if firstErr == nil {
			return p, &profile.DecodeError{Source: source, Offset: 0, Msg: "no PySpark profiler records"}
		}
		return p, firstErr
	}
	return p, nil
}

type seriesKey struct {
	name string
	pid  int64
}

type decoder struct {
	p      *profile.Profile
	typ    profile.TypeID
	hasTyp bool
	series map[seriesKey]int
}

func (d *decoder) line(line []byte) error {
	if len(line) > MaxLineSize {
		return fmt.Errorf("line of %d bytes exceeds the %d-byte limit", len(line), MaxLineSize)
	}
	if line[0] != '{' {
		return fmt.Errorf("expected a JSON object, found %q", clip(line))
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("not a PySpark record: %v", err)
	}
	switch {
	case r.Stacktrace != nil:
		if r.Count == nil {
			return fmt.Errorf("stack record without \"count\"")
		}
		if *r.Count < 0 {
			return fmt.Errorf("stack record with negative count %d", *r.Count)
		}
		if !d.hasTyp {
			d.typ, d.hasTyp = d.p.AddType(profile.TypeSamples), true
		}
		d.p.Add(profile.Sample{Stack: d.p.AddPythonStack(*r.Stacktrace), Value: *r.Count, Type: d.typ})
	case r.PID != nil && r.EpochMillis != nil:
		t := *r.EpochMillis * 1e6
		d.point(SeriesRSS, "bytes", *r.PID, t, r.RSS)
		d.point(SeriesVMS, "bytes", *r.PID, t, r.VMS)
		d.point(SeriesPageFaults, "count", *r.PID, t, r.PageFaults)
		d.point(SeriesCPU, "percent", *r.PID, t, r.CPUPercent)
		if d.p.Start == 0 || t < d.p.Start {
			d.p.Start = t
		}
		if t > d.p.End {
			d.p.End = t
		}
	default:
		return fmt.Errorf("neither a stack record (\"stacktrace\") nor a cpumem record (\"pid\", \"epochMillis\"): %q", clip(line))
	}
	return nil
}

func (d *decoder) point(name, unit string, pid, t int64, v float64) {
	k := seriesKey{name, pid}
	i, ok := d.series[k]
	if !ok {
		i = len(d.p.Series)
		d.p.Series = append(d.p.Series, profile.Series{
			Name:   name,
			Unit:   unit,
			Labels: profile.Labels{{Name: LabelPID, Value: strconv.FormatInt(pid, 10)}},
		})
		d.series[k] = i
	}
	d.p.Series[i].Points = append(d.p.Series[i].Points, profile.Point{Time: t, Value: v})
}

// clip shortens b for an error message.
func clip(b []byte) string {
	const n = 80
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
