package server

import (
	"strconv"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// windowSlack widens task windows for clocks and log timestamps that have
// second resolution.
const windowSlack = int64(time.Second)

// joinTasks attributes the samples of p, a shallow copy of a stored
// profile, to the tasks of its application's model: a sample labelled with
// a task id gets the task's stage, stage attempt and partition when it was
// taken while the task ran; one taken outside the task's window loses its
// task labels, since before Spark 4.2 a thread keeps a finished task's name
// until its next task, idling in between. Samples without a time keep their
// labels. The stored profile is not changed.
func joinTasks(p *profile.Profile, tasks map[int64]*spark.Task) {
	if len(tasks) == 0 {
		return
	}
	// Per label set: the task it names (nil for none), and the sets that
	// replace it inside and outside that task's window.
	taskOf := map[profile.LabelSetID]*spark.Task{}
	type key struct {
		set    profile.LabelSetID
		inside bool
	}
	memo := map[key]profile.LabelSetID{}
	owned := false
	for i := range p.Samples {
		s := &p.Samples[i]
		if s.Time == 0 {
			continue
		}
		t, seen := taskOf[s.Labels]
		if !seen {
			if v, ok := p.LabelSet(s.Labels).Get(profile.LabelTaskID); ok {
				if id, err := strconv.ParseInt(v, 10, 64); err == nil {
					t = tasks[id]
				}
			}
			taskOf[s.Labels] = t
		}
		if t == nil {
			continue
		}
		inside := s.Time >= t.LaunchMs*1e6-windowSlack && (t.FinishMs == 0 || s.Time <= t.FinishMs*1e6+windowSlack)
		k := key{s.Labels, inside}
		nid, ok := memo[k]
		if !ok {
			own := p.LabelSet(s.Labels)
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
			if !owned {
				p.OwnLabelSets()
				owned = true
			}
			nid = p.AddLabels(ls)
			memo[k] = nid
		}
		s.Labels = nid
	}
}
