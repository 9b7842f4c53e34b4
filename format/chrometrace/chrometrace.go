// Package chrometrace reads Chrome's trace event format as py-spy writes it
// (py-spy record --format chrometrace): for each thread, a "B" event when a
// frame appears on its sampled stack and an "E" event when it leaves it,
// stamped in microseconds since the recording began. The time between two
// events of a thread is wall time spent on the stack the events left.
//
// Recorded with --idle, that is all of the thread's time; without it,
// py-spy leaves out idle samples but not their time, which then counts
// for the stack before them.
package chrometrace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/profile"
)

// MaxSpan is the longest a sample is: the time a stack was held is cut
// into samples no longer than this, so that each is attributed by its
// own time (a worker's wait can outlast the task it began in).
const MaxSpan = int64(100e6)

// maxSamples bounds the samples of one trace: 4 Mi samples of MaxSpan
// are 116 hours of one thread's time.
const maxSamples = 4 << 20

// maxTs bounds an event's time: a year in µs.
const maxTs = 365 * 24 * 3600 * 1e6

// event is one trace event; py-spy writes B, E and M (thread name).
type event struct {
	Name string   `json:"name"`
	Ph   string   `json:"ph"`
	Pid  int64    `json:"pid"`
	Tid  int64    `json:"tid"`
	Ts   *float64 `json:"ts"` // µs since the recording began
	Args struct {
		Filename string `json:"filename"`
		Line     int64  `json:"line"`
		Name     string `json:"name"` // of an M thread_name event
	} `json:"args"`
}

// Sniff reports whether head starts a JSON array of trace events with
// B or E phases, as py-spy writes, or an object holding one in
// "traceEvents".
func Sniff(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if !bytes.HasPrefix(head, []byte("[")) && !bytes.HasPrefix(head, []byte(`{"traceEvents"`)) {
		return false
	}
	return bytes.Contains(head, []byte(`"ph":"B"`)) || bytes.Contains(head, []byte(`"ph":"E"`))
}

// Decode reads a trace whose times count from zero: its samples carry no
// time. DecodeAt gives them one.
func Decode(data []byte, source string) (*profile.Profile, error) {
	return DecodeAt(data, source, 0)
}

// DecodeAt reads a trace into wall-time samples, one per stretch of at
// most MaxSpan of each thread's time on one stack, each timed at its
// middle from start (Unix ns; 0 leaves the samples untimed). Each process's threads are
// named "python PID TID" (with py-spy's name for the thread), and their
// frames are Python frames named "file:function".
func DecodeAt(data []byte, source string, start int64) (*profile.Profile, error) {
	p := profile.New()
	p.Source = source
	events, err := parse(data, source)
	if err != nil {
		return p, err
	}
	d := decoder{p: p, source: source, start: start, wall: p.AddType(profile.TypeWall),
		threads: map[int64]*thread{}, names: map[int64]string{}, ids: map[[2]int64]profile.ThreadID{}}
	for i := range events {
		if err := d.event(&events[i], i); err != nil {
			return p, err
		}
	}
	if len(p.Samples) == 0 && d.begins == 0 {
		return p, &profile.DecodeError{Source: source, Offset: -1, Msg: "no B (begin) events: not a sampled trace as py-spy writes one (py-spy record --format chrometrace)"}
	}
	if start != 0 {
		p.Start, p.End = start, start+d.last*int64(1e3)
	}
	return p, nil
}

// parse reads the events of a trace: a JSON array, or an object with them
// in "traceEvents".
func parse(data []byte, source string) ([]event, error) {
	var events []event
	var err error
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		var doc struct {
			TraceEvents []event `json:"traceEvents"`
		}
		err = json.Unmarshal(data, &doc)
		events = doc.TraceEvents
	} else {
		err = json.Unmarshal(data, &events)
	}
	if err != nil {
		return nil, profile.JSONError(source, "not a trace: want a JSON array of trace events", err)
	}
	return events, nil
}

// thread is a thread's stack as the events so far left it. py-spy keys
// its threads by their id alone, and so do its B and E events: a worker
// forked from a sampled process (--subprocesses) has the same thread id
// as the thread that forked it, and its events follow that thread's. The
// stack is that of the process of the last event.
type thread struct {
	pid    int64
	frames []profile.FrameID // root first
	since  int64             // µs: when the stack became what it is
}

type decoder struct {
	p       *profile.Profile
	source  string
	start   int64 // Unix ns of the trace's zero; 0: untimed
	wall    profile.TypeID
	threads map[int64]*thread             // by tid
	names   map[int64]string              // py-spy's thread names, from M events, by tid
	ids     map[[2]int64]profile.ThreadID // by pid and tid
	begins  int
	last    int64 // µs: the latest event
}

func (d *decoder) errorf(i int, format string, args ...any) error {
	return &profile.DecodeError{Source: d.source, Offset: -1, Field: fmt.Sprintf("[%d]", i), Msg: fmt.Sprintf(format, args...)}
}

