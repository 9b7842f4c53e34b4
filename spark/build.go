package spark

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/valyala/fastjson"
)

// Build reads every line of r and returns the application model. It fails
// only when the log cannot be read; bad lines go to the Report.
//
// Task events, nearly all of a log's bytes, are parsed on all CPUs; the
// model is then updated in log order by one goroutine.
func Build(r *eventlog.Reader) (*App, *Report, error) {
	return BuildWith(r, Options{})
}

// Options control BuildWith.
type Options struct {
	// Progress, when set, is called now and then with the uncompressed
	// bytes read so far, from another goroutine.
	Progress func(bytes int64)
}

// BuildWith is Build with options.
func BuildWith(r *eventlog.Reader, opts Options) (*App, *Report, error) {
	b := newBuilder()
	b.progress = opts.Progress
	if err := b.run(r, runtime.GOMAXPROCS(0)); err != nil {
		return nil, nil, fmt.Errorf("spark: reading event log: %w", err)
	}
	b.rep.Truncations = r.Truncations
	b.rep.JobsWithoutStart = max(len(b.app.Jobs)-b.app.JobCount, 0)
	return b.finish(), b.rep, nil
}

// apply updates the model with one parsed line. Its error is a refusal
// of the memory of the line's parse.
func (b *builder) apply(res *result, p *jsonParser) error {
	switch res.kind {
	case resMalformed:
		b.malformed(res.pos)
	case resTaskStart:
		b.addTaskStart(res.task)
	case resTaskEnd:
		b.addTaskEnd(res.task, res.cls)
	case resOther:
		v, err := p.parse(res.line, res.pos)
		if err != nil {
			return err
		}
		if v == nil || v.Type() != fastjson.TypeObject {
			b.malformed(res.pos)
			return nil
		}
		b.event(v)
	}
	return nil
}

// malformed notes a line at pos that is not a JSON event.
func (b *builder) malformed(pos eventlog.Pos) {
	if b.rep.MalformedLines++; len(b.rep.Malformed) < MaxMalformed {
		b.rep.Malformed = append(b.rep.Malformed, pos)
	}
}

type builder struct {
	app    *App
	rep    *Report
	execs  map[string]*Executor
	jobs   map[int]*Job
	stages map[[2]int]*Stage
	tasks  map[int64]*Task
	sql    map[int64]*SQLExecution
	// stageJob maps a stage id to the job that submitted it, for stages
	// submitted after their job start.
	stageJob map[int]int
	// lastAttempt maps a stage id to its latest attempt number.
	lastAttempt map[int]int
	// sqlm follows the SQL metrics of the plans' operators.
	sqlm     *sqlTracker
	progress func(bytes int64)
}

func newBuilder() *builder {
	return &builder{
		app:         &App{Summary: Summary{FailureReasons: map[string]int{}}},
		rep:         &Report{Unknown: map[string]int{}, MissingEnd: true},
		execs:       map[string]*Executor{},
		jobs:        map[int]*Job{},
		stages:      map[[2]int]*Stage{},
		tasks:       map[int64]*Task{},
		sql:         map[int64]*SQLExecution{},
		stageJob:    map[int]int{},
		lastAttempt: map[int]int{},
		sqlm:        newSQLTracker(),
	}
}

func str(v *fastjson.Value, keys ...string) string { return string(v.GetStringBytes(keys...)) }

// num reads a number that may also be written as a string (some versions
// and tools quote ids).
func num(v *fastjson.Value, keys ...string) int64 {
	x := v.Get(keys...)
	if x == nil {
		return 0
	}
	switch x.Type() {
	case fastjson.TypeNumber:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return int64(f)
	case fastjson.TypeString:
		n, _ := strconv.ParseInt(string(x.GetStringBytes()), 10, 64)
		return n
	}
	return 0
}

