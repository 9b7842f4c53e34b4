package query

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/spark"
)

// stageEngine returns an engine knowing the corpus log local-1642039451826
// (the History Server's goldens cover its stage 0).
func stageEngine(t *testing.T) *Engine {
	t.Helper()
	r, err := eventlog.Open(corpus.Path(t, "eventlogs", "apache", "local-1642039451826"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	app, _, err := spark.Build(r)
	if err != nil {
		t.Fatal(err)
	}
	apps := newTestApps(t)
	apps.Put("", analysis.NewReport(analysis.Input{App: app}, nil, nil, nil))
	return NewEngine(Config{Apps: apps})
}

// The task table's derived times equal the History Server's task list
// of the same stage (stages/0/0/taskList).
func TestStageTasksGolden(t *testing.T) {
	e := stageEngine(t)
	var want []struct {
		TaskID         int64 `json:"taskId"`
		Duration       int64 `json:"duration"`
		SchedulerDelay int64 `json:"schedulerDelay"`
		GettingResult  int64 `json:"gettingResultTime"`
	}
	if err := json.Unmarshal(corpus.Read(t, "eventlogs", "golden", "apache", "stage_task_list_with_partitionId_expectation.json"), &want); err != nil {
		t.Fatal(err)
	}
	page, err := e.StageTasks(context.Background(), "", AppAttempt{ID: "local-1642039451826"}, 0, 0, "id", false, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != len(want) || len(page.Tasks) != len(want) {
		t.Fatalf("%d tasks of %d, want %d", len(page.Tasks), page.Total, len(want))
	}
	for i, w := range want {
		g := page.Tasks[i]
		if g.ID != w.TaskID || g.DurationMs != w.Duration || g.SchedulerDelayMs != w.SchedulerDelay || g.GettingResultMs != w.GettingResult {
			t.Errorf("task %d: duration %d, scheduler delay %d, getting result %d; want task %d: %d, %d, %d",
				g.ID, g.DurationMs, g.SchedulerDelayMs, g.GettingResultMs, w.TaskID, w.Duration, w.SchedulerDelay, w.GettingResult)
		}
	}
}

// The task table sorts by any metric, both ways, and pages.
func TestStageTasksSortAndPage(t *testing.T) {
	e := stageEngine(t)
	ctx := context.Background()
	all, err := e.StageTasks(ctx, "", AppAttempt{ID: "local-1642039451826"}, 0, -1, "duration", true, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(all.Tasks); i++ {
		if all.Tasks[i].DurationMs > all.Tasks[i-1].DurationMs {
			t.Fatalf("not by duration, longest first: %d after %d", all.Tasks[i].DurationMs, all.Tasks[i-1].DurationMs)
		}
	}
	page, err := e.StageTasks(ctx, "", AppAttempt{ID: "local-1642039451826"}, 0, -1, "duration", true, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 8 || len(page.Tasks) != 2 || page.Tasks[0].ID != all.Tasks[3].ID || page.Tasks[1].ID != all.Tasks[4].ID {
		t.Errorf("page from 3 of 2: %d of %d", len(page.Tasks), page.Total)
	}
	past, err := e.StageTasks(ctx, "", AppAttempt{ID: "local-1642039451826"}, 0, -1, "id", false, 50, 10)
	if err != nil || past.Total != 8 || len(past.Tasks) != 0 {
		t.Errorf("a page past the end: %v, %+v", err, past)
	}
	for _, bad := range []struct {
		stage int
		key   string
		kind  errkind.Kind
		want  string
	}{
		{0, "nonsense", errkind.BadInput, `sort "nonsense": want one of`},
		{99, "id", errkind.NotFound, "has no attempt -1 of stage 99"},
	} {
		_, err := e.StageTasks(ctx, "", AppAttempt{ID: "local-1642039451826"}, bad.stage, -1, bad.key, false, 0, 10)
		if errkind.Of(err) != bad.kind || err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("stage %d sorted by %q: %v", bad.stage, bad.key, err)
		}
	}
}

// The stage page's quantiles are the History Server's: of n sorted
// values, the one at min(q·n, n-1).
func TestStageQuantiles(t *testing.T) {
	e := stageEngine(t)
	p, err := e.Stage(context.Background(), "", AppAttempt{ID: "local-1642039451826"}, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Stage.ID != 0 || p.Tasks != 8 || p.Summarized != 8 || p.Job == nil || p.Job.ID != 0 {
		t.Fatalf("stage %d, %d tasks, %d summarised, job %+v", p.Stage.ID, p.Tasks, p.Summarized, p.Job)
	}
	got := map[string][5]int64{}
	for _, q := range p.Quantiles {
		got[q.Metric] = q.Values
	}
	// The eight durations (stage_task_list golden): 461, 465, 466, 466, 467, 468, 468, 480.
	if d := got["Duration"]; d != [5]int64{461, 466, 467, 468, 480} {
		t.Errorf("duration quantiles %v", d)
	}
	if len(p.Executors) != 1 || p.Executors[0].ID != "driver" || p.Executors[0].Tasks != 8 {
		t.Errorf("executors %+v", p.Executors)
	}
}

// selectNth puts at n what a sort would, for any n, with repeated values.
func TestSelectNth(t *testing.T) {
	for _, vs := range [][]int64{{5}, {3, 1, 2}, {7, 7, 7, 1, 7, 2}, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, {1, 1, 2, 2, 3, 3, 0, 0, 4, 4, 4}} {
		sorted := slices.Sorted(slices.Values(vs))
		for n := range vs {
			got := slices.Clone(vs)
			selectNth(got, n)
			if got[n] != sorted[n] {
				t.Errorf("%v: element %d is %d, want %d", vs, n, got[n], sorted[n])
			}
			for i := range got {
				if (i < n && got[i] > got[n]) || (i > n && got[i] < got[n]) {
					t.Errorf("%v, n %d: %v is not split at it", vs, n, got)
					break
				}
			}
		}
	}
}

// BenchmarkStageTasks sorts a stage of 200,000 tasks by a metric and
// answers a page of it, as the stage page's task table asks; then a page
// of a sort it made already; and the stage page's quantiles.
func BenchmarkStageTasks(b *testing.B) {
	const n = 200_000
	rep := &analysis.Report{App: spark.Summary{ID: "big"}, Stages: []*spark.Stage{{ID: 1, JobID: -1, Status: "COMPLETE"}}}
	for i := range n {
		d := int64(1000 + (i*7919)%50_000)
		rep.Tasks = append(rep.Tasks, &spark.Task{ID: int64(i), Index: i, StageID: 1, ExecutorID: strconv.Itoa(i % 100), Status: "SUCCESS",
			LaunchMs: 1_000_000 + int64(i), FinishMs: 1_000_000 + int64(i) + d, Metrics: spark.TaskMetrics{RunTimeMs: d - 10, ShuffleRemoteBytes: int64(i%977) << 10}})
	}
	apps, err := appstore.Open(b.TempDir(), analysis.DefaultThresholds)
	if err != nil {
		b.Fatal(err)
	}
	defer apps.Close()
	apps.Put("", rep)
	e := NewEngine(Config{Apps: apps})
	ctx := context.Background()
	// CPU time per op, beside the wall time: on a machine whose cores
	// others use too, it is the figure that compares.
	cpu := func(b *testing.B, op func()) {
		start := cpuTime()
		for b.Loop() {
			op()
		}
		b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
	}
	page := func(b *testing.B, key string) {
		if _, err := e.StageTasks(ctx, "", AppAttempt{ID: "big"}, 1, -1, key, true, 100_000, 100); err != nil {
			b.Fatal(err)
		}
	}
	// A new sort each time, then a page of the last sort.
	for _, key := range []string{"duration", "shuffleRead", "executor"} {
		b.Run("sort-"+key, func(b *testing.B) {
			cpu(b, func() {
				e.orders = taskOrders{}
				page(b, key)
			})
		})
	}
	b.Run("page-sorted", func(b *testing.B) {
		cpu(b, func() { page(b, "duration") })
	})
	b.Run("quantiles", func(b *testing.B) {
		cpu(b, func() {
			if _, err := e.Stage(ctx, "", AppAttempt{ID: "big"}, 1, -1); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
