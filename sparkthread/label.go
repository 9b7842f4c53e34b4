package sparkthread

import (
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
)

// Labels returns the sample labels a thread name implies: thread_pool, and
// for task threads the stage, stage attempt, partition and task id.
func Labels(name string) profile.Labels {
	info := Classify(name)
	ls := profile.Labels{{Name: profile.LabelThreadPool, Value: info.Pool}}
	if info.TaskID >= 0 {
		ls = append(ls, profile.Label{Name: profile.LabelTaskID, Value: strconv.FormatInt(info.TaskID, 10)})
	}
	if info.Stage >= 0 {
		ls = append(ls,
			profile.Label{Name: profile.LabelStageID, Value: strconv.Itoa(info.Stage)},
			profile.Label{Name: profile.LabelStageAttempt, Value: strconv.Itoa(info.StageAttempt)},
			profile.Label{Name: profile.LabelPartition, Value: strconv.Itoa(info.Index)})
	}
	return ls.Normalize()
}

// LabelProfile adds the labels of each sample's thread name to the sample's
// label set, keeping labels the sample already has. Samples without a known
// thread are left alone.
func LabelProfile(p *profile.Profile) {
	byThread := make([]profile.Labels, len(p.Threads))
	for i := 1; i < len(p.Threads); i++ {
		if p.Threads[i].Name != "" {
			byThread[i] = Labels(p.Threads[i].Name)
		}
	}
	// Most samples carry no labels of their own: theirs is the thread's
	// set, looked up by thread; the others are merged once per pair.
	plain := make([]profile.LabelSetID, len(p.Threads))
	memo := map[uint64]profile.LabelSetID{} // by set << 32 | thread
	for i := range p.Samples {
		s := &p.Samples[i]
		if byThread[s.Thread] == nil {
			continue
		}
		if s.Labels == profile.NoLabels {
			if plain[s.Thread] == profile.NoLabels {
				plain[s.Thread] = p.AddLabels(byThread[s.Thread])
			}
			s.Labels = plain[s.Thread]
			continue
		}
		k := uint64(s.Labels)<<32 | uint64(s.Thread)
		id, ok := memo[k]
		if !ok {
			id = p.AddLabels(byThread[s.Thread].Merge(p.LabelSet(s.Labels)))
			memo[k] = id
		}
		s.Labels = id
	}
}
