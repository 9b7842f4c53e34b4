package attribution

import (
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
)

// ThreadLabels returns the sample labels a thread name implies: thread_pool, and
// for task threads the stage, stage attempt, partition and task id.
func ThreadLabels(name string) profile.Labels {
	info := ClassifyThread(name)
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

// LabelThreads adds the labels of each sample's thread name to the sample's
// label set, keeping labels the sample already has. Samples without a known
// thread are left alone.
func LabelThreads(p *profile.Profile) {
	// Each sampled thread's labels as a set of the profile, made at its
	// first sample: threads of one pool with no task share theirs. Sets
	// are appended, not looked up in the profile's index of its sets: a
	// recording of a busy executor's window holds one set per task
	// context, and indexing them all would cost more than the labelling
	// (see BENCHMARKS.md, "Server ingest").
	const unset = ^profile.LabelSetID(0)
	bySet := make([]profile.LabelSetID, len(p.Threads))
	for i := range bySet {
		bySet[i] = unset
	}
	threadSets := map[string]profile.LabelSetID{} // by the labels' text
	// Samples with labels of their own are merged with their thread's
	// once per pair of sets.
	memo := map[uint64]profile.LabelSetID{} // by own set << 32 | thread's set
	// The last pair merged: samples come in runs of one pair (a JFR
	// allocation makes a count and a bytes sample).
	lastKey, lastID := ^uint64(0), profile.NoLabels
	// The merged sets share arrays: one a merge would be an allocation for
	// each of a window's task contexts.
	var arena profile.Labels
	for i := range p.Samples {
		s := &p.Samples[i]
		ts := bySet[s.Thread]
		if ts == unset {
			ts = profile.NoLabels
			if s.Thread != profile.NoThread && p.Threads[s.Thread].Name != "" {
				ls := ThreadLabels(p.Threads[s.Thread].Name)
				var ok bool
				if ts, ok = threadSets[ls.String()]; !ok {
					ts = p.AppendLabels(ls)
					threadSets[ls.String()] = ts
				}
			}
			bySet[s.Thread] = ts
		}
		switch {
		case ts == profile.NoLabels:
		case s.Labels == profile.NoLabels:
			s.Labels = ts
		default:
			k := uint64(s.Labels)<<32 | uint64(ts)
			if k != lastKey {
				id, ok := memo[k]
				if !ok {
					thread, own := p.LabelSet(ts), p.LabelSet(s.Labels)
					if cap(arena)-len(arena) < len(thread)+len(own) {
						arena = make(profile.Labels, 0, max(1024, len(thread)+len(own)))
					}
					start := len(arena)
					arena = profile.AppendMerged(arena, thread, own)
					id = p.AppendLabels(arena[start:len(arena):len(arena)])
					memo[k] = id
				}
				lastKey, lastID = k, id
			}
			s.Labels = lastID
		}
	}
}
