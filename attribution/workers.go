package attribution

import (
	"slices"
	"strconv"
	"strings"

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
// runs. A worker serves one task at a
// time, but the trace does not say which of the executor's tasks: a
// sample taken while several ran gets their stage when all were of one,
// and no task. It returns how many samples it labelled with a task.
func ApplyWorkerRuns(p *profile.Profile, runs []TaskRun) int {
	if len(runs) == 0 || !slices.ContainsFunc(p.Frames, IsWorkerMain) {
		return 0
	}
	runs = latestRuns(runs)
	underMain := map[profile.StackID]bool{}
	var buf []profile.FrameID
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
		worker, known := underMain[s.Stack]
		if !known {
			buf = p.Stack(s.Stack, buf[:0])
			worker = slices.ContainsFunc(buf, func(f profile.FrameID) bool { return IsWorkerMain(p.Frames[f]) }) && !WaitingForTask(p, buf)
			underMain[s.Stack] = worker
		}
		if !worker {
			continue
		}
		r, stage := workerRun(runs, s.Time/1e6)
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
