package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/browsertest"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/sparktest"
)

var (
	agentBuild    sync.Once
	agentBuildOut []byte
	agentBuildErr error
)

// buildAgent builds the agent jar once per test process.
func buildAgent() ([]byte, error) {
	agentBuild.Do(func() {
		agentBuildOut, agentBuildErr = exec.Command("../../agent/build.sh").CombinedOutput()
	})
	return agentBuildOut, agentBuildErr
}

// planted is one planted cause: the job whose description names it, and
// what must be found on that job's last stage.
type planted struct {
	cause string
	// found reports whether the stage's findings and the app's
	// recommendations name the cause; profiles says whether the report had
	// the app's profiles (the server's) or the event log alone (analyze's).
	found func(stage int, fs []finding, rep appReport, profiles bool) bool
	// kinds are the finding kinds and patterns the cause may raise (on its
	// own stage only); unprofiled those it may raise besides in a report
	// without profiles, where the event log alone cannot tell it from
	// another.
	kinds, unprofiled []string
}

// verdictOn returns the stage finding on stage, of warning or critical
// severity.
func verdictOn(stage int, fs []finding) *finding {
	for i, f := range fs {
		if f.StageID != nil && *f.StageID == stage && f.Severity != "info" {
			return &fs[i]
		}
	}
	return nil
}

// evidence decodes a finding's evidence.
func evidence(f *finding) map[string]any {
	var m map[string]any
	json.Unmarshal(f.Evidence, &m)
	return m
}

func recommendedOn(pattern string, stage int, rep appReport) bool {
	for _, r := range rep.Recommendations {
		if r.Pattern == pattern && (r.StageID == nil || *r.StageID == stage) {
			return true
		}
	}
	return false
}

var plantedCauses = []planted{
	{"python-udf", func(_ int, fs []finding, rep appReport, _ bool) bool {
		// The UDF runs in the first stage of the job's query, not its last.
		for _, f := range fs {
			if f.Kind == "python-udf" && f.StageID != nil && jobOfStage(rep, *f.StageID) == "planted:python-udf" &&
				strings.Contains(f.Message, "slow_parse") {
				return true
			}
		}
		return false
	}, []string{"python-udf", "boxing"}, nil}, // the JVM boxes each value it pickles for the UDF
	{"pandas-udf", func(_ int, fs []finding, rep appReport, _ bool) bool {
		for _, f := range fs {
			if f.Kind == "python-udf" && f.StageID != nil && jobOfStage(rep, *f.StageID) == "planted:pandas-udf" &&
				strings.Contains(f.Message, "slow_score") && strings.Contains(f.Message, "Arrow batches") {
				return true
			}
		}
		return false
	}, []string{"python-udf"}, nil},
	{"python-serialization", func(_ int, fs []finding, rep appReport, profiles bool) bool {
		// Both stages of the job move the records: the map side pickles
		// them into the shuffle, the reduce side reads and unpickles them.
		// Only the workers' samples show it.
		if !profiles {
			return true
		}
		n := 0
		for _, f := range fs {
			if f.Kind == "python-serialization" && f.StageID != nil && jobOfStage(rep, *f.StageID) == "planted:python-serialization" {
				n++
			}
		}
		return n > 0
	}, []string{"python-serialization", "python-wait"}, nil}, // the JVM waits on the workers' stream
	{"python-startup", func(_ int, fs []finding, rep appReport, profiles bool) bool {
		// Only the samples measure it: Spark 4's metrics count a reused
		// worker's wait for its task as its initialisation.
		if !profiles {
			return true
		}
		for _, f := range fs {
			if f.Kind == "python-startup" && f.StageID != nil && jobOfStage(rep, *f.StageID) == "planted:python-startup" &&
				strings.Contains(f.Suggestion, "broadcast") {
				return true
			}
		}
		return false
	}, []string{"python-startup", "python-wait"}, []string{"python-udf"}}, // Spark 3.5's estimate of a UDF's time, from task time off CPU
	{"straggler", func(stage int, fs []finding, _ appReport, profiles bool) bool {
		f := verdictOn(stage, fs)
		if f == nil || f.Kind != "straggler" {
			return false
		}
		if !profiles {
			return true
		}
		p, _ := evidence(f)["profile"].(map[string]any)
		code, _ := p["code"].(string)
		return strings.Contains(code, "slowPartition")
	}, []string{"straggler"}, nil},
	{"skew", func(stage int, fs []finding, _ appReport, _ bool) bool {
		f := verdictOn(stage, fs)
		return f != nil && (f.Kind == "skew" || f.Kind == "straggler" && evidence(f)["cause"] == "skew")
	}, []string{"skew", "straggler"}, nil},
	{"few-tasks", func(stage int, fs []finding, _ appReport, _ bool) bool {
		f := verdictOn(stage, fs)
		return f != nil && f.Kind == "too-few-tasks"
	}, []string{"too-few-tasks", "straggler"}, nil},
	{"regex", func(stage int, _ []finding, rep appReport, profiles bool) bool {
		return !profiles || recommendedOn("regex-compile", stage, rep)
	},
		[]string{"regex-compile"}, nil},
	{"exceptions", func(stage int, _ []finding, rep appReport, profiles bool) bool {
		return !profiles || recommendedOn("exceptions", stage, rep)
	},
		[]string{"exceptions"}, nil},
	{"gc", func(stage int, fs []finding, _ appReport, _ bool) bool {
		f := verdictOn(stage, fs)
		return f != nil && f.Kind == "gc"
	}, []string{"gc", "alloc-hotspots", "boxing"}, nil},
	{"spill", func(stage int, fs []finding, _ appReport, _ bool) bool {
		f := verdictOn(stage, fs)
		return f != nil && f.Kind == "spill"
	}, []string{"spill", "boxing"}, nil}, // its map(kv -> kv._2.length()) boxes each length
}