func (b *builder) event(v *fastjson.Value) {
	// Some versions write scheduler events with their package.
	ev := strings.TrimPrefix(str(v, "Event"), "org.apache.spark.scheduler.")
	if b.appEvent(v, ev) {
		return
	}
	switch ev {
	case "SparkListenerExecutorBlacklisted", "SparkListenerExecutorExcluded",
		"SparkListenerExecutorUnblacklisted", "SparkListenerExecutorUnexcluded",
		"SparkListenerNodeBlacklisted", "SparkListenerNodeExcluded",
		"SparkListenerNodeUnblacklisted", "SparkListenerNodeUnexcluded",
		"SparkListenerExecutorBlacklistedForStage", "SparkListenerExecutorExcludedForStage",
		"SparkListenerNodeBlacklistedForStage", "SparkListenerNodeExcludedForStage":
		b.exclude(v, ev)
	case "SparkListenerJobStart":
		b.jobStart(v)
	case "SparkListenerJobEnd":
		j := b.job(int(num(v, "Job ID")))
		j.EndMs = num(v, "Completion Time")
		j.Result = str(v, "Job Result", "Result")
		if j.Result == "JobFailed" {
			j.Failure = str(v, "Job Result", "Exception", "Message")
		}
		b.skipPending(j)
	case "SparkListenerStageSubmitted":
		b.stageInfo(v.Get("Stage Info"), v.Get("Properties"), false)
	case "SparkListenerStageCompleted":
		b.stageInfo(v.Get("Stage Info"), nil, true)
	case "SparkListenerTaskStart":
		if t, ok := parseTaskStart(v); ok {
			b.addTaskStart(t)
		}
	case "SparkListenerTaskEnd":
		if t, cls, ok := parseTaskEnd(v); ok {
			b.addTaskEnd(t, cls)
		}
	case "SparkListenerTaskGettingResult", "SparkListenerSpeculativeTaskSubmitted",
		"SparkListenerBlockManagerRemoved", "SparkListenerUnpersistRDD", "SparkListenerStageExecutorMetrics",
		"SparkListenerExecutorMetricsUpdate", "SparkListenerBlockUpdated", "SparkListenerResourceProfileAdded":
		// Known events that do not change the model.
	default:
		if !b.sqlEvent(ev, v) {
			b.unknown(ev)
		}
	}
}

// unknown counts an event of a type Build does not model: by name, for
// the first MaxUnknown names (cut to 200 bytes), the others together.
func (b *builder) unknown(name string) {
	if len(name) > 200 {
		name = name[:200] + "..."
	}
	if _, ok := b.rep.Unknown[name]; !ok && len(b.rep.Unknown) >= MaxUnknown {
		name = OtherUnknown
	}
	b.rep.Unknown[name]++
}

func (b *builder) environment(v *fastjson.Value) {
	b.app.Environment = newEnvironment(v)
	props := v.Get("Spark Properties")
	if props == nil {
		return
	}
	get := func(k string) (string, bool) {
		// An object in most versions; a list of [key, value] pairs in some.
		if o, err := props.Object(); err == nil {
			x := o.Get(k)
			if x == nil {
				return "", false
			}
			return string(x.GetStringBytes()), true
		}
		for _, kv := range props.GetArray() {
			if a := kv.GetArray(); len(a) == 2 && string(a[0].GetStringBytes()) == k {
				return string(a[1].GetStringBytes()), true
			}
		}
		return "", false
	}
	if b.app.Config == nil {
		b.app.Config = map[string]string{}
	}
	for _, k := range KeyConfig {
		if val, ok := get(k); ok {
			b.app.Config[k] = val
		}
	}
	b.app.Master = b.app.Config["spark.master"]
	if b.app.User == "" {
		if o, err := v.Get("System Properties").Object(); err == nil && o.Get("user.name") != nil {
			b.app.User = string(o.Get("user.name").GetStringBytes())
		}
	}
}

func (b *builder) executor(id string) *Executor {
	e := b.execs[id]
	if e == nil {
		e = &Executor{ID: id}
		b.execs[id] = e
		b.app.Executors = append(b.app.Executors, e)
	}
	return e
}

