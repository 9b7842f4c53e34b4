// Package applog parses Spark driver and executor log4j logs and derives
// jobs, stages, tasks and grouped errors from their lines, for runs that
// have no event log.
package applog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/containerlog"
)

// Options control parsing.
type Options struct {
	// Location is the zone of the log's timestamps; nil means UTC.
	Location *time.Location
}

var (
	reLog4j = regexp.MustCompile(`^(\d\d/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d{3})?) (?:(.*?) )?(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +([\w.$]+): ?(.*)$`)
	reLine  = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[,.]\d{3})?) (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +([\w.$]+):(\d+) - (.*)$`)

	reGotJob    = regexp.MustCompile(`^Got job (\d+) \((.*)\) with (\d+) output partitions`)
	reJobDone   = regexp.MustCompile(`^Job (\d+) finished: (.*), took ([\d.]+) s`)
	reSubmit    = regexp.MustCompile(`^Submitting (ResultStage|ShuffleMapStage) (\d+) \((.*)\)`)
	reStartTask = regexp.MustCompile(`^Starting task (\d+)\.\d+ in stage (\d+)\.(\d+) \(TID (\d+)(?:\) \(|, )([^,]+), executor ([^,]+), partition`)
	reFinTask   = regexp.MustCompile(`^Finished task (\d+)\.\d+ in stage (\d+)\.(\d+) \(TID (\d+)\) in (\d+) ms on (\S+) \(executor ([^)]+)\)`)
	// "Lost task 1.0 in stage 0.0 (TID 1) (host executor 2): reason" (3.x)
	// or "(TID 1, host, executor 2): reason" (2.x).
	reLostTask  = regexp.MustCompile(`^Lost task (\d+)\.\d+ in stage (\d+)\.(\d+) \(TID (\d+)(?:\) \(|, )(\S+?),? executor ([^)]+)\): (.*)$`)
	rePyTimes   = regexp.MustCompile(`^Times: total = (\d+), boot = (-?\d+), init = (\d+), finish = (\d+)`)
	reTIDThread = regexp.MustCompile(`\(TID (\d+)\)`)
	reExecID    = regexp.MustCompile(`[Ee]xecutor (\d+|driver)\b`)
)

// Open parses the log file at path, decompressing it when it is gzipped
// or zstd-compressed.
func Open(path string, opt Options) (*containerlog.Log, error) {
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return Parse(r, path, opt)
}

// openFile opens the log file at path, decompressing it when its first
// bytes say it is gzipped or zstd-compressed.
func openFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("applog: %w", err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(4)
	var r io.Reader = br
	closeR := func() {}
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("applog: %s: %w", path, err)
		}
		r, closeR = zr, func() { zr.Close() }
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		// The window is bounded as the zstd command bounds it: the
		// decoder allocates what a frame asks for before decoding.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(128<<20))
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("applog: %s: %w", path, err)
		}
		r, closeR = zr, zr.Close
	}
	return decompressed{r, closeR, f}, nil
}

// decompressed reads a file through its decompressor; closing it closes
// both.
type decompressed struct {
	io.Reader
	closeR func()
	f      *os.File
}

func (d decompressed) Close() error {
	d.closeR()
	return d.f.Close()
}

// record is one parsed line prefix.
type record struct {
	t                          time.Time
	thread, level, logger, msg string
}

// parseLine splits a log line into its prefix fields. ok is false for a
// line with no recognised prefix.
func parseLine(line string, loc *time.Location) (rec record, layout containerlog.Layout, ok bool) {
	if strings.HasPrefix(line, "{") {
		return parseJSONLine(line)
	}
	if !hasDatePrefix(line) {
		// Cheap rejection of continuation and agent lines before the
		// regular expressions run.
		return rec, "", false
	}
	if m := reLog4j.FindStringSubmatch(line); m != nil {
		lay := "06/01/02 15:04:05"
		if len(m[1]) > len(lay) {
			lay += ".000"
		}
		t, err := time.ParseInLocation(lay, m[1], loc)
		if err != nil {
			return rec, "", false
		}
		return record{t, m[2], m[3], m[4], m[5]}, containerlog.LayoutLog4j, true
	}
	if m := reLine.FindStringSubmatch(line); m != nil {
		ts := strings.Replace(m[1], ",", ".", 1)
		lay := "2006-01-02 15:04:05"
		if len(ts) > len(lay) {
			lay += ".000"
		}
		t, err := time.ParseInLocation(lay, ts, loc)
		if err != nil {
			return rec, "", false
		}
		return record{t, "", m[2], m[3], m[5]}, containerlog.LayoutLog4jLine, true
	}
	return rec, "", false
}

// Parse reads a log from r line by line; source names it in errors.
// Memory grows with the number of jobs, tasks and distinct error groups,
// not with the log size.
func Parse(r io.Reader, source string, opt Options) (*containerlog.Log, error) {
	loc := opt.Location
	if loc == nil {
		loc = time.UTC
	}
	l := &reader{Log: &containerlog.Log{Source: source, Levels: map[string]int{}}}
	tasks := map[int]int{} // TID -> index in l.Tasks
	var errs errorGroups
	var pats patternSeq
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		l.Lines++
		rec, layout, ok := parseLine(line, loc)
		if !ok {
			if strings.HasPrefix(line, "+ exec ") {
				l.entrypoint(line)
			}
			if !errs.continued(line) {
				l.Unparsed++
			}
			continue
		}
		if l.Layout == "" {
			l.Layout = layout
		}
		if l.Start.IsZero() {
			l.Start = rec.t
		}
		l.End = rec.t
		l.Levels[rec.level]++
		pats.add(rec)
		errs.add(rec)
		if err := l.event(rec, tasks); err != nil {
			return nil, fmt.Errorf("applog: %s:%d: %w", source, l.Lines, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("applog: %s: after line %d: %w", source, l.Lines, err)
	}
	l.Chunks = pats.chunks()
	l.Errors = errs.sorted()
	if l.Role == "" && len(l.Jobs) > 0 {
		l.Role = "driver"
	}
	return l.Log, nil
}

// reader is the log Parse reads, with the methods that read its records.
type reader struct{ *containerlog.Log }

// task returns the task with TID tid, adding it when its start line was not
// seen; ids holds its index, stage and stage attempt as the line gives them.
func (l *reader) task(tasks map[int]int, tid int, ids []string, host, executor string, launch time.Time) *containerlog.Task {
	i, ok := tasks[tid]
	if !ok {
		idx, _ := atoi(ids[0])
		st, _ := atoi(ids[1])
		sa, _ := atoi(ids[2])
		i = len(l.Tasks)
		tasks[tid] = i
		l.Tasks = append(l.Tasks, containerlog.Task{TID: tid, Index: idx, Stage: st, StageAttempt: sa, Host: host, Executor: executor, Launch: launch})
	}
	return &l.Tasks[i]
}

// entrypoint reads the command Spark's Kubernetes image entrypoint traces
// before it runs the driver (spark-submit) or an executor backend.
func (l *reader) entrypoint(line string) {
	args := strings.Fields(line)
	for i, a := range args {
		switch {
		case strings.HasSuffix(a, "spark-submit"):
			l.Role = "driver"
			l.ExecutorID = "driver"
		case strings.HasSuffix(a, "ExecutorBackend"):
			l.Role = "executor"
		case i+1 < len(args) && a == "--executor-id":
			l.ExecutorID = args[i+1]
		case i+1 < len(args) && a == "--app-id":
			l.AppID = args[i+1]
		case i+1 < len(args) && a == "--podName":
			l.Pod = args[i+1]
		}
	}
}

func atoi(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("number %q: %w", s, err)
	}
	return n, nil
}

// event interprets a record's message.
func (l *reader) event(rec record, tasks map[int]int) error {
	l.executorEvent(rec)
	msg := rec.msg
	switch rec.logger {
	case "DAGScheduler", "org.apache.spark.scheduler.DAGScheduler":
		return l.schedulerEvent(rec)
	case "TaskSetManager", "org.apache.spark.scheduler.TaskSetManager":
		return l.taskEvent(rec, tasks)
	case "PythonRunner", "org.apache.spark.api.python.PythonRunner":
		return l.pythonTimes(rec, tasks)
	case "SparkContext", "org.apache.spark.SparkContext":
		if v, ok := strings.CutPrefix(msg, "Running Spark version "); ok {
			l.Role = "driver"
			l.SparkVersion = strings.TrimSpace(v)
		} else if name, ok := strings.CutPrefix(msg, "Submitted application: "); ok {
			l.AppName = strings.TrimSpace(name)
		}
	case "StandaloneSchedulerBackend", "org.apache.spark.scheduler.cluster.StandaloneSchedulerBackend":
		if id, ok := strings.CutPrefix(msg, "Connected to Spark cluster with app ID "); ok && l.AppID == "" {
			l.AppID = strings.TrimSpace(id)
		}
	case "YarnClientImpl", "org.apache.hadoop.yarn.client.api.impl.YarnClientImpl":
		if id, ok := strings.CutPrefix(msg, "Submitted application "); ok && l.AppID == "" {
			l.AppID = strings.TrimSpace(id)
		}
	case "CoarseGrainedExecutorBackend", "org.apache.spark.executor.CoarseGrainedExecutorBackend":
		if l.Role == "" {
			l.Role = "executor"
		}
	}
	return nil
}

// executorEvent records a message about an executor leaving or being
// excluded, whichever logger wrote it.
func (l *reader) executorEvent(rec record) {
	kind := executorEventKind(rec.msg)
	if kind == "" {
		return
	}
	ev := containerlog.ExecutorEvent{Time: rec.t, Kind: kind, Message: rec.msg}
	if m := reExecID.FindStringSubmatch(rec.msg); m != nil {
		ev.Executor = m[1]
	}
	l.ExecutorEvents = append(l.ExecutorEvents, ev)
}

// schedulerEvent reads a DAGScheduler message: a job's start or end, or a
// stage's submission.
func (l *reader) schedulerEvent(rec record) error {
	msg := rec.msg
	if m := reGotJob.FindStringSubmatch(msg); m != nil {
		id, err := atoi(m[1])
		if err != nil {
			return err
		}
		p, err := atoi(m[3])
		if err != nil {
			return err
		}
		l.Jobs = append(l.Jobs, containerlog.Job{ID: id, Name: m[2], Partitions: p, Start: rec.t})
	} else if m := reJobDone.FindStringSubmatch(msg); m != nil {
		id, err := atoi(m[1])
		if err != nil {
			return err
		}
		took, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return fmt.Errorf("job %d duration %q: %w", id, m[3], err)
		}
		for i := range l.Jobs {
			if l.Jobs[i].ID == id {
				l.Jobs[i].End = rec.t
				l.Jobs[i].Took = time.Duration(took * float64(time.Second))
			}
		}
	} else if m := reSubmit.FindStringSubmatch(msg); m != nil {
		id, err := atoi(m[2])
		if err != nil {
			return err
		}
		l.Stages = append(l.Stages, containerlog.Stage{ID: id, Kind: m[1], Name: m[3], Submitted: rec.t})
	}
	return nil
}

// taskEvent reads a TaskSetManager message: a task's start, success or
// loss.
func (l *reader) taskEvent(rec record, tasks map[int]int) error {
	msg := rec.msg
	if m := reStartTask.FindStringSubmatch(msg); m != nil {
		var n [4]int
		for i, s := range []string{m[1], m[2], m[3], m[4]} {
			v, err := atoi(s)
			if err != nil {
				return err
			}
			n[i] = v
		}
		tasks[n[3]] = len(l.Tasks)
		l.Tasks = append(l.Tasks, containerlog.Task{TID: n[3], Index: n[0], Stage: n[1], StageAttempt: n[2],
			Host: m[5], Executor: m[6], Launch: rec.t, Status: "RUNNING"})
	} else if m := reFinTask.FindStringSubmatch(msg); m != nil {
		tid, err := atoi(m[4])
		if err != nil {
			return err
		}
		ms, err := atoi(m[5])
		if err != nil {
			return err
		}
		t := l.task(tasks, tid, m[1:4], m[6], m[7], time.Time{})
		t.Finish, t.Duration, t.Status = rec.t, time.Duration(ms)*time.Millisecond, "SUCCESS"
	} else if m := reLostTask.FindStringSubmatch(msg); m != nil {
		tid, err := atoi(m[4])
		if err != nil {
			return err
		}
		t := l.task(tasks, tid, m[1:4], m[5], m[6], rec.t)
		t.Finish, t.Failure = rec.t, m[7]
		t.Status = "FAILED"
		if strings.HasPrefix(m[7], "TaskKilled") {
			t.Status = "KILLED"
		}
		if !t.Launch.IsZero() {
			t.Duration = t.Finish.Sub(t.Launch)
		}
	}
	return nil
}

// pythonTimes reads a PythonRunner "Times:" message, attributing its total
// to the task its executor thread names.
func (l *reader) pythonTimes(rec record, tasks map[int]int) error {
	m := rePyTimes.FindStringSubmatch(rec.msg)
	if m == nil {
		return nil
	}
	var d [4]time.Duration
	for i := range d {
		v, err := atoi(m[i+1])
		if err != nil {
			return err
		}
		d[i] = time.Duration(v) * time.Millisecond
	}
	l.Python = append(l.Python, containerlog.PythonTimes{Time: rec.t, Total: d[0], Boot: d[1], Init: d[2], Finish: d[3]})
	if tm := reTIDThread.FindStringSubmatch(rec.thread); tm != nil {
		if tid, err := atoi(tm[1]); err == nil {
			if i, ok := tasks[tid]; ok {
				l.Tasks[i].PythonTotal = d[0]
			}
		}
	}
	return nil
}

// executorEventKind classifies scheduler messages about executors leaving
// or being excluded; it returns "" for other messages.
func executorEventKind(msg string) string {
	switch {
	case strings.HasPrefix(msg, "Lost executor"), strings.Contains(msg, "Executor lost:"),
		strings.HasPrefix(msg, "Removing executor") && strings.Contains(msg, "with no recent heartbeats"):
		return "lost"
	case strings.Contains(msg, "ecommission"):
		return "decommission"
	case strings.Contains(msg, "xcluding executor"), strings.Contains(msg, "lacklisting executor"),
		strings.Contains(msg, "is excluded"), strings.Contains(msg, "blacklisted"):
		return "excluded"
	}
	return ""
}

// jsonLine is one record of Spark 4's JSON layout.
type jsonLine struct {
	TS        string            `json:"ts"`
	Level     string            `json:"level"`
	Msg       string            `json:"msg"`
	Logger    string            `json:"logger"`
	Context   map[string]string `json:"context"`
	Exception *struct {
		Class      string `json:"class"`
		Msg        string `json:"msg"`
		Stacktrace []struct {
			Class  string `json:"class"`
			Method string `json:"method"`
			File   string `json:"file"`
			Line   int    `json:"line"`
		} `json:"stacktrace"`
	} `json:"exception"`
}

// parseJSONLine decodes a Spark 4 JSON layout line. The exception, if
// any, is appended to the message as a Java-style stack trace so that
// error grouping treats both layouts alike.
func parseJSONLine(line string) (rec record, layout containerlog.Layout, ok bool) {
	var j jsonLine
	if err := json.Unmarshal([]byte(line), &j); err != nil || j.Level == "" {
		return rec, "", false
	}
	t, err := time.Parse(time.RFC3339Nano, j.TS)
	if err != nil {
		return rec, "", false
	}
	msg := j.Msg
	if e := j.Exception; e != nil {
		var b strings.Builder
		b.WriteString(msg)
		fmt.Fprintf(&b, "\n%s: %s", e.Class, e.Msg)
		for _, f := range e.Stacktrace {
			fmt.Fprintf(&b, "\n\tat %s.%s(%s:%d)", f.Class, f.Method, f.File, f.Line)
		}
		msg = b.String()
	}
	logger := j.Logger
	if i := strings.LastIndexByte(logger, '.'); i >= 0 {
		logger = logger[i+1:]
	}
	return record{t: t, thread: j.Context["thread"], level: j.Level, logger: logger, msg: msg}, containerlog.LayoutJSON, true
}

// hasDatePrefix reports whether line starts like "yy/MM/dd " or
// "yyyy-MM-dd ", the only prefixes the text layouts can have.
func hasDatePrefix(line string) bool {
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	switch {
	case len(line) >= 9 && line[2] == '/' && line[5] == '/' && line[8] == ' ':
		return digits(line[:2]) && digits(line[3:5]) && digits(line[6:8])
	case len(line) >= 11 && line[4] == '-' && line[7] == '-' && line[10] == ' ':
		return digits(line[:4]) && digits(line[5:7]) && digits(line[8:10])
	}
	return false
}