// checkPlanted checks the app's report on the server (its page's) and
// analyze's on its event log alone.
func checkPlanted(t *testing.T, e realSpark, app string, causes ...string) {
	t.Helper()
	var rep appReport
	e.get(t, "/api/v1/apps/"+app, &rep)
	t.Run("app page", func(t *testing.T) { checkPlantedReport(t, rep, true, causes) })
	args := []string{"analyze", "--json"}
	for name, v := range plantedThresholds {
		args = append(args, "--"+name+"="+v)
	}
	// Spark 4 writes a rolling log directory, eventlog_v2_APP, by default.
	logs, _ := filepath.Glob(filepath.Join(e.eventDir, "*"+app+"*"))
	if len(logs) != 1 {
		t.Fatalf("event logs of %s in %s: %v", app, e.eventDir, logs)
	}
	cmd := exec.Command(e.bin, append(args, logs[0])...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("analyze %s: %v\n%s", logs[0], err, stderr.String())
	}
	var arep appReport
	if err := json.Unmarshal(out, &arep); err != nil {
		t.Fatalf("analyze --json: %v", err)
	}
	t.Run("analyze", func(t *testing.T) { checkPlantedReport(t, arep, false, causes) })
}

// checkPlantedReport checks a report: each planted cause named on its
// job's last stage, and no finding (warning or critical) nor
// recommendation that the job does not have. The warm-up job's stages,
// whose first tasks load the executors' classes, are left out. Without
// profiles, the causes only profiles show are not looked for.
func checkPlantedReport(t *testing.T, rep appReport, profiles bool, causes []string) {
	t.Helper()
	stageOf := map[string]int{} // cause → its job's last stage
	causeOf := map[int]string{} // stage → its job's cause
	for _, j := range rep.Jobs {
		cause, ok := strings.CutPrefix(j.Description, "planted:")
		if j.Description == "warm-up" {
			cause, ok = "warm-up", true
		}
		if !ok {
			continue
		}
		for _, s := range rep.Stages {
			if s.JobID == j.JobID {
				causeOf[s.StageID] = cause
				if s.StageID > stageOf[cause] || stageOf[cause] == 0 {
					stageOf[cause] = s.StageID
				}
			}
		}
	}
	for _, f := range rep.Findings {
		t.Logf("finding: [%s] %s: %s", f.Severity, f.Kind, f.Message)
	}
	for _, r := range rep.Recommendations {
		t.Logf("recommendation: %s on %s: %s", r.Pattern, stageName(r.StageID), r.Message)
	}
	allowed := map[string]map[string]bool{} // cause → kinds
	for _, c := range causes {
		var p *planted
		for i := range plantedCauses {
			if plantedCauses[i].cause == c {
				p = &plantedCauses[i]
			}
		}
		stage, ok := stageOf[c]
		if p == nil || !ok {
			t.Fatalf("no job planted:%s in the app", c)
		}
		allowed[c] = map[string]bool{}
		for _, k := range p.kinds {
			allowed[c][k] = true
		}
		for _, k := range p.unprofiled {
			allowed[c][k] = !profiles
		}
		if !p.found(stage, rep.Findings, rep, profiles) {
			t.Errorf("planted %s: not named on stage %d", c, stage)
		}
	}
	for _, f := range rep.Findings {
		if f.StageID == nil || f.Severity == "info" {
			continue
		}
		if c := causeOf[*f.StageID]; c != "warm-up" && !allowed[c][f.Kind] {
			t.Errorf("false finding on stage %d (job planted:%s): [%s] %s: %s", *f.StageID, c, f.Severity, f.Kind, f.Message)
		}
	}
	for _, r := range rep.Recommendations {
		c := ""
		if r.StageID != nil {
			c = causeOf[*r.StageID]
		}
		ok := false
		for _, cc := range causes {
			if allowed[cc][r.Pattern] && (c == "" || c == cc) {
				ok = true
			}
		}
		if !ok && c != "warm-up" {
			t.Errorf("false recommendation %s on %s (job planted:%s)", r.Pattern, stageName(r.StageID), c)
		}
	}
}