// exclude records an exclusion event ev (blacklisting before Spark 3.1)
// of an executor or node, for the app or for one stage attempt.
func (b *builder) exclude(v *fastjson.Value, ev string) {
	x := ExclusionEvent{
		TimeMs: num(v, "time"), ExecutorID: str(v, "executorId"), Host: str(v, "hostId"), StageID: -1,
		Excluded: !strings.Contains(ev, "Un"),
	}
	if strings.HasSuffix(ev, "ForStage") {
		x.StageID, x.StageAttempt = int(num(v, "stageId")), int(num(v, "stageAttemptId"))
	}
	switch {
	case v.Get("taskFailures") != nil:
		x.Failures = int(num(v, "taskFailures"))
		x.Reason = strconv.Itoa(x.Failures) + " task failures"
	case v.Get("executorFailures") != nil:
		x.Failures = int(num(v, "executorFailures"))
		x.Reason = strconv.Itoa(x.Failures) + " executors excluded"
	}
	b.app.Exclusion = append(b.app.Exclusion, x)
	if x.StageID >= 0 {
		if x.ExecutorID != "" {
			e := b.executor(x.ExecutorID)
			if !slices.Contains(e.ExcludedInStages, x.StageID) {
				e.ExcludedInStages = append(e.ExcludedInStages, x.StageID)
			}
		}
		return
	}
	if x.ExecutorID != "" {
		b.executor(x.ExecutorID).Excluded = x.Excluded
	}
	// A node's exclusion covers its executors, not the driver.
	for _, e := range b.app.Executors {
		if x.Host != "" && e.Host == x.Host && e.ID != "driver" {
			e.Excluded = x.Excluded
		}
	}
}

func (b *builder) job(id int) *Job {
	j := b.jobs[id]
	if j == nil {
		j = &Job{ID: id, SQLID: -1}
		b.jobs[id] = j
		b.app.Jobs = append(b.app.Jobs, j)
	}
	return j
}

func (b *builder) jobStart(v *fastjson.Value) {
	j := b.job(int(num(v, "Job ID")))
	j.SubmitMs = num(v, "Submission Time")
	b.app.JobCount++
	for _, s := range v.GetArray("Stage IDs") {
		id := s.GetInt()
		j.StageIDs = append(j.StageIDs, id)
		b.stageJob[id] = j.ID
	}
	if props := v.Get("Properties"); props != nil {
		if id := str(props, "spark.sql.execution.id"); id != "" {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				j.SQLID = n
				s := b.sqlExec(n)
				s.JobIDs = append(s.JobIDs, j.ID)
				b.sqlm.jobStart(n, j.StageIDs, v.GetArray("Stage Infos"))
			}
		}
		j.Group = str(props, "spark.jobGroup.id")
		j.Description = str(props, "spark.job.description")
	}
	// Stage infos of the job: stages that are never submitted (skipped)
	// still have their parents and names here. The job is named for its
	// last stage, as Spark's status store names it.
	last := -1
	for _, si := range v.GetArray("Stage Infos") {
		id, attempt := int(num(si, "Stage ID")), int(num(si, "Stage Attempt ID"))
		if id > last {
			last, j.Name = id, str(si, "Stage Name")
		}
		if _, ok := b.stages[[2]int{id, attempt}]; !ok {
			st := b.stage(id, attempt)
			b.fillStage(st, si)
			st.Status = "PENDING"
		}
	}
}

// skipPending marks the stages of ended job j that never ran as skipped,
// as Spark's UI does: their output was there already (a shuffle another
// job wrote), or the job failed before reaching them.
func (b *builder) skipPending(j *Job) {
	for _, id := range j.StageIDs {
		for attempt := 0; attempt <= b.lastAttempt[id]; attempt++ {
			if st := b.stages[[2]int{id, attempt}]; st != nil && st.Status == "PENDING" {
				st.Status = "SKIPPED"
			}
		}
	}
}

func (b *builder) stage(id, attempt int) *Stage {
	k := [2]int{id, attempt}
	st := b.stages[k]
	if st == nil {
		st = &Stage{ID: id, Attempt: attempt, JobID: -1, SQLID: -1, Status: "PENDING"}
		if j, ok := b.stageJob[id]; ok {
			st.JobID = j
			st.SQLID = b.jobs[j].SQLID
		}
		b.stages[k] = st
		b.app.Stages = append(b.app.Stages, st)
	}
	if attempt > b.lastAttempt[id] {
		b.lastAttempt[id] = attempt
	}
	return st
}

