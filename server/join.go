package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// windowSlack widens task windows for clocks and log timestamps that have
// second resolution.
const windowSlack = int64(time.Second)

// taskIndexes caches, per analysed report, its tasks by id.
var taskIndexes sync.Map // *analysis.Report -> map[int64]*spark.Task

func taskIndex(r *analysis.Report) map[int64]*spark.Task {
	if idx, ok := taskIndexes.Load(r); ok {
		return idx.(map[int64]*spark.Task)
	}
	idx := make(map[int64]*spark.Task, len(r.Tasks))
	for _, t := range r.Tasks {
		if cur := idx[t.ID]; cur == nil || t.LaunchMs > cur.LaunchMs {
			idx[t.ID] = t
		}
	}
	taskIndexes.Store(r, idx)
	return idx
}

// joinTasks attributes the samples of p, a shallow copy of a stored
// profile, to the tasks of its application's model: a sample labelled with
// a task id gets the task's stage, stage attempt and partition when it was
// taken while the task ran; one taken outside the task's window loses its
// task labels, since before Spark 4.2 a thread keeps a finished task's name
// until its next task, idling in between. Samples without a time keep their
// labels. The stored profile is not changed.
func joinTasks(p *profile.Profile, r *analysis.Report) {
	idx := taskIndex(r)
	if len(idx) == 0 {
		return
	}
	p.OwnLabelSets()
	type key struct {
		set    profile.LabelSetID
		inside bool
	}
	memo := map[key]profile.LabelSetID{}
	for i := range p.Samples {
		s := &p.Samples[i]
		own := p.LabelSet(s.Labels)
		v, ok := own.Get(profile.LabelTaskID)
		if !ok || s.Time == 0 {
			continue
		}
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		t := idx[id]
		if t == nil {
			continue
		}
		inside := s.Time >= t.LaunchMs*1e6-windowSlack && (t.FinishMs == 0 || s.Time <= t.FinishMs*1e6+windowSlack)
		k := key{s.Labels, inside}
		if nid, ok := memo[k]; ok {
			s.Labels = nid
			continue
		}
		var ls profile.Labels
		if inside {
			ls = own.Merge(profile.Labels{
				{Name: profile.LabelStageID, Value: strconv.Itoa(t.StageID)},
				{Name: profile.LabelStageAttempt, Value: strconv.Itoa(t.StageAttempt)},
				{Name: profile.LabelPartition, Value: strconv.Itoa(t.Partition)},
			})
		} else {
			ls = own.Without(profile.LabelTaskID, profile.LabelStageID, profile.LabelStageAttempt, profile.LabelPartition)
		}
		nid := p.AddLabels(ls)
		memo[k] = nid
		s.Labels = nid
	}
}