func sparkPlanted(t *testing.T, e realSpark) {
	// Kryo: Java serialization of the records would be a cause of its own.
	r := e.run(t, e.job("planted", map[string]string{"spark.serializer": "org.apache.spark.serializer.KryoSerializer"}))
	app := r.App(t)
	noAgentErrors(t, r)
	checkSources(t, e, app, 0)
	a := measureAttribution(t, e, app)
	t.Logf("Spark %s attribution of task-thread CPU: %v", e.spark.Version, a)
	if a.wrong > 0 || float64(a.correct) < 0.99*float64(a.correct+a.wrong+a.unattributed) {
		t.Errorf("attribution: %v; want at least 99%% correct and none misattributed", a)
	}
	checkPlanted(t, e, app, "straggler", "skew", "few-tasks", "regex", "exceptions")
	// The straggler's flame graph shows the planted function.
	var rep appReport
	e.get(t, "/api/v1/apps/"+app, &rep)
	for _, f := range rep.Findings {
		prof, _ := evidence(&f)["profile"].(map[string]any)
		if code, _ := prof["code"].(string); f.Kind != "straggler" || !strings.Contains(code, "slowPartition") {
			continue
		}
		var top struct {
			Functions []struct{ Name string }
		}
		if f.TaskID == nil {
			t.Fatalf("the straggler finding names no task: %s", f.Message)
		}
		task := strconv.FormatInt(*f.TaskID, 10)
		e.get(t, "/api/v1/top?"+url.Values{"query": {sel(app, `spark_task_id="`+task+`"`)}, "type": {"cpu"}, "n": {"0"}}.Encode(), &top)
		seen := false
		for _, fn := range top.Functions {
			seen = seen || strings.Contains(fn.Name, "slowPartition")
		}
		if !seen {
			t.Errorf("the straggler task %v's flame graph has no slowPartition", task)
		}
	}
}

func sparkPlantedMemory(t *testing.T, e realSpark) {
	// The sort spills as a sort of more data than its memory does, at a
	// hundredth of the size: Spark's own threshold of records makes it.
	r := e.run(t, e.job("planted-memory", map[string]string{
		"spark.serializer": "org.apache.spark.serializer.KryoSerializer",
		"spark.shuffle.spill.numElementsForceSpillThreshold": "20000",
	}))
	checkPlanted(t, e, r.App(t), "gc", "spill")
}

// sparkShortJob: a job of a few seconds, with an upload interval longer
// than the whole app, still ships its one window from every JVM at
// shutdown.
func sparkShortJob(t *testing.T, e realSpark) {
	r := e.run(t, e.job("short", map[string]string{"spark.sparkprof.uploadInterval": "10m"}))
	app := r.App(t)
	noAgentErrors(t, r)
	checkSources(t, e, app, 1)
	if n := ticks(t, e.base, e.tenant(), sel(app, `thread_pool="task"`), "cpu"); n == 0 {
		t.Error("no task-thread CPU samples of the short job")
	}
}

// sparkJavaagent: the agent as -javaagent on the driver and the executors
// gives the labels the plugin gives, and the driver's one window arrives
// even when the JVM's exit ends it (the Flight Recorder's own shutdown
// hook writes it for the agent).
func sparkJavaagent(t *testing.T, e realSpark) {
	opt := "-javaagent:" + e.agentJar + "=server=" + e.base + ",uploadInterval=10m,stopWait=30s"
	j := e.job("short", map[string]string{"spark.plugins": "", "spark.sparkprof.server": ""})
	j.DriverJavaOptions, j.ExecutorJavaOptions, j.Jars = opt, opt, nil
	r := e.run(t, j)
	app := r.App(t)
	noAgentErrors(t, r)
	checkSources(t, e, app, 1)
	var names []string
	e.get(t, "/api/v1/label-values?"+url.Values{"name": {"service_name"}, "query": {sel(app)}}.Encode(), &names)
	if len(names) != 1 || names[0] != "sparkprof-short" {
		t.Errorf("service names %v; want the app's name, sparkprof-short, as the plugin gives", names)
	}
	if n := ticks(t, e.base, e.tenant(), sel(app, `thread_pool="task"`), "cpu"); n == 0 {
		t.Error("no task-thread CPU samples")
	}
}