func (b *builder) fillStage(st *Stage, si *fastjson.Value) {
	if name := str(si, "Stage Name"); name != "" {
		st.Name = name
	}
	if n := num(si, "Number of Tasks"); n > 0 {
		st.NumTasks = int(n)
	}
	if ps := si.GetArray("Parent IDs"); ps != nil {
		st.Parents = st.Parents[:0]
		for _, p := range ps {
			st.Parents = append(st.Parents, p.GetInt())
		}
	}
	if rdds := si.GetArray("RDD Info"); rdds != nil {
		st.RDDIDs = st.RDDIDs[:0]
		for _, r := range rdds {
			st.RDDIDs = append(st.RDDIDs, int(num(r, "RDD ID")))
		}
	}
}

func (b *builder) stageInfo(si, props *fastjson.Value, completed bool) {
	if si == nil {
		return
	}
	st := b.stage(int(num(si, "Stage ID")), int(num(si, "Stage Attempt ID")))
	b.fillStage(st, si)
	if t := num(si, "Submission Time"); t > 0 {
		st.SubmitMs = t
	}
	if props != nil {
		if id := str(props, "spark.sql.execution.id"); id != "" {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				st.SQLID = n
			}
		}
	}
	if !completed {
		b.sqlm.stageSubmitted(st.ID, st.Attempt)
		st.Status = "ACTIVE"
		return
	}
	st.CompleteMs = num(si, "Completion Time")
	st.Accumulators = userAccumulators(si.GetArray("Accumulables"))
	if f := strings.TrimRight(str(si, "Failure Reason"), "\n\t "); f != "" {
		st.Status = "FAILED"
		st.Failure = f
	} else {
		st.Status = "COMPLETE"
	}
}

func (b *builder) sqlExec(id int64) *SQLExecution {
	s := b.sql[id]
	if s == nil {
		s = &SQLExecution{ID: id}
		b.sql[id] = s
		b.app.SQL = append(b.app.SQL, s)
	}
	return s
}

// taskInfo fills t from a "Task Info" object.
func taskInfo(t *Task, ti *fastjson.Value) {
	t.ID = num(ti, "Task ID")
	t.Index = int(num(ti, "Index"))
	t.Attempt = int(num(ti, "Attempt"))
	t.Partition = -1
	if ti.Get("Partition ID") != nil {
		t.Partition = int(num(ti, "Partition ID"))
	}
	t.ExecutorID = str(ti, "Executor ID")
	t.Host = str(ti, "Host")
	t.Locality = str(ti, "Locality")
	t.Speculative = ti.GetBool("Speculative")
	t.LaunchMs = num(ti, "Launch Time")
	t.FetchStartMs = num(ti, "Getting Result Time")
	t.FinishMs = num(ti, "Finish Time")
	t.accums = taskAccumulables(t.accums[:0], ti.GetArray("Accumulables"))
}

// parseTaskStart reads a TaskStart event.
func parseTaskStart(v *fastjson.Value) (*Task, bool) {
	ti := v.Get("Task Info")
	if ti == nil {
		return nil, false
	}
	t := &Task{StageID: int(num(v, "Stage ID")), StageAttempt: int(num(v, "Stage Attempt ID")), Status: "RUNNING"}
	taskInfo(t, ti)
	return t, true
}

func (b *builder) addTaskStart(t *Task) {
	t.accums = nil // only a TaskEnd's are applied, and they share a batch's array
	b.tasks[t.ID] = t
	b.app.Tasks = append(b.app.Tasks, t)
	st := b.stage(t.StageID, t.StageAttempt)
	if st.FirstLaunchMs == 0 || t.LaunchMs < st.FirstLaunchMs {
		st.FirstLaunchMs = t.LaunchMs
	}
}

