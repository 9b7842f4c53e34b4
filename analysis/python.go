package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// PythonUDFEvidence is a python-udf finding's: the SQL operator that ran
// Python UDFs in a stage, the time its Python workers spent against the
// stage's task time, and the data it moved to and from them. Its metrics
// are those Spark 3.4 and later give the operator.
type PythonUDFEvidence struct {
	StageRef
	SQLID    int64    `json:"sqlId"`
	Operator string   `json:"operator"` // BatchEvalPython, ArrowEvalPython, ...
	UDFs     []string `json:"udfs"`
	// Arrow says that rows go to Python in Arrow batches; else they are
	// pickled one by one.
	Arrow bool `json:"arrow"`
	// PythonMs is the time the workers spent executing Python code;
	// StartupMs the time to start and initialize them. Before Spark 4,
	// which gives no such time, PythonMs is estimated (Estimated): the
	// stage's task time off the JVM's CPU, less GC, which is mostly the
	// task threads waiting on their Python workers.
	PythonMs  int64 `json:"pythonMs"`
	Estimated bool  `json:"estimated,omitempty"`
	// Sampled says that PythonMs is the workers' time serving the stage's
	// tasks from their samples (the agent's Python sampling), which
	// replaces an estimate.
	Sampled       bool    `json:"sampled,omitempty"`
	StartupMs     int64   `json:"startupMs"`
	TaskMs        int64   `json:"taskMs"`
	Share         float64 `json:"share"`
	SentBytes     int64   `json:"sentBytes"`
	ReturnedBytes int64   `json:"returnedBytes"`
	// WorkerReuse is spark.python.worker.reuse as the app set it ("" when
	// it did not: true).
	WorkerReuse string `json:"workerReuse,omitempty"`
}

func (*PythonUDFEvidence) evidence() {}

// The names of the SQL metrics of a Python operator, as Spark gives them.
const (
	pyExecMetric     = "time to execute Python code"
	pyStartMetric    = "time to start Python workers"
	pyInitMetric     = "time to initialize Python workers"
	pySentMetric     = "data sent to Python workers"
	pyReturnedMetric = "data returned from Python workers"
)

// udfNames returns the Python UDFs an operator's description calls: the
// calls of its first list, "BatchEvalPython [slow_parse(concat(a, b)#2),
// tidy(c#3)#4], [pythonUDF0#5, pythonUDF1#6]" → slow_parse, tidy.
func udfNames(detail string) []string {
	open := strings.IndexByte(detail, '[')
	if open < 0 {
		return nil
	}
	var names []string
	depth, start := 0, open+1
	for i := open + 1; i < len(detail); i++ {
		switch detail[i] {
		case '(', '[':
			depth++
		case ')':
			depth--
		case ']':
			if depth == 0 {
				return appendCall(names, detail[start:i])
			}
			depth--
		case ',':
			if depth == 0 {
				names = appendCall(names, detail[start:i])
				start = i + 1
			}
		}
	}
	return names
}

// appendCall appends the function item calls, if it is a call.
func appendCall(names []string, item string) []string {
	item = strings.TrimSpace(item)
	if i := strings.IndexByte(item, '('); i > 0 && !slices.Contains(names, item[:i]) {
		return append(names, item[:i])
	}
	return names
}

// pythonUDFRule finds, for each SQL operator that ran Python UDFs, the
// stage where its workers spent a large share of the task time executing
// Python, and says what would make it cheaper: built-in functions, Arrow
// instead of pickled rows, workers reused.
func pythonUDFRule(a *appFacts, th Thresholds) []Finding {
	var out []Finding
	reuse := workerReuse(a.App)
	for _, sql := range a.App.SQL {
		sql.Plan.Walk(func(n *spark.PlanNode) {
			ev, stage, ok := pythonEvidence(a, sql, n)
			if !ok || ev.PythonMs < th.PythonMinMs || ev.Share < th.PythonShare {
				return
			}
			ev.WorkerReuse = reuse
			out = append(out, pythonFinding(stage, ev))
		})
	}
	return out
}

