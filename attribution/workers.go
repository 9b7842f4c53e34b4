package attribution

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/format/chrometrace"
	"github.com/sparkprof/sparkprof/profile"
)

// IsWorkerMain reports whether f is the main function of PySpark's Python
// worker (pyspark/worker.py), under which a worker serves its tasks.
func IsWorkerMain(f profile.Frame) bool {
	return f.Kind == profile.KindPython && strings.HasSuffix(f.File, "worker.py") && strings.HasSuffix(f.Name, ":main")
}

// WaitingForTask reports whether a stack (root first) under a worker's
// main is the worker waiting for its next task, reading the task's first
// int from the JVM: pyspark/serializers.py's read_int right under main
// (Spark 3.5), or under the reader of the task's init message (Spark 4).
// A reused worker waits so between tasks, through other tasks of its
// executor that do not use Python.
func WaitingForTask(p *profile.Profile, stack []profile.FrameID) bool {
	n := len(stack)
	if n < 2 || !strings.HasSuffix(p.Frames[stack[n-1]].Name, "serializers.py:read_int") {
		return false
	}
	for _, f := range slices.Backward(stack[:n-1]) {
		name := p.Frames[f].Name
		switch {
		case IsWorkerMain(p.Frames[f]):
			return true
		case strings.Contains(name, "init_message"), strings.HasSuffix(name, "_state_transition.<locals>.decorator.<locals>.wrapper"),
			strings.HasSuffix(name, "worker.py:invoke_udf"):
		default:
			return false
		}
	}
	return false
}

// ApplyWorkerRuns labels each timed sample of a PySpark Python worker (a
// stack under pyspark/worker.py's main; the daemon that forks the workers
// is left alone) serving a task (not WaitingForTask) with the task its
// executor ran at the sample's time, as the executor plugin recorded its
// runs. A worker serves one task at a time: the run that names the
// worker's process (PythonPids; a trace's threads as format/chrometrace
// names them) among those running. Of runs that name none, the trace
// does not say which: a sample taken while several ran gets the task its
// stretch of serving matches (servedRuns), else their stage when all
// were of one, and no task. It returns how many samples it labelled with
// a task.
func ApplyWorkerRuns(p *profile.Profile, runs []TaskRun) int {
	if len(runs) == 0 || !slices.ContainsFunc(p.Frames, IsWorkerMain) {
		return 0
	}
	runs = latestRuns(runs)
	kinds := workerStacks(p)
	of := workerRuns(p, runs)
	served := servedRuns(p, kinds, of)
	type key struct {
		labels profile.LabelSetID
		stage  int // -1: none
		task   int64
	}
	memo := map[key]profile.LabelSetID{}
	n := 0
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Time == 0 {
			continue
		}
		if !isServing(kinds[s.Stack]) {
			continue
		}
		own := of(s.Thread)
		r, stage := workerRun(own.named, s.Time/1e6)
		if r == nil {
			r, stage = workerRun(own.runs, s.Time/1e6)
		}
		if x := served[i]; r == nil && x != nil {
			r, stage = x, x
		}
		if stage == nil {
			continue
		}
		k := key{s.Labels, stage.StageID, -1}
		if r != nil {
			k.task = r.TaskID
		}
		id, ok := memo[k]
		if !ok {
			ls := profile.Labels{
				{Name: profile.LabelStageID, Value: strconv.Itoa(stage.StageID)},
				{Name: profile.LabelStageAttempt, Value: strconv.Itoa(stage.StageAttempt)},
			}
			if r != nil {
				ls = append(ls,
					profile.Label{Name: profile.LabelTaskID, Value: strconv.FormatInt(r.TaskID, 10)},
					profile.Label{Name: profile.LabelPartition, Value: strconv.Itoa(r.Partition)})
			}
			id = p.AddLabels(p.LabelSet(s.Labels).Without(profile.LabelStageID, profile.LabelStageAttempt, profile.LabelTaskID, profile.LabelPartition).Merge(ls.Normalize()))
			memo[k] = id
		}
		s.Labels = id
		if r != nil {
			n++
		}
	}
	return n
}