// parseTaskEnd reads a TaskEnd event into a task and its end reason class.
func parseTaskEnd(v *fastjson.Value) (*Task, string, bool) {
	ti := v.Get("Task Info")
	if ti == nil {
		return nil, "", false
	}
	t := &Task{StageID: int(num(v, "Stage ID")), StageAttempt: int(num(v, "Stage Attempt ID"))}
	taskInfo(t, ti)
	reason := v.Get("Task End Reason")
	cls := str(reason, "Reason")
	switch {
	case cls == "Success" || cls == "":
		t.Status = "SUCCESS"
	case cls == "TaskKilled" || ti.GetBool("Killed"):
		t.Status = "KILLED"
	default:
		t.Status = "FAILED"
	}
	if t.Status != "SUCCESS" {
		t.Reason = cls
		t.Message, t.TopFrame = endReason(cls, reason)
	}
	readMetrics(&t.Metrics, v.Get("Task Metrics"))
	return t, cls, true
}

// addTaskEnd records an ended task: the TaskEnd event carries everything
// its TaskStart did, so it replaces the started task's record.
func (b *builder) addTaskEnd(ended *Task, cls string) {
	t := b.tasks[ended.ID]
	if t == nil {
		b.rep.Orphans++
		t = &Task{}
		b.tasks[ended.ID] = t
		b.app.Tasks = append(b.app.Tasks, t)
	}
	*t = *ended
	b.sqlm.taskEnd(t)
	t.accums = nil

	app := b.app
	app.TaskCount++
	if t.Speculative {
		app.Speculation.Attempts++
		app.Speculation.TaskMs += t.DurationMs()
		if t.Status == "SUCCESS" {
			app.Speculation.Won++
		}
	}
	if t.Status != "SUCCESS" {
		app.FailedTaskCount++
		app.FailureReasons[cls]++
		if t.Status == "KILLED" {
			app.KilledTaskCount++
		}
	}
	st := b.stage(t.StageID, t.StageAttempt)
	st.TaskCount++
	if cls == "Resubmitted" {
		st.ResubmittedTaskCount++
	}
	switch t.Status {
	case "FAILED":
		st.FailedTaskCount++
	case "KILLED":
		st.KilledTaskCount++
	}
	st.Metrics.Add(&t.Metrics)
	if st.FirstLaunchMs == 0 || t.LaunchMs < st.FirstLaunchMs {
		st.FirstLaunchMs = t.LaunchMs
	}

	e := b.executor(t.ExecutorID)
	if e.Host == "" {
		e.Host = t.Host
	}
	e.TotalTasks++
	switch t.Status {
	case "SUCCESS":
		e.CompletedTasks++
	case "KILLED":
		e.KilledTasks++
	default:
		e.FailedTasks++
	}
	e.TotalDurationMs += t.DurationMs()
	e.TotalGCTimeMs += t.Metrics.GCTimeMs
	e.InputBytes += t.Metrics.InputBytes
	e.ShuffleRead += t.Metrics.ShuffleReadBytes()
	e.ShuffleWrite += t.Metrics.ShuffleWriteBytes
}

