package query

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/spark"
)

// StagePage is what the stage page shows of one attempt of a stage, as the
// History Server's stage page does: the stage, its job, the quantiles of
// its tasks' metrics and their sums per executor. Its tasks come a page at
// a time (StageTasks).
type StagePage struct {
	Stage *spark.Stage `json:"stage"`
	Job   *spark.Job   `json:"job,omitempty"`
	// Attempts lists the stage's attempts, this one among them.
	Attempts []int `json:"attempts"`
	// Tasks counts the attempt's tasks; Summarized the successful ones the
	// quantiles are of.
	Tasks      int `json:"tasks"`
	Summarized int `json:"summarized"`
	// Quantiles are the minimum, 25th percentile, median, 75th percentile
	// and maximum of each metric over the successful tasks.
	Quantiles []MetricQuantiles `json:"quantiles"`
	Executors []StageExecutor   `json:"executors"`
}

// MetricQuantiles are the quantiles of one task metric, in unit (ms,
// bytes or records).
type MetricQuantiles struct {
	Metric string   `json:"metric"`
	Unit   string   `json:"unit"`
	Values [5]int64 `json:"values"`
}

// StageExecutor sums the tasks of a stage attempt that ran on one
// executor.
type StageExecutor struct {
	ID        string            `json:"executorId"`
	Host      string            `json:"host"`
	Tasks     int               `json:"tasks"`
	Succeeded int               `json:"succeeded"`
	Failed    int               `json:"failed"`
	Killed    int               `json:"killed"`
	TaskTime  int64             `json:"taskTimeMs"`
	Metrics   spark.TaskMetrics `json:"metrics"`
}

// TaskRow is a task of the stage page's table: the task with the times
// the History Server derives from its metrics.
type TaskRow struct {
	*spark.Task
	DurationMs       int64 `json:"durationMs"`
	SchedulerDelayMs int64 `json:"schedulerDelayMs"`
	GettingResultMs  int64 `json:"gettingResultMs"`
}

// TaskPage is one page of a stage attempt's tasks in the order asked for.
type TaskPage struct {
	Total int       `json:"total"`
	Tasks []TaskRow `json:"tasks"`
}

// taskMetric is a metric of a task the stage page summarises and sorts by.
type taskMetric struct {
	key, title, unit string
	value            func(t *spark.Task) int64
}

// taskMetrics are the metrics of the stage page's quantiles, in the
// History Server's order, and the keys its task table sorts by.
var taskMetrics = []taskMetric{
	{"duration", "Duration", "ms", (*spark.Task).DurationMs},
	{"schedulerDelay", "Scheduler delay", "ms", (*spark.Task).SchedulerDelayMs},
	{"deserialize", "Task deserialisation", "ms", func(t *spark.Task) int64 { return t.Metrics.DeserializeMs }},
	{"runTime", "Run time", "ms", func(t *spark.Task) int64 { return t.Metrics.RunTimeMs }},
	{"cpu", "CPU time", "ms", func(t *spark.Task) int64 { return t.Metrics.CPUTimeNs / 1e6 }},
	{"gc", "GC time", "ms", func(t *spark.Task) int64 { return t.Metrics.GCTimeMs }},
	{"resultSerialization", "Result serialisation", "ms", func(t *spark.Task) int64 { return t.Metrics.ResultSerializationMs }},
	{"gettingResult", "Getting result", "ms", (*spark.Task).GettingResultMs},
	{"peakMemory", "Peak execution memory", "bytes", func(t *spark.Task) int64 { return t.Metrics.PeakExecutionMemory }},
	{"input", "Input size", "bytes", func(t *spark.Task) int64 { return t.Metrics.InputBytes }},
	{"inputRecords", "Input records", "records", func(t *spark.Task) int64 { return t.Metrics.InputRecords }},
	{"output", "Output size", "bytes", func(t *spark.Task) int64 { return t.Metrics.OutputBytes }},
	{"fetchWait", "Shuffle read blocked time", "ms", func(t *spark.Task) int64 { return t.Metrics.ShuffleFetchWaitMs }},
	{"shuffleRead", "Shuffle read size", "bytes", func(t *spark.Task) int64 { return t.Metrics.ShuffleReadBytes() }},
	{"shuffleRemote", "Shuffle remote reads", "bytes", func(t *spark.Task) int64 { return t.Metrics.ShuffleRemoteBytes }},
	{"shuffleWriteTime", "Shuffle write time", "ms", func(t *spark.Task) int64 { return t.Metrics.ShuffleWriteTimeNs / 1e6 }},
	{"shuffleWrite", "Shuffle write size", "bytes", func(t *spark.Task) int64 { return t.Metrics.ShuffleWriteBytes }},
	{"memorySpill", "Spill (memory)", "bytes", func(t *spark.Task) int64 { return t.Metrics.MemorySpilled }},
	{"diskSpill", "Spill (disk)", "bytes", func(t *spark.Task) int64 { return t.Metrics.DiskSpilled }},
}