// processRuns are the runs a worker's process may have served: those that
// name it among their workers (named) and those that name none.
type processRuns struct {
	named, runs []TaskRun
}

// workerRuns returns, by thread, the runs each thread's process may have
// served: all when its process is not known.
func workerRuns(p *profile.Profile, runs []TaskRun) func(profile.ThreadID) processRuns {
	byThread := map[profile.ThreadID]processRuns{}
	return func(t profile.ThreadID) processRuns {
		if pr, ok := byThread[t]; ok {
			return pr
		}
		pid, known := chrometrace.Process(p.Threads[t])
		var pr processRuns
		for _, r := range runs {
			switch {
			case !known || len(r.PythonPids) == 0:
				pr.runs = append(pr.runs, r)
			case slices.Contains(r.PythonPids, pid):
				pr.named = append(pr.named, r)
				pr.runs = append(pr.runs, r)
			}
		}
		byThread[t] = pr
		return pr
	}
}

// workerRun returns the run of its executor a worker's sample at ms
// belongs to: the one run at ms, or nil with stage the first of several
// when all were of one stage attempt; stage is nil when none ran, or runs
// of several stages did.
func workerRun(runs []TaskRun, ms int64) (r, stage *TaskRun) {
	for i := range runs {
		x := &runs[i]
		if ms < x.StartMs || x.EndMs != 0 && ms > x.EndMs {
			continue
		}
		switch {
		case stage == nil:
			r, stage = x, x
		case x.StageID == stage.StageID && x.StageAttempt == stage.StageAttempt:
			r = nil
		default:
			return nil, nil
		}
	}
	return r, stage
}

// A worker stack's kind.
const (
	notWorker  = iota
	serving    // under the worker's main, serving a task: setting it up or ending it
	processing // serving a task, in the function that processes its records (processesRecords)
	waiting    // waiting for its next task (WaitingForTask)
)

// isServing reports whether a worker stack's kind is serving a task.
func isServing(kind int) bool { return kind == serving || kind == processing }

// processesRecords reports whether a stack (root first) under a worker's
// main is in the function through which PySpark's worker.py runs a task's
// records, once a task: process (pipelined_process on Spark 4.3 with
// SPARK_PIPELINED_UDF), nested in main (Spark 3.5) or invoke_udf (4.3).
func processesRecords(p *profile.Profile, stack []profile.FrameID) bool {
	for _, id := range stack {
		f := p.Frames[id]
		if f.Kind != profile.KindPython || !strings.HasSuffix(f.File, "worker.py") {
			continue
		}
		fn := f.Name[strings.LastIndexAny(f.Name, ":.")+1:]
		if fn == "process" || fn == "pipelined_process" {
			return true
		}
	}
	return false
}

// workerStacks returns the kind of each of p's stacks that is a worker's.
func workerStacks(p *profile.Profile) map[profile.StackID]int {
	kinds := map[profile.StackID]int{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		if _, ok := kinds[s.Stack]; ok {
			continue
		}
		buf = p.Stack(s.Stack, buf[:0])
		switch {
		case !slices.ContainsFunc(buf, func(f profile.FrameID) bool { return IsWorkerMain(p.Frames[f]) }):
			kinds[s.Stack] = notWorker
		case WaitingForTask(p, buf):
			kinds[s.Stack] = waiting
		case processesRecords(p, buf):
			kinds[s.Stack] = processing
		default:
			kinds[s.Stack] = serving
		}
	}
	return kinds
}

// ambiguousMs: two runs whose ends (or starts) are this close to a
// stretch's are not told apart.
const ambiguousMs = 100