// endReason renders a task end reason as Spark's UI and tools show it
// (TaskEndReason.toErrorString) and, for an exception, its top frame.
func endReason(cls string, r *fastjson.Value) (msg, top string) {
	switch cls {
	case "ExceptionFailure":
		if st := r.GetArray("Stack Trace"); len(st) > 0 {
			f := st[0]
			top = fmt.Sprintf("%s.%s(%s:%d)", str(f, "Declaring Class"), str(f, "Method Name"), str(f, "File Name"), num(f, "Line Number"))
		}
		if full := str(r, "Full Stack Trace"); full != "" {
			return full, top
		}
		msg = str(r, "Class Name")
		if d := str(r, "Description"); d != "" {
			msg += ": " + d
		}
	case "FetchFailed":
		bm := r.Get("Block Manager Address")
		addr := "null"
		if bm != nil && bm.Type() == fastjson.TypeObject {
			addr = fmt.Sprintf("BlockManagerId(%s, %s, %d, None)", str(bm, "Executor ID"), str(bm, "Host"), num(bm, "Port"))
		}
		msg = fmt.Sprintf("FetchFailed(%s, shuffleId=%d, mapIndex=%d, mapId=%d, reduceId=%d, message=\n%s\n)",
			addr, num(r, "Shuffle ID"), num(r, "Map Index"), num(r, "Map ID"), num(r, "Reduce ID"), str(r, "Message"))
		return msg, top
	case "ExecutorLostFailure":
		behaviour := "unrelated to the running tasks"
		if r.GetBool("Exit Caused By App") {
			behaviour = "caused by one of the running tasks"
		}
		return fmt.Sprintf("ExecutorLostFailure (executor %s exited %s) Reason: %s",
			str(r, "Executor ID"), behaviour, str(r, "Loss Reason")), top
	case "TaskKilled":
		msg = "TaskKilled (" + str(r, "Kill Reason") + ")"
	case "Resubmitted":
		msg = "Resubmitted (resubmitted due to lost executor)"
	case "TaskResultLost":
		msg = "TaskResultLost (result lost from block manager)"
	case "TaskCommitDenied":
		msg = fmt.Sprintf("TaskCommitDenied (Driver denied task commit) for job: %d, partition: %d, attemptNumber: %d",
			num(r, "Job ID"), num(r, "Partition ID"), num(r, "Attempt Number"))
	default:
		msg = cls
	}
	return strings.TrimSpace(msg), top
}

// A metricField is a key of a "Task Metrics" object and where TaskMetrics
// keeps its number, or, for a key whose value is an object of numbers
// ("Input Metrics"), the fields of that object. readMetrics and the task
// event scanner both read task metrics by taskMetricFields.
type metricField struct {
	key    string
	field  func(*TaskMetrics) *int64 // nil for an object
	fields []metricField             // an object's numbers
}

// taskMetricFields are the keys of a "Task Metrics" object sparkprof
// reads, in the order Spark writes them.
var taskMetricFields = []metricField{
	{key: "Executor Deserialize Time", field: func(m *TaskMetrics) *int64 { return &m.DeserializeMs }},
	{key: "Executor Deserialize CPU Time", field: func(m *TaskMetrics) *int64 { return &m.DeserializeCPUNs }},
	{key: "Executor Run Time", field: func(m *TaskMetrics) *int64 { return &m.RunTimeMs }},
	{key: "Executor CPU Time", field: func(m *TaskMetrics) *int64 { return &m.CPUTimeNs }},
	{key: "Peak Execution Memory", field: func(m *TaskMetrics) *int64 { return &m.PeakExecutionMemory }},
	{key: "Result Size", field: func(m *TaskMetrics) *int64 { return &m.ResultSize }},
	{key: "JVM GC Time", field: func(m *TaskMetrics) *int64 { return &m.GCTimeMs }},
	{key: "Result Serialization Time", field: func(m *TaskMetrics) *int64 { return &m.ResultSerializationMs }},
	{key: "Memory Bytes Spilled", field: func(m *TaskMetrics) *int64 { return &m.MemorySpilled }},
	{key: "Disk Bytes Spilled", field: func(m *TaskMetrics) *int64 { return &m.DiskSpilled }},
	{key: "Shuffle Read Metrics", fields: []metricField{
		{key: "Remote Blocks Fetched", field: func(m *TaskMetrics) *int64 { return &m.ShuffleRemoteBlocks }},
		{key: "Local Blocks Fetched", field: func(m *TaskMetrics) *int64 { return &m.ShuffleLocalBlocks }},
		{key: "Fetch Wait Time", field: func(m *TaskMetrics) *int64 { return &m.ShuffleFetchWaitMs }},
		{key: "Remote Bytes Read", field: func(m *TaskMetrics) *int64 { return &m.ShuffleRemoteBytes }},
		{key: "Remote Bytes Read To Disk", field: func(m *TaskMetrics) *int64 { return &m.ShuffleRemoteToDisk }},
		{key: "Local Bytes Read", field: func(m *TaskMetrics) *int64 { return &m.ShuffleLocalBytes }},
		{key: "Total Records Read", field: func(m *TaskMetrics) *int64 { return &m.ShuffleReadRecords }},
	}},
	{key: "Shuffle Write Metrics", fields: []metricField{
		{key: "Shuffle Bytes Written", field: func(m *TaskMetrics) *int64 { return &m.ShuffleWriteBytes }},
		{key: "Shuffle Write Time", field: func(m *TaskMetrics) *int64 { return &m.ShuffleWriteTimeNs }},
		{key: "Shuffle Records Written", field: func(m *TaskMetrics) *int64 { return &m.ShuffleWriteRecords }},
	}},
	{key: "Input Metrics", fields: []metricField{
		{key: "Bytes Read", field: func(m *TaskMetrics) *int64 { return &m.InputBytes }},
		{key: "Records Read", field: func(m *TaskMetrics) *int64 { return &m.InputRecords }},
	}},
	{key: "Output Metrics", fields: []metricField{
		{key: "Bytes Written", field: func(m *TaskMetrics) *int64 { return &m.OutputBytes }},
		{key: "Records Written", field: func(m *TaskMetrics) *int64 { return &m.OutputRecords }},
	}},
}