// sparkAsyncProfiler: the agent's async-profiler mode, with async-profiler's
// own library as Maven Central serves it, records the driver's and the
// executors' samples in a real job, and their task-thread CPU samples are
// attributed to their tasks as the Flight Recorder's are.
func sparkAsyncProfiler(t *testing.T, e realSpark) {
	lib := senderFile(t, "libasyncProfiler-*.so")
	r := e.run(t, e.job("short", map[string]string{"spark.sparkprof.asyncProfiler": lib}))
	app := r.App(t)
	noAgentErrors(t, r)
	for who, l := range runLogs(r) {
		if !strings.Contains(l, "async-profiler "+lib+" records the samples") || strings.Contains(l, "cannot be used") {
			t.Errorf("%s: async-profiler did not record the samples:\n%s", who, l)
		}
	}
	checkSources(t, e, app, 1)
	a := measureAttribution(t, e, app)
	t.Logf("Spark %s attribution of task-thread CPU recorded by async-profiler: %v", e.spark.Version, a)
	if a.wrong > 0 || float64(a.correct) < 0.99*float64(a.correct+a.wrong+a.unattributed) {
		t.Errorf("attribution: %v; want at least 99%% correct and none misattributed", a)
	}
}

// sparkPySparkPlanted: a PySpark job's slow row-at-a-time Python UDF,
// slow_parse, is named on the stage that ran it, by the server and by
// analyze of the event log alone, and nothing is said of a job with no
// Python. The executors sample their Python workers with py-spy: the
// workers' samples are attributed to the tasks that ran, and slow_parse
// is where the UDF's stage spent its Python time.
func sparkPySparkPlanted(t *testing.T, e realSpark) {
	// Windows of 2 s: the UDF's stage is shipped while the job runs, not
	// only in the executors' last windows, which their end can cut short.
	r, app := e.runPySpark(t, "planted.py", "", "2s")
	for who, l := range runLogs(r) {
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, "[sparkprof]") && strings.Contains(line, "Python") {
				t.Logf("%s: %s", who, line)
			}
		}
	}
	checkPlanted(t, e, app, "python-udf", "pandas-udf", "python-serialization", "python-startup")
	served := checkPythonSamples(t, e, app)
	checkPythonTime(t, e, app, served)
}

// runPySpark runs a PySpark job of internal/sparktest/jobs/pyspark on
// master ("": the harness's), its executors sampling their Python
// workers in windows of window, and waits for the server to have it.
func (e realSpark) runPySpark(t *testing.T, script, master, window string) (*sparktest.Run, string) {
	t.Helper()
	j := e.job("", map[string]string{"spark.sparkprof.python": "true", "spark.sparkprof.pySpy": filepath.Join(pyTools(t), "py-spy"),
		"spark.sparkprof.uploadInterval": window})
	j.Class, j.Args, j.Jar, j.Master = "", nil, sparktest.PythonJob(t, script), master
	r := e.spark.Start(t, j)
	r.Wait(t)
	if !strings.Contains(r.Log, "JOBS DONE ") {
		t.Fatalf("the PySpark job %s did not finish:\n%s", script, r.Log)
	}
	app := r.App(t)
	e.waitFinished(t, app)
	noAgentErrors(t, r)
	return r, app
}