// pythonEvidence measures a Python operator of a SQL execution in the
// stage where its workers ran longest, and returns that stage.
func pythonEvidence(a *appFacts, sql *spark.SQLExecution, n *spark.PlanNode) (*PythonUDFEvidence, int, bool) {
	metric := func(name string) *spark.PlanMetric {
		for _, m := range n.Metrics {
			if m.Name == name {
				return m
			}
		}
		return nil
	}
	exec, sent := metric(pyExecMetric), metric(pySentMetric)
	at := exec
	if at == nil || !at.Known {
		at = sent // Spark 3.4 and 3.5: data sizes only
	}
	if at == nil || !at.Known || at.MaxAt == nil {
		return nil, 0, false
	}
	ev := &PythonUDFEvidence{SQLID: sql.ID, Operator: n.Name, Arrow: strings.Contains(n.Name, "Arrow") || strings.Contains(n.Name, "Pandas")}
	stage := at.MaxAt.Stage
	ev.StageAttempt = at.MaxAt.Attempt
	for _, name := range []string{pyStartMetric, pyInitMetric} {
		if m := metric(name); m != nil {
			ev.StartupMs += m.Total
		}
	}
	if sent != nil {
		ev.SentBytes = sent.Total
	}
	if m := metric(pyReturnedMetric); m != nil {
		ev.ReturnedBytes = m.Total
	}
	var offCPUMs int64
	for _, t := range a.byStage[[2]int{stage, ev.StageAttempt}] {
		ev.TaskMs += t.DurationMs()
		m := &t.Metrics
		offCPUMs += max(m.RunTimeMs-m.CPUTimeNs/1e6-m.GCTimeMs, 0)
	}
	if ev.TaskMs <= 0 {
		return nil, 0, false
	}
	if exec != nil && exec.Known {
		ev.PythonMs = exec.Total
	} else {
		ev.PythonMs, ev.Estimated = offCPUMs, true
	}
	ev.UDFs = udfNames(n.Detail)
	for _, st := range a.App.Stages {
		if st.ID == stage && st.Attempt == ev.StageAttempt {
			ev.StageName = st.Name
		}
	}
	ev.Share = round2(float64(ev.PythonMs) / float64(ev.TaskMs))
	return ev, stage, true
}

// pythonFinding words the finding of a Python operator in a stage.
func pythonFinding(stage int, ev *PythonUDFEvidence) Finding {
	udfs := strings.Join(ev.UDFs, ", ")
	if udfs == "" {
		udfs = "its Python UDFs"
	}
	how := "rows pickled one by one"
	if ev.Arrow {
		how = "Arrow batches"
	}
	executing := "executing Python"
	switch {
	case ev.Sampled:
		executing = "in Python (the workers' samples)"
	case ev.Estimated:
		executing = "waiting on Python (task time off the JVM's CPU)"
	}
	msg := fmt.Sprintf("stage %d: Python UDF %s: %s %s, %.0f%% of the stage's %s task time (%s: %s, %s sent to the Python workers and %s returned)",
		stage, udfs, english.Millis(ev.PythonMs), executing, 100*ev.Share, english.Millis(ev.TaskMs), ev.Operator, how,
		english.Bytes(ev.SentBytes), english.Bytes(ev.ReturnedBytes))
	var do []string
	if !ev.Arrow {
		do = append(do, fmt.Sprintf("make %s a pandas_udf, or pass useArrow=True (Spark 3.5+), or set spark.sql.execution.arrow.pyspark.enabled: "+
			"Arrow moves the %s in column batches instead of pickling each row, and pandas runs a batch at a time", udfs,
			english.Bytes(ev.SentBytes+ev.ReturnedBytes)))
	}
	do = append(do, "where pyspark.sql.functions has the operation, use it: built-in functions run in the JVM, with no Python worker at all")
	if ev.WorkerReuse == "false" {
		do = append(do, fmt.Sprintf("spark.python.worker.reuse is false: each task starts its workers (%s starting them here); set it back to true", english.Millis(ev.StartupMs)))
	}
	return Finding{Kind: KindPythonUDF, Severity: Warning, StageID: intp(stage), Message: msg,
		Suggestion: strings.Join(do, "; "), Evidence: ev, score: float64(ev.PythonMs)}
}

// WithPython returns findings with what py, the Python workers' time
// from their samples, adds (findings itself is not changed):
//   - a python-udf finding whose Python time is an estimate (before Spark
//     4) gets the time its stage's workers spent serving tasks after
//     setting them up instead, and is dropped when that falls short of th;
//   - python-serialization findings (pythonSerializationFindings);
//   - python-startup findings (pythonStartupFindings).
func WithPython(findings []Finding, py *PythonTime, app *spark.App, th Thresholds) []Finding {
	if py == nil {
		return findings
	}
	out := make([]Finding, 0, len(findings))
	for _, f := range findings {
		if s, ok := sampledUDF(f, py); ok {
			if s.PythonMs < th.PythonMinMs || s.Share < th.PythonShare {
				continue
			}
			sf := pythonFinding(*f.StageID, s)
			sf.Severity = f.Severity
			f = sf
		}
		out = append(out, f)
	}
	out = append(out, pythonSerializationFindings(py, app, out, th)...)
	out = append(out, pythonStartupFindings(py, app, out, th)...)
	byImportance(out)
	return out
}

// sampledUDF returns the evidence of f, a python-udf finding whose Python
// time is an estimate, with its stage's sampled time instead, if py has
// it.
func sampledUDF(f Finding, py *PythonTime) (*PythonUDFEvidence, bool) {
	ev, ok := f.Evidence.(*PythonUDFEvidence)
	if !ok || !ev.Estimated || f.StageID == nil {
		return nil, false
	}
	j := slices.IndexFunc(py.Stages, func(s StagePython) bool { return s.StageID == *f.StageID })
	if j < 0 || py.Stages[j].ServingMs == 0 {
		return nil, false
	}
	sampled := *ev
	st := py.Stages[j]
	sampled.PythonMs, sampled.Estimated, sampled.Sampled = st.ServingMs-st.SetupMs-st.ImportCachesMs, false, true
	sampled.Share = round2(share(sampled.PythonMs, sampled.TaskMs))
	return &sampled, true
}