// taskOrders are the other keys the task table sorts by.
var taskOrders = map[string]func(a, b *spark.Task) int{
	"id":        func(a, b *spark.Task) int { return cmp.Compare(a.ID, b.ID) },
	"index":     func(a, b *spark.Task) int { return cmp.Compare(a.Index, b.Index) },
	"partition": func(a, b *spark.Task) int { return cmp.Compare(a.Partition, b.Partition) },
	"attempt":   func(a, b *spark.Task) int { return cmp.Compare(a.Attempt, b.Attempt) },
	"launch":    func(a, b *spark.Task) int { return cmp.Compare(a.LaunchMs, b.LaunchMs) },
	"executor":  func(a, b *spark.Task) int { return cmp.Compare(a.ExecutorID, b.ExecutorID) },
	"host":      func(a, b *spark.Task) int { return cmp.Compare(a.Host, b.Host) },
	"status":    func(a, b *spark.Task) int { return cmp.Compare(a.Status, b.Status) },
	"locality":  func(a, b *spark.Task) int { return cmp.Compare(a.Locality, b.Locality) },
}

// stageTasks returns the report of the tenant's app and the tasks of
// attempt of stage, with the stage; attempt -1 is the latest.
func (e *Engine) stageTasks(tenant, appID string, stage, attempt int) (*spark.Stage, []*spark.Task, []int, error) {
	rep := e.apps.Report(tenant, appID)
	if rep == nil {
		return nil, nil, nil, errkind.Errorf(errkind.NotFound, "no application %q: import its event log first", appID)
	}
	var st *spark.Stage
	var attempts []int
	for _, s := range rep.Stages {
		if s.ID != stage {
			continue
		}
		attempts = append(attempts, s.Attempt)
		if s.Attempt == attempt || (attempt < 0 && (st == nil || s.Attempt > st.Attempt)) {
			st = s
		}
	}
	if st == nil {
		return nil, nil, nil, errkind.Errorf(errkind.NotFound, "application %q has no attempt %d of stage %d", appID, attempt, stage)
	}
	var tasks []*spark.Task
	for _, t := range rep.Tasks {
		if t.StageID == stage && t.StageAttempt == st.Attempt {
			tasks = append(tasks, t)
		}
	}
	slices.Sort(attempts)
	return st, tasks, attempts, nil
}

// Stage returns the stage page of attempt (-1: the latest) of a stage of
// the tenant's app.
func (e *Engine) Stage(ctx context.Context, tenant, appID string, stage, attempt int) (*StagePage, error) {
	st, tasks, attempts, err := e.stageTasks(tenant, appID, stage, attempt)
	if err != nil {
		return nil, err
	}
	p := &StagePage{Stage: st, Attempts: attempts, Tasks: len(tasks)}
	if rep := e.apps.Report(tenant, appID); rep != nil {
		for _, j := range rep.Jobs {
			if j.ID == st.JobID {
				p.Job = j
			}
		}
	}
	var ok []*spark.Task
	for _, t := range tasks {
		if t.Status == "SUCCESS" && t.FinishMs > 0 {
			ok = append(ok, t)
		}
	}
	p.Summarized = len(ok)
	p.Quantiles = quantiles(ok)
	p.Executors = byExecutor(tasks)
	return p, nil
}

