package server

import (
	"slices"
	"strconv"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// windowSlack widens task windows for clocks and log timestamps that have
// second resolution.
const windowSlack = int64(time.Second)

// taskJoiner returns a function that attributes a sample of p, a shallow
// copy of a stored profile, to the tasks of its application's model
// (tasksOf returns an app's tasks by id, nil when it is not known): a
// sample labelled with a task id gets the task's stage, stage attempt and
// partition when it was taken while the task ran; one taken outside the
// task's window loses its task labels, since before Spark 4.2 a thread
// keeps a finished task's name until its next task, idling in between.
// Samples without a time keep their labels. The label sets it needs are
// added to p, whose stored original is not changed.
func taskJoiner(p *profile.Profile, tasksOf func(appID string) map[int64]*spark.Task) func(*profile.Sample) {
	// A compacted block holds the samples of many uploads, so the app id
	// is looked up per label set.
	appOf := func(ls profile.Labels) string {
		if v, ok := ls.Get(profile.LabelAppID); ok {
			return v
		}
		v, _ := p.Labels.Get(profile.LabelAppID)
		return v
	}
	if _, ok := p.Labels.Get(profile.LabelAppID); ok && tasksOf(appOf(nil)) == nil {
		return func(*profile.Sample) {}
	}
	// Per label set of the stored profile: whether it was looked at, the
	// task it names (nil for none), and the sets that replace it outside
	// and inside that task's window (NoLabels until made).
	n := p.NumLabelSets()
	seen := make([]bool, n)
	taskOf := make([]*spark.Task, n)
	var replace [2][]profile.LabelSetID
	owned := false
	return func(s *profile.Sample) {
		if s.Time == 0 || int(s.Labels) >= n {
			return
		}
		if !seen[s.Labels] {
			seen[s.Labels] = true
			ls := p.LabelSet(s.Labels)
			if v, ok := ls.Get(profile.LabelTaskID); ok {
				if id, err := strconv.ParseInt(v, 10, 64); err == nil {
					if app := appOf(ls); app != "" {
						taskOf[s.Labels] = tasksOf(app)[id]
					}
				}
			}
		}
		t := taskOf[s.Labels]
		if t == nil {
			return
		}
		inside := 0
		if s.Time >= t.LaunchMs*1e6-windowSlack && (t.FinishMs == 0 || s.Time <= t.FinishMs*1e6+windowSlack) {
			inside = 1
		}
		if replace[inside] == nil {
			replace[inside] = make([]profile.LabelSetID, n)
		}
		if id := replace[inside][s.Labels]; id != profile.NoLabels {
			s.Labels = id
			return
		}
		own := p.LabelSet(s.Labels)
		var ls profile.Labels
		if inside == 1 {
			ls = own.Merge(profile.Labels{ // joinedLabels, in name order as Merge needs
				{Name: profile.LabelPartition, Value: strconv.Itoa(t.Partition)},
				{Name: profile.LabelStageAttempt, Value: strconv.Itoa(t.StageAttempt)},
				{Name: profile.LabelStageID, Value: strconv.Itoa(t.StageID)},
			})
		} else {
			ls = own.Without(append([]string{profile.LabelTaskID}, joinedLabels...)...)
		}
		if !owned {
			p.OwnLabelSets()
			owned = true
		}
		// Appended, not looked up: a block's sets would be indexed for
		// each query.
		id := p.AppendLabels(ls)
		replace[inside][s.Labels] = id
		s.Labels = id
	}
}

// joinedLabels are the labels taskJoiner may give a sample.
var joinedLabels = []string{profile.LabelStageID, profile.LabelStageAttempt, profile.LabelPartition}

// storedMatchers returns the matchers of ms that every sample they select
// satisfies by its stored labels (store.Query.SampleMatchers): not those
// on joinedLabels, which the join to task windows may give a sample, nor
// on thread_name, which also matches the name of a sample's thread.
func storedMatchers(ms []profile.Matcher) []profile.Matcher {
	return slices.DeleteFunc(slices.Clone(ms), func(m profile.Matcher) bool {
		return m.Name == profile.LabelThreadName || slices.Contains(joinedLabels, m.Name)
	})
}

// tasksWindow returns the time (Unix ns) samples of tasks can have once
// joined to their windows (taskJoiner): from the first launch to the last
// finish, widened by windowSlack; until is 0 (open) when a task is still
// running.
func tasksWindow(tasks []*spark.Task) (from, until int64) {
	running := false
	for i, t := range tasks {
		if lo := t.LaunchMs*int64(time.Millisecond) - windowSlack; i == 0 || lo < from {
			from = lo
		}
		if t.FinishMs == 0 {
			running = true
		}
		until = max(until, t.FinishMs*int64(time.Millisecond)+windowSlack+1)
	}
	if running {
		until = 0
	}
	return from, until
}

// narrowRange narrows the range from–until (Unix ns, 0 open) to lo–hi.
func narrowRange(from, until, lo, hi int64) (int64, int64) {
	if lo > 0 && (from == 0 || lo > from) {
		from = lo
	}
	if hi > 0 && (until == 0 || hi < until) {
		until = hi
	}
	return from, until
}

// narrowToStage narrows req's range to the time the tasks of the stage it
// selects ran, when it names one app and one stage (equal matchers) and
// the app's task model is known (windowOf, as apps.stageWindow): the join
// to task windows takes the stage's labels off samples outside its tasks'
// windows, so the rest of the range holds none of the stage's samples,
// and a narrower range reads fewer blocks and time slices.
func narrowToStage(req request, windowOf func(app string, stage int) (from, until int64, ok bool)) request {
	var app string
	stage := -1
	for _, m := range req.filter.Labels {
		switch {
		case m.Op != profile.MatchEqual:
		case m.Name == profile.LabelAppID:
			app = m.Value
		case m.Name == profile.LabelStageID:
			if n, err := strconv.Atoi(m.Value); err == nil {
				stage = n
			}
		}
	}
	if app == "" || stage < 0 {
		return req
	}
	lo, hi, ok := windowOf(app, stage)
	if !ok {
		return req
	}
	req.filter.From, req.filter.Until = narrowRange(req.filter.From, req.filter.Until, lo, hi)
	req.query.From, req.query.Until = req.filter.From, req.filter.Until
	return req
}