// sparkPySparkSlots: on an executor of two task slots, whose Python
// workers serve two tasks at once, each worker's samples are attributed
// to the task it served: the agent finds which worker serves which task
// in Spark's Python runner. Partition k's task runs part_k, so a sample's
// stack says its partition. A stretch of serving that a window cuts at
// both ends (a task longer than a window) gets its stage alone, so the
// tasks, of 1 to 4 s, are shorter than the windows, of 5 s: a 6 s task
// once held a whole window, a third of the job's Python time.
func sparkPySparkSlots(t *testing.T, e realSpark) {
	r, app := e.runPySpark(t, "slots.py", "local-cluster[1,2,1024]", "5s")
	if l := r.ExecutorLogs["0"]; !strings.Contains(l, "[sparkprof] Python worker ") {
		t.Errorf("the executor's log does not say that the agent found a Python worker's task:\n%s", l)
	}
	var res verdicts
	var parts [4]verdicts
	for k := range parts {
		var bd struct {
			Rows []struct {
				Keys  []string
				Value int64
			}
		}
		e.get(t, "/api/v1/breakdown?"+url.Values{"query": {sel(app)}, "type": {"wall"}, "focus": {partFocus(k)},
			"by": {"spark_partition,spark_task_id"}}.Encode(), &bd)
		for _, row := range bd.Rows {
			switch {
			case row.Keys[1] == "":
				parts[k].unattributed += row.Value
			case row.Keys[0] != strconv.Itoa(k):
				t.Logf("part_%d: %s labelled partition %s, task %s", k, english.Millis(row.Value/1e6), row.Keys[0], row.Keys[1])
				parts[k].wrong += row.Value
			default:
				parts[k].correct += row.Value
			}
		}
		res.correct, res.wrong, res.unattributed = res.correct+parts[k].correct, res.wrong+parts[k].wrong, res.unattributed+parts[k].unattributed
	}
	t.Logf("Spark %s attribution of two slots' Python time to tasks: %v", e.spark.Version, res)
	if total := res.correct + res.wrong + res.unattributed; total == 0 || float64(res.correct) < 0.9*float64(total) ||
		float64(res.wrong) > 0.01*float64(total) {
		logSlotsTimeline(t, e, app, parts)
		t.Errorf("attribution of two slots' Python time: %v; want at least 90%% to its task, at most 1%% to another", res)
	}
}

// partFocus selects the frames of slots.py's part_k.
func partFocus(k int) string { return `slots\.py:part_` + strconv.Itoa(k) + `$` }

// logSlotsTimeline logs, for a failed sparkPySparkSlots, when each part's
// Python time fell and which task it went to, beside the tasks' times as
// the event log has them, from the first task's launch.
func logSlotsTimeline(t *testing.T, e realSpark, app string, parts [4]verdicts) {
	var a eventLogApp
	e.get(t, "/api/v1/apps/"+app, &a)
	var t0 int64
	for _, task := range a.Tasks {
		if t0 == 0 || task.LaunchMs < t0 {
			t0 = task.LaunchMs
		}
	}
	for _, task := range a.Tasks {
		t.Logf("task %d of stage %d: %d–%d ms", task.TaskID, task.StageID, task.LaunchMs-t0, task.FinishMs-t0)
	}
	for k, p := range parts {
		var ans struct {
			Series []struct {
				Key    string
				Points [][2]int64
			}
		}
		e.get(t, "/api/v1/series?"+url.Values{"query": {sel(app)}, "type": {"wall"}, "focus": {partFocus(k)},
			"by": {"spark_task_id"}, "step": {"100ms"}}.Encode(), &ans)
		t.Logf("part_%d: %v", k, p)
		for _, sr := range ans.Series {
			var b strings.Builder
			for _, pt := range sr.Points {
				fmt.Fprintf(&b, " %d:%d", pt[0]-t0, pt[1]/1e6)
			}
			t.Logf("  task %q, ms from the first launch:ms of wall time:%s", sr.Key, b.String())
		}
	}
}

