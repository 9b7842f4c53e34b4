package attribution

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// The join to task windows gives a sample taken while its task ran the
// task's stage, stage attempt and partition in place of any it had, and
// takes its task's labels off one taken after: each result a normalised
// set, one label per name.
func TestTaskJoinerLabels(t *testing.T) {
	const ms = int64(time.Millisecond)
	p := profile.New()
	own := p.AddLabels(profile.Labels{
		{Name: profile.LabelAppID, Value: "app-1"}, {Name: profile.LabelExecutorID, Value: "2"},
		{Name: profile.LabelPartition, Value: "99"}, {Name: profile.LabelStageID, Value: "5"}, {Name: profile.LabelTaskID, Value: "7"},
	})
	task := &spark.Task{ID: 7, StageID: 3, StageAttempt: 1, Partition: 12, LaunchMs: 10_000, FinishMs: 12_000}
	join := NewJoiner(p, func(app, _ string) map[int64]*spark.Task {
		if app == "app-1" {
			return map[int64]*spark.Task{7: task}
		}
		return nil
	})
	for _, c := range []struct {
		name string
		time int64
		want string
	}{
		{"inside", 11_000 * ms, `{spark_app_id="app-1", spark_executor_id="2", spark_partition="12", spark_stage_attempt="1", spark_stage_id="3", spark_task_id="7"}`},
		{"after", 20_000 * ms, `{spark_app_id="app-1", spark_executor_id="2"}`},
	} {
		s := profile.Sample{Labels: own, Time: c.time}
		join(&s)
		got := p.LabelSet(s.Labels)
		if got.String() != c.want || !slices.IsSortedFunc(got, func(a, b profile.Label) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("%s: %v, want %s", c.name, got, c.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Name == got[i-1].Name {
				t.Errorf("%s: %s twice", c.name, got[i].Name)
			}
		}
	}
}

// A sample is joined to the tasks of the app attempt its label names (task
// ids start again in each attempt), to the latest attempt's without one.
func TestTaskJoinerAttempts(t *testing.T) {
	const ms = int64(time.Millisecond)
	byAttempt := map[string]map[int64]*spark.Task{
		"1": {7: {ID: 7, StageID: 1, LaunchMs: 10_000, FinishMs: 12_000}},
		"2": {7: {ID: 7, StageID: 2, LaunchMs: 50_000, FinishMs: 52_000}},
	}
	tasksOf := func(app, attempt string) map[int64]*spark.Task {
		if ts, ok := byAttempt[attempt]; ok {
			return ts
		}
		return byAttempt["2"] // the latest
	}
	for _, c := range []struct {
		name, attempt string
		time          int64
		want          string
	}{
		{"attempt 1", "1", 11_000 * ms, "1"},
		{"attempt 2", "2", 51_000 * ms, "2"},
		{"no attempt: the latest", "", 51_000 * ms, "2"},
		{"attempt 1, in attempt 2's window", "1", 51_000 * ms, ""},
	} {
		p := profile.New()
		ls := profile.Labels{{Name: profile.LabelAppID, Value: "app-1"}, {Name: profile.LabelTaskID, Value: "7"}}
		if c.attempt != "" {
			ls = append(ls, profile.Label{Name: profile.LabelAppAttempt, Value: c.attempt})
		}
		s := profile.Sample{Labels: p.AddLabels(ls), Time: c.time}
		NewJoiner(p, tasksOf)(&s)
		if got := p.Label(s, profile.LabelStageID); got != c.want {
			t.Errorf("%s: stage %q, want %q", c.name, got, c.want)
		}
	}
}
