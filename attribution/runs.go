package attribution

import (
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
}

// ApplyTaskRuns labels samples that have a time and no task label with the
// task their thread ran at that time, as the executor plugin recorded it.
// This covers thread names that do not carry the task (Spark 3.0's
// "Executor task launch worker for task N", idle pool threads). It returns
// how many samples it labelled.
func ApplyTaskRuns(p *profile.Profile, runs []TaskRun) int {
	if len(runs) == 0 {
		return 0
	}
	byThread := map[string][]TaskRun{}
	for _, r := range runs {
		byThread[r.ThreadName] = append(byThread[r.ThreadName], r)
	}
	type key struct {
		labels profile.LabelSetID
		task   int64
	}
	memo := map[key]profile.LabelSetID{}
	n := 0
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Time == 0 || int(s.Thread) >= len(p.Threads) {
			continue
		}
		rs := byThread[p.Threads[s.Thread].Name]
		if len(rs) == 0 {
			continue
		}
		if _, ok := p.LabelSet(s.Labels).Get(profile.LabelTaskID); ok {
			continue
		}
		ms := s.Time / 1e6
		for _, r := range rs {
			if ms < r.StartMs || (r.EndMs != 0 && ms > r.EndMs) {
				continue
			}
			k := key{s.Labels, r.TaskID}
			id, ok := memo[k]
			if !ok {
				id = p.AddLabels(p.LabelSet(s.Labels).Merge(profile.Labels{
					{Name: profile.LabelStageID, Value: strconv.Itoa(r.StageID)},
					{Name: profile.LabelStageAttempt, Value: strconv.Itoa(r.StageAttempt)},
					{Name: profile.LabelTaskID, Value: strconv.FormatInt(r.TaskID, 10)},
					{Name: profile.LabelPartition, Value: strconv.Itoa(r.Partition)},
				}.Normalize()))
				memo[k] = id
			}
			s.Labels = id
			n++
			break
		}
	}
	return n
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