// checkPythonTime checks the app's Python time on its page: the workers'
// time serving tasks is what their samples say (served, ms), the UDF's
// stage's is in slow_parse first, and no stage of the job with no Python
// has any.
func checkPythonTime(t *testing.T, e realSpark, app string, served int64) {
	var rep struct {
		appReport
		Python *analysis.PythonTime `json:"python"`
	}
	e.get(t, "/api/v1/apps/"+app, &rep)
	py := rep.Python
	if py == nil || len(py.Stages) == 0 {
		t.Fatalf("the app's page has no Python time: %+v", py)
	}
	t.Logf("Python time: %d ms serving tasks, %.0f%% of the %d ms of task time; %d ms waiting for a task", py.ServingMs, 100*py.Share, py.TaskMs, py.WaitingMs)
	for _, s := range py.Stages {
		t.Logf("Python time in stage %d: %d ms, %.0f%% of its %d ms (%d ms setting up tasks, %d ms moving records); functions %v",
			s.StageID, s.ServingMs, 100*s.Share, s.TaskMs, s.SetupMs, s.SerializationMs, s.Functions)
		if job := jobOfStage(rep.appReport, s.StageID); job == "planted:none" {
			t.Errorf("stage %d of the job with no Python has %d ms of Python time", s.StageID, s.ServingMs)
		}
	}
	if d := py.ServingMs - served; d < -int64(len(py.Stages))-1 || d > int64(len(py.Stages))+1 {
		t.Errorf("the page's Python time serving tasks is %d ms; the samples say %d ms", py.ServingMs, served)
	}
	want := findingStage(t, e, app, "python-udf", "planted:python-udf")
	i := slices.IndexFunc(py.Stages, func(s analysis.StagePython) bool { return strconv.Itoa(s.StageID) == want })
	if i < 0 {
		t.Fatalf("the UDF's stage %s has no Python time", want)
	}
	top := py.Stages[i]
	if len(top.Functions) == 0 || !strings.HasSuffix(top.Functions[0].Name, ":slow_parse") {
		t.Errorf("the UDF's stage's first Python functions are %v, want slow_parse", top.Functions)
	}
	if top.Share < 0.2 || top.Share > 1.2 {
		t.Errorf("the UDF's stage's Python time is %.2f of its task time; want between 0.2 and 1.2", top.Share)
	}
	// The pandas UDF's time is in the function it maps over each value.
	pandas := findingStage(t, e, app, "python-udf", "planted:pandas-udf")
	if i := slices.IndexFunc(py.Stages, func(s analysis.StagePython) bool { return strconv.Itoa(s.StageID) == pandas }); i < 0 {
		t.Errorf("the pandas UDF's stage %q has no Python time", pandas)
	} else if fs := py.Stages[i].Functions; len(fs) == 0 || !strings.HasSuffix(fs[0].Name, ":slow_hash") {
		t.Errorf("the pandas UDF's stage's first Python functions are %v, want slow_hash", fs)
	}
	checkPythonPages(t, e, app, top.StageID)
}

