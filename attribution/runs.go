package attribution

import (
	"sort"
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
)

// TaskRun is a task's run on a thread, as the sparkprof agent's executor
// plugin records it (one line of an upload's "tasks" part, docs/agent.md).
type TaskRun struct {
	ThreadID     int64  `json:"threadId"`
	ThreadName   string `json:"threadName"`
	StageID      int    `json:"stageId"`
	StageAttempt int    `json:"stageAttempt"`
	Partition    int    `json:"partition"`
	TaskID       int64  `json:"taskId"`
	StartMs      int64  `json:"startMs"`
	EndMs        int64  `json:"endMs"` // 0 while running
	// PythonPids are the Python workers that served the task, as the
	// agent found them (none when it did not).
	PythonPids []int64 `json:"pythonPids,omitempty"`
}

// ApplyTaskRuns labels each timed sample of a thread the agent recorded task
// runs on with the task the thread ran at the sample's time, as the executor
// plugin recorded it. The runs win over the labels the thread's name gave:
// the Flight Recorder names a pooled thread once per recording, so a thread
// that ran several tasks in one window carries one task's name on all of
// their samples. Threads are matched by their Java thread id, else by name
// (Spark 3.0's "Executor task launch worker for task N" names no stage).
//
// A sample on CPU between two runs of its thread belongs to the nearer one:
// the thread deserialises the next task before the plugin hears of it, and
// serialises the last one's result after. Other samples outside every run
// (an idle pool thread's) lose the task labels a stale name gave them. It
// returns how many samples it labelled with a task.
func ApplyTaskRuns(p *profile.Profile, runs []TaskRun) int {
	if len(runs) == 0 {
		return 0
	}
	byID := map[int64][]TaskRun{}
	byName := map[string][]TaskRun{}
	for _, r := range latestRuns(runs) {
		if r.ThreadID != 0 {
			byID[r.ThreadID] = append(byID[r.ThreadID], r)
		}
		byName[r.ThreadName] = append(byName[r.ThreadName], r)
	}
	for _, rs := range byID {
		sort.Slice(rs, func(i, j int) bool { return rs[i].StartMs < rs[j].StartMs })
	}
	for _, rs := range byName {
		sort.Slice(rs, func(i, j int) bool { return rs[i].StartMs < rs[j].StartMs })
	}
	type key struct {
		labels profile.LabelSetID
		task   int64 // -1: no task
	}
	memo := map[key]profile.LabelSetID{}
	n := 0
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Time == 0 || int(s.Thread) >= len(p.Threads) {
			continue
		}
		th := p.Threads[s.Thread]
		rs := byID[th.ID]
		if th.ID == 0 || len(rs) == 0 {
			rs = byName[th.Name]
		}
		if len(rs) == 0 {
			continue
		}
		r := runAt(rs, s.Time/1e6, onCPU(p, s))
		k := key{s.Labels, -1}
		if r != nil {
			k.task = r.TaskID
		}
		id, ok := memo[k]
		if !ok {
			ls := p.LabelSet(s.Labels).Without(profile.LabelStageID, profile.LabelStageAttempt, profile.LabelTaskID, profile.LabelPartition)
			if r != nil {
				ls = ls.Merge(profile.Labels{
					{Name: profile.LabelStageID, Value: strconv.Itoa(r.StageID)},
					{Name: profile.LabelStageAttempt, Value: strconv.Itoa(r.StageAttempt)},
					{Name: profile.LabelTaskID, Value: strconv.FormatInt(r.TaskID, 10)},
					{Name: profile.LabelPartition, Value: strconv.Itoa(r.Partition)},
				}.Normalize())
			}
			id = p.AddLabels(ls)
			memo[k] = id
		}
		s.Labels = id
		if r != nil {
			n++
		}
	}
	return n
}

// latestRuns returns runs with each task attempt once: a drain that races
// a task's end lists it running (no end) and ended; the ended one is kept.
func latestRuns(runs []TaskRun) []TaskRun {
	type key struct {
		thread int64
		name   string
		task   int64
	}
	at := make(map[key]int, len(runs))
	out := make([]TaskRun, 0, len(runs))
	for _, r := range runs {
		k := key{r.ThreadID, r.ThreadName, r.TaskID}
		i, ok := at[k]
		switch {
		case !ok:
			at[k] = len(out)
			out = append(out, r)
		case out[i].EndMs == 0:
			out[i] = r
		}
	}
	return out
}

// maxGapMs bounds how far from a run a sample on CPU between runs may lie
// and still belong to it: a busy executor's first tasks spend seconds
// loading classes before the plugin hears of them.
const maxGapMs = 60_000

// runAt returns the run of rs (one thread's, sorted by start) that a
// sample at ms belongs to, or nil. A thread runs one task at a time, so
// only the run that started last before ms can hold it; it is found by
// binary search, as a busy executor's window holds hundreds of runs a
// thread.
func runAt(rs []TaskRun, ms int64, cpu bool) *TaskRun {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].StartMs > ms })
	var prev, next *TaskRun
	if i < len(rs) {
		next = &rs[i]
	}
	if i > 0 {
		prev = &rs[i-1]
		if prev.EndMs == 0 || ms <= prev.EndMs {
			return prev
		}
	}
	if !cpu {
		return nil
	}
	if prev != nil && next != nil {
		if ms-prev.EndMs <= next.StartMs-ms {
			next = nil
		} else {
			prev = nil
		}
	}
	if prev != nil && ms-prev.EndMs <= maxGapMs {
		return prev
	}
	if next != nil && next.StartMs-ms <= maxGapMs {
		return next
	}
	return nil
}

// onCPU reports whether the sample's thread was running: a CPU sample, or
// one taken of a runnable thread.
func onCPU(p *profile.Profile, s *profile.Sample) bool {
	return s.State == profile.StateRunnable || int(s.Type) < len(p.Types) && p.Types[s.Type].Family() == "cpu"
}

// DriverExecutor gives upload labels of the driver, by its role, the
// driver's executor id, as Spark names it, when they have none: a driver
// pod carries spark-role=driver but no spark-exec-id.
func DriverExecutor(ls profile.Labels) profile.Labels {
	if role, _ := ls.Get(profile.LabelRole); role != "driver" {
		return ls
	}
	if _, ok := ls.Get(profile.LabelExecutorID); ok {
		return ls
	}
	return ls.Merge(profile.Labels{{Name: profile.LabelExecutorID, Value: "driver"}})
}
