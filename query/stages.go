package query

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sparkprof/sparkprof/analysis"
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
	// Unknown says that no task carries the metric (tasks from container
	// logs): Values are not its quantiles.
	Unknown bool `json:"unknown,omitempty"`
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

// taskSortKeys are the other keys the task table sorts by: by a number,
// or by a string.
var taskSortKeys = map[string]struct {
	num func(t *spark.Task) int64
	str func(t *spark.Task) string
}{
	"id":        {num: func(t *spark.Task) int64 { return t.ID }},
	"index":     {num: func(t *spark.Task) int64 { return int64(t.Index) }},
	"partition": {num: func(t *spark.Task) int64 { return int64(t.Partition) }},
	"attempt":   {num: func(t *spark.Task) int64 { return int64(t.Attempt) }},
	"launch":    {num: func(t *spark.Task) int64 { return t.LaunchMs }},
	"executor":  {str: func(t *spark.Task) string { return t.ExecutorID }},
	"host":      {str: func(t *spark.Task) string { return t.Host }},
	"status":    {str: func(t *spark.Task) string { return t.Status }},
	"locality":  {str: func(t *spark.Task) string { return t.Locality }},
}

// stageOf returns the report of the tenant's app and attempt of stage,
// with the stage's attempts; attempt -1 is the latest.
func (e *Engine) stageOf(tenant string, app AppAttempt, stage, attempt int) (*analysis.Report, *spark.Stage, []int, error) {
	rep, err := e.report(tenant, app)
	if err != nil {
		return nil, nil, nil, err
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
		return nil, nil, nil, errkind.Errorf(errkind.NotFound, "application %q has no attempt %d of stage %d", app.ID, attempt, stage)
	}
	slices.Sort(attempts)
	return rep, st, attempts, nil
}