// checkPythonPages opens the app's page and its UDF stage's in headless
// Chromium: the app's Python section lists the stage with slow_parse, and
// the stage's facts give its Python time.
func checkPythonPages(t *testing.T, e realSpark, app string, stage int) {
	ctx, problems := browsertest.Start(t)
	page := e.base + "/#/apps/" + url.PathEscape(app)
	if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitReady(`[data-testid="python-stages"]`)); err != nil {
		t.Fatalf("the app's page has no Python section: %v", err)
	}
	row := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll('[data-testid="python-stages"] tbody tr')].
		map((r) => r.innerText).find((r) => r.split('\t')[0].trim() === '`+strconv.Itoa(stage)+`') || ''`)
	if !strings.Contains(row, "slow_parse") {
		t.Errorf("the app page's Python row of stage %d is %q; want slow_parse in it", stage, row)
	}
	stagePage := fmt.Sprintf("%s/#/apps/%s/stages/%d", e.base, url.PathEscape(app), stage)
	if err := chromedp.Do(ctx, chromedp.Navigate(stagePage), chromedp.WaitReady(`[data-testid="stage-python"]`)); err != nil {
		t.Fatalf("stage %d's page gives no Python time: %v", stage, err)
	}
	fact := browsertest.Eval[string](t, ctx, `document.querySelector('[data-testid="stage-python"]').innerText`)
	t.Logf("stage %d's page: %s", stage, fact)
	if !strings.Contains(fact, "slow_parse") {
		t.Errorf("stage %d's Python fact %q does not name slow_parse", stage, fact)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the pages reported %v", p)
	}
}

// checkPythonSamples checks the samples of an app's Python workers: each
// labelled with a task is labelled with one its executor ran then, most
// are labelled with one, and slow_parse takes most of the Python time of
// the UDF's stage and none of any other. It returns the workers' time
// serving tasks, in ms.
func checkPythonSamples(t *testing.T, e realSpark, app string) int64 {
	var a eventLogApp
	e.get(t, "/api/v1/apps/"+app, &a)
	type run struct {
		exec  string
		stage int
	}
	tasks := map[string]run{}
	for _, x := range a.Tasks {
		tasks[strconv.FormatInt(x.TaskID, 10)] = run{x.ExecutorID, x.StageID}
	}
	var bd struct {
		Total int64
		Rows  []struct {
			Keys  []string
			Value int64
		}
	}
	e.get(t, "/api/v1/breakdown?"+url.Values{"query": {sel(app)}, "type": {"wall"}, "focus": {`worker\.py:main$`},
		"by": {"spark_executor_id,spark_stage_id,spark_task_id"}}.Encode(), &bd)
	var res verdicts
	udfStage := ""
	for _, row := range bd.Rows {
		exec, stage, task := row.Keys[0], row.Keys[1], row.Keys[2]
		x, ok := tasks[task]
		switch {
		case task == "":
			res.unattributed += row.Value
		case !ok || x.exec != exec || strconv.Itoa(x.stage) != stage:
			t.Logf("misattributed: %d ns of Python labelled executor %s, stage %s, task %s; the event log: %+v", row.Value, exec, stage, task, x)
			res.wrong += row.Value
		default:
			res.correct += row.Value
		}
	}
	// A reused worker waiting for its next task is no task's: it reads
	// the task's first int right under main (Spark 3.5) or under the
	// reader of its init message (Spark 4).
	waiting := int64(0)
	unattributed := e.text(t, "/api/v1/export?"+url.Values{"query": {sel(app, `spark_task_id=""`)}, "type": {"wall"}, "format": {"folded"},
		"focus": {`worker\.py:main$`}}.Encode())
	for _, line := range strings.Split(strings.TrimSpace(unattributed), "\n") {
		i := strings.LastIndexByte(line, ' ') // frames have spaces: <frozen runpy>
		_, below, _ := strings.Cut(line[:max(i, 0)], "worker.py:main;")
		n, _ := strconv.ParseInt(line[i+1:], 10, 64)
		if below == "pyspark/serializers.py:read_int" || strings.Contains(below, "init_message") && strings.HasSuffix(below, ";pyspark/serializers.py:read_int") {
			waiting += n
		}
	}
	res.unattributed -= waiting
	t.Logf("Spark %s attribution of the Python workers' time serving tasks: %v (and %s waiting for a task)", e.spark.Version, res, english.Millis(waiting/1e6))
	if res.correct == 0 || res.wrong > 0 || float64(res.correct) < 0.9*float64(res.correct+res.unattributed) {
		t.Errorf("attribution of the Python workers' time: %v; want at least 90%% correct and none misattributed", res)
	}
	var byStage struct {
		Rows []struct {
			Keys  []string
			Value int64
		}
	}
	e.get(t, "/api/v1/breakdown?"+url.Values{"query": {sel(app)}, "type": {"wall"}, "focus": {`:slow_parse$`},
		"by": {"spark_stage_id"}}.Encode(), &byStage)
	for _, row := range byStage.Rows {
		t.Logf("slow_parse in stage %q: %s", row.Keys[0], english.Millis(row.Value/1e6))
	}
	if len(byStage.Rows) > 0 {
		udfStage = byStage.Rows[0].Keys[0]
	}
	if want := findingStage(t, e, app, "python-udf", "planted:python-udf"); udfStage == "" || udfStage != want {
		t.Fatalf("slow_parse's time is mostly in stage %q, not the UDF's stage %s", udfStage, want)
	}
	var top struct {
		Total     int64
		Functions []struct {
			Name  string
			Total int64
		}
	}
	e.get(t, "/api/v1/top?"+url.Values{"query": {sel(app, `spark_stage_id="`+udfStage+`"`)}, "type": {"wall"}, "n": {"0"}, "focus": {`worker\.py:main$`}}.Encode(), &top)
	for _, f := range top.Functions {
		if strings.HasSuffix(f.Name, ":slow_parse") {
			t.Logf("slow_parse: %s of the %s the UDF's stage's Python workers ran", english.Millis(f.Total/1e6), english.Millis(top.Total/1e6))
			if 2*f.Total < top.Total {
				t.Errorf("slow_parse is %d of %d ns of the stage's Python time, want most", f.Total, top.Total)
			}
		}
	}
	return (res.correct + res.wrong + res.unattributed) / 1e6
}

// findingStage is the stage of the app's finding of that kind on a stage
// of job (its description), "" if none.
func findingStage(t *testing.T, e realSpark, app, kind, job string) string {
	var rep appReport
	e.get(t, "/api/v1/apps/"+app, &rep)
	for _, f := range rep.Findings {
		if f.Kind == kind && f.StageID != nil && jobOfStage(rep, *f.StageID) == job {
			return strconv.Itoa(*f.StageID)
		}
	}
	return ""
}

// jobOfStage is the description of the job of a stage of the report.
func jobOfStage(rep appReport, stage int) string {
	for _, s := range rep.Stages {
		if s.StageID == stage {
			for _, j := range rep.Jobs {
				if j.JobID == s.JobID {
					return j.Description
				}
			}
		}
	}
	return ""
}

// sparkDeadServer: a server that refuses connections costs the job nothing
// but the data: it succeeds, and no exception of the agent's reaches its
// logs, only the agent's one line that the server is down.
func sparkDeadServer(t *testing.T, e realSpark) {
	dead := deadAddress(t)
	r := e.run(t, e.job("short", map[string]string{"spark.sparkprof.server": dead, "spark.eventLog.enabled": "false",
		"spark.sparkprof.uploadInterval": "1s", "spark.sparkprof.stopWait": "2s"}))
	for who, l := range runLogs(r) {
		said := false
		for _, line := range strings.Split(l, "\n") {
			switch {
			case strings.Contains(line, "at dev.sparkprof."):
				t.Errorf("%s's log has a stack through the agent: %s", who, line)
			case strings.Contains(line, "[sparkprof] cannot reach the sparkprof server"):
				said = true
				if strings.Contains(line, "Exception") {
					t.Errorf("%s's log names an exception: %s", who, line)
				}
			case strings.Contains(line, "[sparkprof]") && strings.Contains(line, "(logged once"):
				t.Errorf("%s's log: %s", who, line)
			}
		}
		if !said {
			t.Errorf("%s's log does not say the server is down", who)
		}
	}
}

// sparkDynamicAllocation: executors that dynamic allocation adds after
// others were removed get profiles of their own.
func sparkDynamicAllocation(t *testing.T, e realSpark) {
	r := e.run(t, e.job("dynamic", map[string]string{
		"spark.dynamicAllocation.enabled":                 "true",
		"spark.dynamicAllocation.shuffleTracking.enabled": "true",
		"spark.dynamicAllocation.minExecutors":            "0",
		"spark.dynamicAllocation.initialExecutors":        "2",
		"spark.dynamicAllocation.maxExecutors":            "2",
		"spark.dynamicAllocation.executorIdleTimeout":     "1s",
		"spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
	}))
	app := r.App(t)
	var a eventLogApp
	e.get(t, "/api/v1/apps/"+app, &a)
	if len(a.Executors) < 4 { // the driver and at least three executors
		t.Fatalf("executors %+v: dynamic allocation did not replace the removed ones", a.Executors)
	}
	// The executors dynamic allocation adds last run a task or two and
	// are ended by their worker soon after: their one window can be lost
	// as a short job's can (checkSources), so two are asked for, and the
	// missing ones are logged with what the server heard.
	checkSources(t, e, app, 2)
}

// sparkDecommission: an executor sent SIGPWR mid-job, as a spot instance's
// is, is shown decommissioned, not lost, with its re-run tasks.
func sparkDecommission(t *testing.T, e realSpark) {
	j := e.job("decommission", map[string]string{
		// Without block migration, whose retries wait 30 s, the executor
		// leaves as soon as its running task ends.
		"spark.decommission.enabled":         "true",
		"spark.storage.decommission.enabled": "false",
	})
	j.Jar = e.spark.JobsJar(t)
	markers := filepath.Join(t.TempDir(), "markers")
	os.MkdirAll(markers, 0o755)
	j.Args = append(j.Args, markers)
	r := e.spark.Start(t, j)
	app := r.App(t)
	var victim string
	waitFor(t, "a task of the decommission job to start", func() bool {
		ms, _ := filepath.Glob(filepath.Join(markers, "task-*-executor-*"))
		for _, m := range ms {
			if b, err := os.ReadFile(m); err == nil && len(b) > 0 {
				victim = string(b)
				return true
			}
		}
		return false
	})
	pid := 0
	for _, c := range victim {
		pid = pid*10 + int(c-'0')
	}
	if err := syscall.Kill(pid, syscall.SIGPWR); err != nil {
		t.Fatalf("SIGPWR to executor %d: %v", pid, err)
	}
	r.Wait(t)
	e.waitFinished(t, app)
	var rep appReport
	e.get(t, "/api/v1/apps/"+app, &rep)
	var kinds []string
	for _, f := range rep.Findings {
		kinds = append(kinds, f.Kind)
		if f.Kind == "executor-loss" {
			t.Errorf("the decommissioned executor is called lost: %s", f.Message)
		}
	}
	if !strings.Contains(strings.Join(kinds, ","), "decommission") {
		var a struct {
			Executors []struct{ ID, RemovalReason string }
		}
		e.get(t, "/api/v1/apps/"+app, &a)
		t.Errorf("no decommission finding: %v; executors %+v", kinds, a.Executors)
		for who, l := range runLogs(r) {
			for _, line := range strings.Split(l, "\n") {
				if strings.Contains(strings.ToLower(line), "decommission") {
					t.Logf("%s: %s", who, line)
				}
			}
		}
	}
}

// deadAddress is the URL of a loopback port that nothing listens on.
func deadAddress(t *testing.T) string {
	cmd, base := startServe(t, buildBinary(t), t.TempDir())
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	return base
}

// stageName names a recommendation's stage, or the app for none.
func stageName(id *int) string {
	if id == nil {
		return "the app"
	}
	return "stage " + strconv.Itoa(*id)
}
