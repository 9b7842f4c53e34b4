package attribution

import (
	"strconv"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// WindowSlack widens task windows for clocks and log timestamps that have
// second resolution.
const WindowSlack = int64(time.Second)

// InTaskWindow reports whether a sample taken at ns (Unix ns) falls in the
// window of task t: from its launch to its finish (open while it runs),
// widened by WindowSlack.
func InTaskWindow(t *spark.Task, ns int64) bool {
	return ns >= t.LaunchMs*int64(time.Millisecond)-WindowSlack &&
		(t.FinishMs == 0 || ns <= t.FinishMs*int64(time.Millisecond)+WindowSlack)
}

// TaskSpan returns the time (Unix ns) samples of tasks can have once joined
// to their windows: from the first launch to the last finish, widened by
// WindowSlack, until exclusive; until is 0 (open) when a task is still
// running.
func TaskSpan(tasks []*spark.Task) (from, until int64) {
	running := false
	for i, t := range tasks {
		if lo := t.LaunchMs*int64(time.Millisecond) - WindowSlack; i == 0 || lo < from {
			from = lo
		}
		if t.FinishMs == 0 {
			running = true
		}
		until = max(until, t.FinishMs*int64(time.Millisecond)+WindowSlack+1)
	}
	if running {
		until = 0
	}
	return from, until
}

// TasksOf returns the tasks by id of attempt attempt of app appID, those of
// its latest attempt when attempt is "" or not known, nil when the app's
// task model is not known.
type TasksOf func(appID, attempt string) map[int64]*spark.Task

// JoinedLabels are the labels a joiner (NewJoiner) may give a sample, or
// take from it with its task id.
var JoinedLabels = []string{profile.LabelStageID, profile.LabelStageAttempt, profile.LabelPartition}

// NewJoiner returns a function that attributes a sample of p, a shallow
// copy of a stored profile, to the tasks of its application's model
// (tasksOf returns an app's tasks by id, nil when it is not known): a
// sample labelled with a task id gets the task's stage, stage attempt and
// partition when it was taken in the task's window (InTaskWindow), the
// tasks of the app attempt its spark_app_attempt label names; one
// taken outside it loses its task labels, since before Spark 4.2 a thread
// keeps a finished task's name until its next task, idling in between.
// Samples without a time keep their labels. The label sets it needs are
// added to p, whose stored original is not changed.
func NewJoiner(p *profile.Profile, tasksOf TasksOf) func(*profile.Sample) {
	// A compacted block holds the samples of many uploads, so the app id
	// and attempt are looked up per label set.
	label := func(ls profile.Labels, name string) string {
		if v, ok := ls.Get(name); ok {
			return v
		}
		v, _ := p.Labels.Get(name)
		return v
	}
	appOf := func(ls profile.Labels) (id, attempt string) {
		return label(ls, profile.LabelAppID), label(ls, profile.LabelAppAttempt)
	}
	if _, ok := p.Labels.Get(profile.LabelAppID); ok && tasksOf(label(nil, profile.LabelAppID), "") == nil {
		return func(*profile.Sample) {}
	}
	j := &joiner{p: p, appOf: appOf, tasksOf: tasksOf, n: p.NumLabelSets()}
	j.seen = make([]bool, j.n)
	j.taskOf = make([]*spark.Task, j.n)
	return j.join
}

// joiner is the state of a join of one profile's samples: per label set of
// the stored profile, whether it was looked at, the task it names (nil for
// none), and the sets that replace it outside and inside that task's
// window (NoLabels until made).
type joiner struct {
	p       *profile.Profile
	appOf   func(profile.Labels) (id, attempt string)
	tasksOf TasksOf
	n       int
	seen    []bool
	taskOf  []*spark.Task
	replace [2][]profile.LabelSetID
	owned   bool
}

func (j *joiner) join(s *profile.Sample) {
	if s.Time == 0 || int(s.Labels) >= j.n {
		return
	}
	if !j.seen[s.Labels] {
		j.seen[s.Labels] = true
		ls := j.p.LabelSet(s.Labels)
		if v, ok := ls.Get(profile.LabelTaskID); ok {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				if app, attempt := j.appOf(ls); app != "" {
					j.taskOf[s.Labels] = j.tasksOf(app, attempt)[id]
				}
			}
		}
	}
	t := j.taskOf[s.Labels]
	if t == nil {
		return
	}
	inside := 0
	if InTaskWindow(t, s.Time) {
		inside = 1
	}
	if j.replace[inside] == nil {
		j.replace[inside] = make([]profile.LabelSetID, j.n)
	}
	if id := j.replace[inside][s.Labels]; id != profile.NoLabels {
		s.Labels = id
		return
	}
	own := j.p.LabelSet(s.Labels)
	var ls profile.Labels
	if inside == 1 {
		ls = own.Merge(profile.Labels{ // JoinedLabels, in name order as Merge needs
			{Name: profile.LabelPartition, Value: strconv.Itoa(t.Partition)},
			{Name: profile.LabelStageAttempt, Value: strconv.Itoa(t.StageAttempt)},
			{Name: profile.LabelStageID, Value: strconv.Itoa(t.StageID)},
		})
	} else {
		ls = own.Without(append([]string{profile.LabelTaskID}, JoinedLabels...)...)
	}
	if !j.owned {
		j.p.OwnLabelSets()
		j.owned = true
	}
	// Appended, not looked up: a block's sets would be indexed for each
	// query.
	id := j.p.AppendLabels(ls)
	j.replace[inside][s.Labels] = id
	s.Labels = id
}

// TaskSamples returns the rule that keeps the samples of task t of app
// appID: labelled with t's id (by its thread's name or the agent's task
// runs), of that app when they name one, and taken in t's window when they
// have a time, since a thread keeps a finished task's name while it idles.
// A store's selection of the task over TaskSpan, joined by NewJoiner,
// keeps the same samples.
func TaskSamples(appID string, t *spark.Task) func(*profile.Profile, profile.Sample) bool {
	want := strconv.FormatInt(t.ID, 10)
	return func(p *profile.Profile, s profile.Sample) bool {
		if p.Label(s, profile.LabelTaskID) != want {
			return false
		}
		if app := p.Label(s, profile.LabelAppID); app != "" && appID != "" && app != appID {
			return false
		}
		return s.Time == 0 || InTaskWindow(t, s.Time)
	}
}