// servedRuns returns, by sample index, the task a worker served when
// several of its executor's tasks ran (an executor of several task
// slots). A worker's thread serves one task from the end of one wait for
// a task, or of the daemon's loop between two (its samples not under the
// worker's main), to the start of the next, and its task ends as it stops
// serving. A stretch with no sampled wait in it may hold several tasks:
// it is cut where the worker processes records again (tasksOf). Each
// stretch of its samples goes to the run that ended nearest its end, or,
// for a stretch the trace cuts before its end or two runs ended as near,
// that began nearest its start, when no other run is as near
// (ambiguousMs).
func servedRuns(p *profile.Profile, kinds map[profile.StackID]int, of func(profile.ThreadID) processRuns) map[int]*TaskRun {
	workers := map[profile.ThreadID]bool{}
	for _, s := range p.Samples {
		if kinds[s.Stack] != notWorker {
			workers[s.Thread] = true
		}
	}
	var idx []int
	for i, s := range p.Samples {
		if s.Time != 0 && workers[s.Thread] {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := p.Samples[a], p.Samples[b]
		return cmp.Or(cmp.Compare(x.Thread, y.Thread), cmp.Compare(x.Time, y.Time))
	})
	out := map[int]*TaskRun{}
	for i := 0; i < len(idx); {
		if !isServing(kinds[p.Samples[idx[i]].Stack]) {
			i++
			continue
		}
		thread := p.Samples[idx[i]].Thread
		j := i
		for j < len(idx) && p.Samples[idx[j]].Thread == thread && isServing(kinds[p.Samples[idx[j]].Stack]) {
			j++
		}
		started := i > 0 && p.Samples[idx[i-1]].Thread == thread
		ended := j < len(idx) && p.Samples[idx[j]].Thread == thread
		parts := tasksOf(p, kinds, idx[i:j])
		for n, part := range parts {
			first, last := p.Samples[part[0]], p.Samples[part[len(part)-1]]
			from, to := first.Time/1e6, (last.Time+last.Value)/1e6
			r := matchStretch(of(thread).runs, from, to, started || n > 0, ended || n < len(parts)-1)
			if r == nil {
				continue
			}
			for _, k := range part {
				if ms := p.Samples[k].Time / 1e6; ms >= r.StartMs && (r.EndMs == 0 || ms <= r.EndMs) {
					out[k] = r
				}
			}
		}
		i = j
	}
	return out
}

// tasksOf splits a worker's stretch of serving (its samples' indexes, in
// time order) where it processes records again after a pause: a worker
// processes a task's records once, between the task's setup and its end,
// so processing again is its next task, come too soon for its wait to be
// sampled. Each part but the first begins with the pause.
func tasksOf(p *profile.Profile, kinds map[profile.StackID]int, stretch []int) [][]int {
	var parts [][]int
	start, pause, processed := 0, -1, false
	for k, i := range stretch {
		switch {
		case kinds[p.Samples[i].Stack] != processing:
			if processed && pause < 0 {
				pause = k
			}
		case pause >= 0:
			parts = append(parts, stretch[start:pause])
			start, pause = pause, -1
		default:
			processed = true
		}
	}
	return append(parts, stretch[start:])
}

// matchStretch returns the run a worker served from from to to, given
// whether a wait for a task came before (started) and after (ended) it,
// or nil when one run or none overlaps it (workerRun tells those), or the
// match is not clear: by the runs' ends when it ended, else, or when two
// runs ended as near, by their starts when it started.
func matchStretch(runs []TaskRun, from, to int64, started, ended bool) *TaskRun {
	var cands []*TaskRun
	for i := range runs {
		if r := &runs[i]; r.StartMs <= to && (r.EndMs == 0 || r.EndMs >= from) {
			cands = append(cands, r)
		}
	}
	if len(cands) < 2 {
		return nil
	}
	var r *TaskRun
	if ended {
		r = nearest(cands, func(r *TaskRun) (int64, bool) { return abs(r.EndMs - to), r.EndMs != 0 })
	}
	if r == nil && started {
		r = nearest(cands, func(r *TaskRun) (int64, bool) { return abs(r.StartMs - from), true })
	}
	return r
}

// nearest returns the run of cands at the least distance, nil when none
// has one or another is as near (ambiguousMs).
func nearest(cands []*TaskRun, distance func(*TaskRun) (int64, bool)) *TaskRun {
	var best *TaskRun
	bestD, secondD := int64(math.MaxInt64), int64(math.MaxInt64)
	for _, r := range cands {
		d, ok := distance(r)
		switch {
		case !ok:
		case d < bestD:
			best, bestD, secondD = r, d, bestD
		case d < secondD:
			secondD = d
		}
	}
	if best == nil || secondD-bestD < ambiguousMs {
		return nil
	}
	return best
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