// quantiles returns the quantiles of each of taskMetrics over tasks, as
// the History Server picks them: of n sorted values, the one at index
// min(q·n, n-1).
func quantiles(tasks []*spark.Task) []MetricQuantiles {
	out := []MetricQuantiles{}
	if len(tasks) == 0 {
		return out
	}
	vs := make([]int64, len(tasks))
	for _, m := range taskMetrics {
		for i, t := range tasks {
			vs[i] = m.value(t)
		}
		slices.Sort(vs)
		q := MetricQuantiles{Metric: m.title, Unit: m.unit}
		for i, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
			q.Values[i] = vs[min(int(f*float64(len(vs))), len(vs)-1)]
		}
		out = append(out, q)
	}
	return out
}

// byExecutor sums tasks per executor, the driver first, then by number.
func byExecutor(tasks []*spark.Task) []StageExecutor {
	m := map[string]*StageExecutor{}
	var out []StageExecutor
	for _, t := range tasks {
		x := m[t.ExecutorID]
		if x == nil {
			x = &StageExecutor{ID: t.ExecutorID, Host: t.Host}
			m[t.ExecutorID] = x
		}
		x.Tasks++
		switch t.Status {
		case "SUCCESS":
			x.Succeeded++
		case "FAILED":
			x.Failed++
		case "KILLED":
			x.Killed++
		}
		x.TaskTime += t.DurationMs()
		x.Metrics.Add(&t.Metrics)
	}
	for _, x := range m {
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b StageExecutor) int { return executorOrder(a.ID, b.ID) })
	return out
}

// executorOrder orders executor ids: the driver first, then by number,
// then by name.
func executorOrder(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == "driver":
		return -1
	case b == "driver":
		return 1
	}
	na, errA := strconv.Atoi(a)
	nb, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(a, b)
}

// StageTasks returns limit tasks from offset of attempt (-1: the latest)
// of a stage of the tenant's app, sorted by key (a metric of the
// quantiles, or id, index, partition, attempt, launch, executor, host,
// status, locality), descending when desc; ties keep task id order.
func (e *Engine) StageTasks(ctx context.Context, tenant, appID string, stage, attempt int, key string, desc bool, offset, limit int) (*TaskPage, error) {
	order, err := taskOrder(key)
	if err != nil {
		return nil, err
	}
	_, tasks, _, err := e.stageTasks(tenant, appID, stage, attempt)
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(tasks)
	slices.SortFunc(sorted, func(a, b *spark.Task) int {
		c := order(a, b)
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.ID, b.ID))
	})
	p := &TaskPage{Total: len(sorted), Tasks: []TaskRow{}}
	for _, t := range sorted[min(offset, len(sorted)):min(offset+limit, len(sorted))] {
		p.Tasks = append(p.Tasks, TaskRow{Task: t, DurationMs: t.DurationMs(), SchedulerDelayMs: t.SchedulerDelayMs(), GettingResultMs: t.GettingResultMs()})
	}
	return p, nil
}

// taskOrder returns the comparison of tasks by key.
func taskOrder(key string) (func(a, b *spark.Task) int, error) {
	if key == "" {
		key = "id"
	}
	if o, ok := taskOrders[key]; ok {
		return o, nil
	}
	for _, m := range taskMetrics {
		if m.key == key {
			v := m.value
			return func(a, b *spark.Task) int { return cmp.Compare(v(a), v(b)) }, nil
		}
	}
	keys := []string{}
	for k := range taskOrders {
		keys = append(keys, k)
	}
	for _, m := range taskMetrics {
		keys = append(keys, m.key)
	}
	slices.Sort(keys)
	return nil, errkind.Errorf(errkind.BadInput, "sort %q: want one of %s", key, strings.Join(keys, ", "))
}