func (d *decoder) event(e *event, i int) error {
	switch e.Ph {
	case "M":
		if e.Name == "thread_name" {
			d.names[e.Tid] = e.Args.Name
		}
		return nil
	case "B", "E":
	default:
		return nil // counters, instants, ...: not samples
	}
	if e.Ts == nil || !(*e.Ts >= 0 && *e.Ts <= maxTs) {
		return d.errorf(i, "%s event without a time in µs since the trace began (\"ts\"), or one past a year", e.Ph)
	}
	ts := int64(*e.Ts)
	th := d.threads[e.Tid]
	if th == nil {
		th = &thread{since: ts}
		d.threads[e.Tid] = th
	}
	if ts < th.since {
		return d.errorf(i, "time %d µs is before the thread's last event at %d µs: events must be in time order per thread", ts, th.since)
	}
	if err := d.hold(e.Tid, th, ts); err != nil {
		return d.errorf(i, "%v", err)
	}
	th.pid = e.Pid
	d.last = max(d.last, ts)
	if e.Ph == "B" {
		d.begins++
		th.frames = append(th.frames, d.p.AddFrame(frame(e)))
		return nil
	}
	name := frame(e).Name
	for j := len(th.frames) - 1; j >= 0; j-- {
		if d.p.Frames[th.frames[j]].Name == name {
			th.frames = th.frames[:j]
			return nil
		}
	}
	return d.errorf(i, "E event for %q, which is not on the thread's stack", name)
}

// hold adds the samples of the time a thread held its stack until ts.
func (d *decoder) hold(tid int64, th *thread, ts int64) error {
	from, until := th.since*1e3, ts*1e3
	th.since = ts
	if len(th.frames) == 0 || until <= from {
		return nil
	}
	if n := (until - from + MaxSpan - 1) / MaxSpan; int64(len(d.p.Samples))+n > maxSamples {
		return fmt.Errorf("more than %d samples of %v each: the trace holds over %d hours of threads' time; record shorter traces", maxSamples, time.Duration(MaxSpan), maxSamples*MaxSpan/int64(time.Hour))
	}
	s := profile.NoStack
	for _, f := range th.frames {
		s = d.p.Push(s, f)
	}
	id := d.thread(th.pid, tid)
	for t := from; t < until; t += MaxSpan {
		smp := profile.Sample{Value: min(MaxSpan, until-t), Stack: s, Thread: id, Type: d.wall}
		if d.start != 0 {
			smp.Time = d.start + t + smp.Value/2 // its middle
		}
		d.p.Samples = append(d.p.Samples, smp)
	}
	return nil
}

// threadPrefix begins the name of each thread of a decoded trace.
const threadPrefix = "python "

// thread returns the profile thread of a process's thread, named
// "python PID TID" with py-spy's name for it.
func (d *decoder) thread(pid, tid int64) profile.ThreadID {
	k := [2]int64{pid, tid}
	id, ok := d.ids[k]
	if !ok {
		name := threadPrefix + strconv.FormatInt(pid, 10) + " " + strconv.FormatInt(tid, 10)
		if n := d.names[tid]; n != "" {
			name += " (" + n + ")"
		}
		id = d.p.AddThread(profile.Thread{Name: name})
		d.ids[k] = id
	}
	return id
}

// Process returns the id of the process of a thread of a decoded trace, as
// py-spy gave it, and whether t is such a thread.
func Process(t profile.Thread) (int64, bool) {
	rest, ok := strings.CutPrefix(t.Name, threadPrefix)
	if !ok {
		return 0, false
	}
	pid, _, _ := strings.Cut(rest, " ")
	n, err := strconv.ParseInt(pid, 10, 64)
	return n, err == nil
}

// frame is the profile frame of a B or E event: a Python frame named
// "file:function", its file shortened as py-spy's other outputs give it.
func frame(e *event) profile.Frame {
	f := profile.Frame{Name: e.Name, File: shortFile(e.Args.Filename), Kind: profile.KindPython}
	if e.Args.Line > 0 && e.Args.Line <= math.MaxInt32 {
		f.Line = int32(e.Args.Line)
	}
	if f.File != "" {
		f.Name = f.File + ":" + e.Name
	}
	return f
}

// packageRoots end the directories Python imports packages from, and
// the archives PySpark ships its own in (pyspark.zip, py4j-*.zip).
var packageRoots = []string{"/site-packages/", "/dist-packages/", ".zip/"}

// shortFile shortens a source file's path, which py-spy's trace gives in
// full, as its other outputs do: a package's module from its package on
// (pyspark/worker.py), other files to their name, so that a job's
// functions are named alike on every executor, whose copies of the job's
// files are in directories of their own.
func shortFile(path string) string {
	from := strings.LastIndexByte(path, '/') + 1
	last := -1
	for _, root := range packageRoots {
		if i := strings.LastIndex(path, root); i > last {
			last, from = i, i+len(root)
		}
	}
	return path[from:]
}
