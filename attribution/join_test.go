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
	join := NewJoiner(p, func(app string) map[int64]*spark.Task {
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