// attemptTasks returns the tasks of stage attempt st of rep.
func attemptTasks(rep *analysis.Report, st *spark.Stage) []*spark.Task {
	tasks := make([]*spark.Task, 0, st.TaskCount)
	for _, t := range rep.Tasks {
		if t.StageID == st.ID && t.StageAttempt == st.Attempt {
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// Stage returns the stage page of attempt (-1: the latest) of a stage of
// the tenant's app.
func (e *Engine) Stage(ctx context.Context, tenant string, app AppAttempt, stage, attempt int) (*StagePage, error) {
	rep, st, attempts, err := e.stageOf(tenant, app, stage, attempt)
	if err != nil {
		return nil, err
	}
	tasks := attemptTasks(rep, st)
	p := &StagePage{Stage: st, Attempts: attempts, Tasks: len(tasks)}
	for _, j := range rep.Jobs {
		if j.ID == st.JobID {
			p.Job = j
		}
	}
	ok := make([]*spark.Task, 0, len(tasks))
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
	for _, m := range taskMetrics {
		// Only the duration of a task without metrics is known.
		vs := make([]int64, 0, len(tasks))
		for _, t := range tasks {
			if !t.NoMetrics || m.key == "duration" {
				vs = append(vs, m.value(t))
			}
		}
		q := MetricQuantiles{Metric: m.title, Unit: m.unit}
		if len(vs) == 0 {
			q.Unknown = true
			out = append(out, q)
			continue
		}
		// Each order statistic is selected from the values above the one
		// before it, which selectNth leaves after it.
		from := 0
		for i, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
			k := min(int(f*float64(len(vs))), len(vs)-1)
			selectNth(vs[from:], k-from)
			q.Values[i] = vs[k]
			from = k
		}
		out = append(out, q)
	}
	return out
}

// selectNth reorders vs so that vs[n] is the value a sort would put there,
// the ones before it no greater and the ones after no smaller (Hoare's
// quickselect, the middle of three values its pivot). The standard library
// sorts but does not select, and the stage page needs five order
// statistics of each of nineteen metrics of up to 200,000 tasks: a sort
// of each is ten times the work.
func selectNth(vs []int64, n int) {
	lo, hi := 0, len(vs)-1
	for lo < hi {
		mid := lo + (hi-lo)/2
		if vs[mid] < vs[lo] {
			vs[mid], vs[lo] = vs[lo], vs[mid]
		}
		if vs[hi] < vs[lo] {
			vs[hi], vs[lo] = vs[lo], vs[hi]
		}
		if vs[hi] < vs[mid] {
			vs[hi], vs[mid] = vs[mid], vs[hi]
		}
		p := vs[mid]
		i, j := lo, hi
		for i <= j {
			for vs[i] < p {
				i++
			}
			for vs[j] > p {
				j--
			}
			if i <= j {
				vs[i], vs[j] = vs[j], vs[i]
				i++
				j--
			}
		}
		switch {
		case n <= j:
			hi = j
		case n >= i:
			lo = i
		default:
			return
		}
	}
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
func (e *Engine) StageTasks(ctx context.Context, tenant string, app AppAttempt, stage, attempt int, key string, desc bool, offset, limit int) (*TaskPage, error) {
	if key == "" {
		key = "id"
	}
	num, str, err := taskKey(key)
	if err != nil {
		return nil, err
	}
	rep, st, _, err := e.stageOf(tenant, app, stage, attempt)
	if err != nil {
		return nil, err
	}
	k := orderKey{rep, stage, st.Attempt, key, desc}
	sorted := e.orders.get(k)
	if sorted == nil {
		sorted = sortTasks(attemptTasks(rep, st), num, str, desc)
		e.orders.put(k, sorted)
	}
	p := &TaskPage{Total: len(sorted), Tasks: []TaskRow{}}
	for _, t := range sorted[min(offset, len(sorted)):min(offset+limit, len(sorted))] {
		p.Tasks = append(p.Tasks, TaskRow{Task: t, DurationMs: t.DurationMs(), SchedulerDelayMs: t.SchedulerDelayMs(), GettingResultMs: t.GettingResultMs()})
	}
	return p, nil
}

// sortTasks returns tasks sorted by the key num or str reads, descending
// when desc, then by id. The keys are read once, not at each of a sort's
// million comparisons (a stage of 200,000 tasks).
func sortTasks(tasks []*spark.Task, num func(*spark.Task) int64, str func(*spark.Task) string, desc bool) []*spark.Task {
	type row struct {
		n, id int64
		s     string
		t     *spark.Task
	}
	rows := make([]row, len(tasks))
	for i, t := range tasks {
		rows[i] = row{id: t.ID, t: t}
		if num != nil {
			rows[i].n = num(t)
		} else {
			rows[i].s = str(t)
		}
	}
	dir := 1
	if desc {
		dir = -1
	}
	if num != nil {
		slices.SortFunc(rows, func(a, b row) int {
			if a.n != b.n {
				return dir * cmp.Compare(a.n, b.n)
			}
			return cmp.Compare(a.id, b.id)
		})
	} else {
		slices.SortFunc(rows, func(a, b row) int {
			if c := strings.Compare(a.s, b.s); c != 0 {
				return dir * c
			}
			return cmp.Compare(a.id, b.id)
		})
	}
	out := make([]*spark.Task, len(rows))
	for i, r := range rows {
		out[i] = r.t
	}
	return out
}

// orderKey names a sort of a stage attempt's tasks: the report (a new
// one, of an app imported again, sorts again), stage, attempt, key and
// direction.
type orderKey struct {
	rep            *analysis.Report
	stage, attempt int
	key            string
	desc           bool
}

// taskOrders keeps the last few sorts of the task table, so that paging
// through one costs a slice, not a sort of 200,000 tasks.
type taskOrders struct {
	mu      sync.Mutex
	entries []taskOrder // the most recent last
}

type taskOrder struct {
	key   orderKey
	tasks []*spark.Task
}

// maxTaskOrders is how many sorts taskOrders keeps.
const maxTaskOrders = 4

func (o *taskOrders) get(k orderKey) []*spark.Task {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, e := range o.entries {
		if e.key == k {
			o.entries = append(append(o.entries[:i:i], o.entries[i+1:]...), e)
			return e.tasks
		}
	}
	return nil
}

func (o *taskOrders) put(k orderKey, tasks []*spark.Task) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.entries) == maxTaskOrders {
		o.entries = slices.Delete(o.entries, 0, 1)
	}
	o.entries = append(o.entries, taskOrder{k, tasks})
}

// taskKey returns the key of a task to sort by: a number or a string.
func taskKey(key string) (func(*spark.Task) int64, func(*spark.Task) string, error) {
	if o, ok := taskSortKeys[key]; ok {
		return o.num, o.str, nil
	}
	for _, m := range taskMetrics {
		if m.key == key {
			return m.value, nil, nil
		}
	}
	keys := []string{}
	for k := range taskSortKeys {
		keys = append(keys, k)
	}
	for _, m := range taskMetrics {
		keys = append(keys, m.key)
	}
	slices.Sort(keys)
	return nil, nil, errkind.Errorf(errkind.BadInput, "sort %q: want one of %s", key, strings.Join(keys, ", "))
}