// readMetrics fills m from a "Task Metrics" object of any Spark version.
func readMetrics(m *TaskMetrics, v *fastjson.Value) {
	if v != nil {
		readMetricFields(m, v, taskMetricFields)
	}
}

// readMetricFields fills the fields of m that fields name from object v: a
// number missing reads as 0, an object missing leaves its fields alone.
func readMetricFields(m *TaskMetrics, v *fastjson.Value, fields []metricField) {
	for _, f := range fields {
		if f.field != nil {
			*f.field(m) = num(v, f.key)
		} else if o := v.Get(f.key); o != nil {
			readMetricFields(m, o, f.fields)
		}
	}
}

// CountExecutors counts the executors other than the driver (App.ExecutorCount).
func CountExecutors(execs []*Executor) int {
	n := 0
	for _, e := range execs {
		if e.ID != "driver" {
			n++
		}
	}
	return n
}

// finish computes durations and orders the model.
func (b *builder) finish() *App {
	app := b.app
	if app.EndMs > 0 && app.StartMs > 0 {
		app.DurationMs = app.EndMs - app.StartMs
	}
	app.SQLCount = len(app.SQL)
	app.ExecutorCount = CountExecutors(app.Executors)
	for _, j := range app.Jobs {
		if j.EndMs > 0 && j.SubmitMs > 0 {
			j.DurationMs = j.EndMs - j.SubmitMs
		}
	}
	for _, st := range app.Stages {
		if st.JobID < 0 {
			if j, ok := b.stageJob[st.ID]; ok {
				st.JobID = j
			}
		}
		if st.SQLID < 0 && st.JobID >= 0 {
			st.SQLID = b.jobs[st.JobID].SQLID
		}
		if st.CompleteMs > 0 && st.SubmitMs > 0 {
			st.DurationMs = st.CompleteMs - st.SubmitMs
		}
	}
	b.sqlm.finish(app.SparkVersion)
	for _, s := range app.SQL {
		if s.EndMs > 0 && s.StartMs > 0 {
			s.DurationMs = s.EndMs - s.StartMs
		}
		setPlanMetrics(s.Plan, b.sqlm.done[s.ID])
	}
	sort.SliceStable(app.Jobs, func(i, j int) bool { return app.Jobs[i].ID < app.Jobs[j].ID })
	sort.SliceStable(app.Stages, func(i, j int) bool {
		a, c := app.Stages[i], app.Stages[j]
		if a.ID != c.ID {
			return a.ID < c.ID
		}
		return a.Attempt < c.Attempt
	})
	sort.SliceStable(app.SQL, func(i, j int) bool { return app.SQL[i].ID < app.SQL[j].ID })
	// Executors seen only through tasks or block managers (the driver in
	// local mode) stay; order: driver first, then by id.
	sort.SliceStable(app.Executors, func(i, j int) bool { return execLess(app.Executors[i].ID, app.Executors[j].ID) })
	return app
}

// execLess orders executor ids: driver first, then numerically.
func execLess(a, b string) bool {
	if a == "driver" || b == "driver" {
		return a == "driver" && b != "driver"
	}
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}
