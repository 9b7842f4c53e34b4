package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/internal/sparktest"
)

// plantedThresholds scale the analysis thresholds to the planted jobs,
// which are about a hundredth of a production job's size so that they run
// in seconds on two busy cores: the rules are the same, the sizes smaller.
var plantedThresholds = map[string]string{
	"straggler-min-ms":    "3000",
	"skew-min-bytes":      "1000000",
	"few-tasks-min-ms":    "3000",
	"few-tasks-min-bytes": "1000000",
	"python-min-ms":       "1000",
}

// realSpark is what the subtests of TestRealSpark share: one sparkprof
// serve, watching the directory the jobs write their event logs to.
type realSpark struct {
	spark     sparktest.Spark
	bin, base string
	eventDir  string
	agentJar  string
}

// TestRealSpark runs the agent's plugin and javaagent in real Spark jobs of
// every pinned Spark line (local-cluster: two executor JVMs), against one
// real sparkprof serve that watches their event logs, and checks what a
// Spark user would: where the profiles come from and how they are labelled,
// that every task-thread sample is attributed to the task the event log
// says ran then, the last window of a short job, a dead server, dynamic
// allocation, decommissioning, and planted problems found on their stages.
func TestRealSpark(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Spark")
	}
	lines := sparktest.Lines(t)
	if out, err := buildAgent(); err != nil {
		t.Fatalf("agent build: %v\n%s", err, out)
	}
	agentJar, err := filepath.Abs("../../agent/build/sparkprof-agent.jar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	events := filepath.Join(dir, "events")
	if err := os.MkdirAll(events, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"--eventlog-dir", events}
	for name, v := range plantedThresholds {
		args = append(args, "--threshold", name+"="+v)
	}
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"), args...)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	for _, s := range lines {
		e := realSpark{spark: s, bin: bin, base: base, eventDir: events, agentJar: agentJar}
		t.Run("Spark "+s.Version, func(t *testing.T) {
			for _, tt := range []struct {
				name string
				run  func(*testing.T, realSpark)
			}{
				{"planted problems and attribution", sparkPlanted},
				{"planted memory problems", sparkPlantedMemory},
				{"a job shorter than a window", sparkShortJob},
				{"javaagent", sparkJavaagent},
				{"async-profiler", sparkAsyncProfiler},
				{"dead server", sparkDeadServer},
				{"dynamic allocation", sparkDynamicAllocation},
				{"decommissioning", sparkDecommission},
				{"run over run", sparkRunOverRun},
				{"pyspark planted problems", sparkPySparkPlanted},
				{"pyspark two task slots", sparkPySparkSlots},
			} {
				t.Run(tt.name, func(t *testing.T) { tt.run(t, e) })
			}
		})
	}
}

// job is a run of the test jobs' mode with the plugin sending to the
// test's server, event log on.
func (e realSpark) job(mode string, conf map[string]string, args ...string) sparktest.Job {
	c := map[string]string{
		"spark.eventLog.enabled":   "true",
		"spark.eventLog.dir":       e.eventDir,
		"spark.plugins":            "dev.sparkprof.agent.SparkProfPlugin",
		"spark.sparkprof.server":   e.base,
		"spark.sparkprof.stopWait": "30s",
	}
	for k, v := range conf {
		if v == "" {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return sparktest.Job{Class: "dev.sparkprof.jobs.Jobs", Args: append([]string{mode}, args...), Conf: c, Jars: []string{e.agentJar}}
}

// run runs the job to its end on the test's Spark line and waits until the
// server has read its finished event log.
func (e realSpark) run(t *testing.T, j sparktest.Job) *sparktest.Run {
	t.Helper()
	j.Jar = e.spark.JobsJar(t)
	r := e.spark.Start(t, j)
	r.Wait(t)
	if !strings.Contains(r.Log, "JOBS DONE") {
		t.Fatalf("the job did not finish:\n%s", r.Log)
	}
	app := r.App(t)
	agentLines(t, r)
	if j.Conf["spark.eventLog.enabled"] == "true" {
		e.waitFinished(t, app)
	}
	return r
}

// waitFinished waits until the server has read the app's finished event
// log.
func (e realSpark) waitFinished(t *testing.T, app string) {
	t.Helper()
	waitFor(t, "the server to read the finished event log of "+app, func() bool {
		var apps []struct{ ID, Status string }
		getTenant(t, e.base, "/api/v1/apps", e.tenant(), &apps)
		for _, a := range apps {
			if a.ID == app && a.Status == "finished" {
				return true
			}
		}
		return false
	})
}

// tenant is the tenant of the test's data: the default one, where the
// server's watched event-log directory puts its apps.
func (e realSpark) tenant() string { return "" }

// get reads a JSON answer of the test's tenant.
func (e realSpark) get(t *testing.T, path string, v any) {
	t.Helper()
	getTenant(t, e.base, path, e.tenant(), v)
}

// text reads a text answer of the test's tenant.
func (e realSpark) text(t *testing.T, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", e.base+path, nil)
	req.Header.Set("X-Scope-OrgID", e.tenant())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return string(b)
}

// sel is a selector of the app's samples with more matchers.
func sel(app string, matchers ...string) string {
	return "{" + strings.Join(append([]string{`spark_app_id="` + app + `"`}, matchers...), ",") + "}"
}

// labelValues are the values of a label among the selected samples.
func (e realSpark) labelValues(t *testing.T, label, selector string) []string {
	var vs []string
	e.get(t, "/api/v1/label-values?"+url.Values{"name": {label}, "query": {selector}}.Encode(), &vs)
	sort.Strings(vs)
	return vs
}

// runLogs are the logs of a run's JVMs, by who wrote them.
func runLogs(r *sparktest.Run) map[string]string {
	logs := map[string]string{"driver": r.Log}
	for id, l := range r.ExecutorLogs {
		logs["executor "+id] = l
	}
	return logs
}

// agentLines logs what the agent said in the run's JVMs.
func agentLines(t *testing.T, r *sparktest.Run) {
	t.Helper()
	for who, l := range runLogs(r) {
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, "[sparkprof]") {
				t.Logf("%s: %s", who, line)
			}
		}
	}
}

// noAgentErrors fails the test when an exception reached the logs of the
// job's JVMs, or the agent logged a failure.
func noAgentErrors(t *testing.T, r *sparktest.Run) {
	t.Helper()
	for who, l := range runLogs(r) {
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(line, "[sparkprof]") && strings.Contains(line, "(logged once") ||
				strings.Contains(line, "Exception") && strings.Contains(line, "sparkprof") {
				t.Errorf("%s's log: %s", who, line)
			}
		}
	}
}

// eventLogApp is what the test reads of an app's analysis on the server:
// its executors and task attempts.
type eventLogApp struct {
	Executors []struct {
		ID   string `json:"id"`
		Host string `json:"host"`
	} `json:"executors"`
	Tasks []struct {
		TaskID     int64  `json:"taskId"`
		StageID    int    `json:"stageId"`
		Attempt    int    `json:"stageAttempt"`
		ExecutorID string `json:"executorId"`
		LaunchMs   int64  `json:"launchMs"`
		FinishMs   int64  `json:"finishMs"`
	} `json:"tasks"`
}

// checkSources checks that profiles came from the driver and every
// executor of the event log, labelled with its id and host, the app id
// and no attempt. With least > 0, only that many executors must have
// sent, of those that ran tasks: in a job of a few seconds an executor's
// one window is shipped as its worker ends it, which on a busy machine
// can lose it (see docs/agent.md); the missing ones are logged with what
// the server heard from each sender.
func checkSources(t *testing.T, e realSpark, app string, least int) {
	t.Helper()
	var a eventLogApp
	e.get(t, "/api/v1/apps/"+app, &a)
	ran := map[string]bool{}
	for _, x := range a.Tasks {
		ran[x.ExecutorID] = true
	}
	var want []string
	hosts := map[string]bool{}
	for _, x := range a.Executors {
		if x.ID != "driver" && (least == 0 || ran[x.ID]) {
			want = append(want, x.ID)
		}
		hosts[x.Host] = true
	}
	sort.Strings(want)
	sent := map[string]bool{}
	for _, id := range e.labelValues(t, "spark_executor_id", sel(app)) {
		sent[id] = true
	}
	var missing []string
	for _, id := range want {
		if !sent[id] {
			missing = append(missing, id)
		}
	}
	switch {
	case !sent["driver"]:
		t.Errorf("no profiles from the driver; from executors %v", sent)
	case least == 0 && len(missing) > 0, least > 0 && len(want)-len(missing) < least:
		t.Errorf("no profiles from executors %v of %v", missing, want)
	}
	if len(missing) > 0 {
		var agents []map[string]any
		e.get(t, "/api/v1/agents", &agents)
		t.Logf("no profiles from executors %v of %v; the server's senders: %v", missing, want, agents)
	}
	for id := range sent {
		hs := e.labelValues(t, "host", sel(app, `spark_executor_id="`+id+`"`))
		if len(hs) != 1 || !hosts[hs[0]] {
			t.Errorf("executor %s's profiles have hosts %v; the event log's hosts are %v", id, hs, hosts)
		}
	}
	var attempts []string
	e.get(t, "/api/v1/label-values?"+url.Values{"name": {"spark_app_attempt"}, "query": {sel(app)}}.Encode(), &attempts)
	if len(attempts) > 0 {
		t.Errorf("profiles of app %s name attempts %v; local-cluster apps have none", app, attempts)
	}
}

// verdicts is how much of the task threads' CPU time went to which
// verdict.
type verdicts struct{ correct, wrong, unattributed int64 }

func (a verdicts) String() string {
	all := float64(a.correct + a.wrong + a.unattributed)
	return fmt.Sprintf("%.2f%% correct, %.2f%% misattributed, %.2f%% unattributed of %.1f s",
		100*float64(a.correct)/all, 100*float64(a.wrong)/all, 100*float64(a.unattributed)/all, all/1e9)
}

// measureAttribution checks each task-thread sample's stage, stage attempt
// and task against the task the event log says ran on its executor at its
// time: per executor, the CPU time per task per second.
func measureAttribution(t *testing.T, e realSpark, app string) verdicts {
	t.Helper()
	var a eventLogApp
	e.get(t, "/api/v1/apps/"+app, &a)
	type run struct {
		stage, attempt int
		exec           string
		launch, finish int64
	}
	tasks := map[string]run{}
	for _, x := range a.Tasks {
		tasks[strconv.FormatInt(x.TaskID, 10)] = run{x.StageID, x.Attempt, x.ExecutorID, x.LaunchMs, x.FinishMs}
	}
	var res verdicts
	// The labels a sample carries must be those of its task.
	var bd struct {
		Rows []struct {
			Keys  []string
			Value int64
		}
	}
	e.get(t, "/api/v1/breakdown?"+url.Values{"query": {sel(app, `thread_pool="task"`)}, "type": {"cpu"},
		"by": {"spark_executor_id,spark_stage_id,spark_stage_attempt,spark_task_id"}}.Encode(), &bd)
	for _, row := range bd.Rows {
		exec, stage, attempt, task := row.Keys[0], row.Keys[1], row.Keys[2], row.Keys[3]
		r, ok := tasks[task]
		switch {
		case task == "":
			res.unattributed += row.Value
		case !ok || r.exec != exec || strconv.Itoa(r.stage) != stage || strconv.Itoa(r.attempt) != attempt:
			t.Logf("misattributed: %d ns labelled executor %s, stage %s.%s, task %s; the event log: %+v", row.Value, exec, stage, attempt, task, r)
			res.wrong += row.Value
		default:
			res.correct += row.Value
		}
	}
	// ... and its time must lie within the task's run (a step of a second
	// that overlaps it). A CPU sample is taken when its thread has run an
	// interval's worth, which may come after the task's end, as its result
	// is sent and its thread cleaned up, and the event log's finish is when
	// the driver heard of the end: a sample may follow the finish by the
	// slack the server's own join allows (attribution.WindowSlack).
	slackMs := attribution.WindowSlack / int64(time.Millisecond)
	for _, exec := range e.labelValues(t, "spark_executor_id", sel(app, `thread_pool="task"`)) {
		var ser struct {
			StepMs int64
			Series []struct {
				Key    string
				Points [][2]float64
			}
		}
		e.get(t, "/api/v1/series?"+url.Values{"query": {sel(app, `thread_pool="task"`, `spark_executor_id="`+exec+`"`)},
			"type": {"cpu"}, "step": {"1s"}, "by": {"spark_task_id"}}.Encode(), &ser)
		for _, s := range ser.Series {
			r, ok := tasks[s.Key]
			if s.Key == "" || !ok {
				continue
			}
			for _, p := range s.Points {
				at := int64(p[0])
				switch {
				case at+ser.StepMs <= r.launch || r.finish > 0 && at > r.finish+slackMs:
					t.Logf("misattributed: %v ns of task %s at %d, outside its run %d-%d", p[1], s.Key, at, r.launch, r.finish)
					res.wrong += int64(p[1])
					res.correct -= int64(p[1])
				case r.finish > 0 && at > r.finish:
					t.Logf("%v ns of task %s in the second from %d, after its finish at %d", p[1], s.Key, at, r.finish)
				}
			}
		}
	}
	return res
}

// finding is one finding of an app's report.
type finding struct {
	Kind       string          `json:"kind"`
	Severity   string          `json:"severity"`
	StageID    *int            `json:"stageId"`
	TaskID     *int64          `json:"taskId"`
	Message    string          `json:"message"`
	Suggestion string          `json:"suggestion"`
	Evidence   json.RawMessage `json:"evidence"`
}

// appReport is what the planted tests read of an app's report.
type appReport struct {
	Stages []struct {
		StageID int `json:"stageId"`
		JobID   int `json:"jobId"`
	} `json:"stages"`
	Jobs []struct {
		JobID       int    `json:"jobId"`
		Description string `json:"description"`
		Name        string `json:"name"`
	} `json:"jobs"`
	Findings        []finding `json:"findings"`
	Recommendations []struct {
		Pattern string `json:"pattern"`
		StageID *int   `json:"stageId"`
		Share   float64
		Message string `json:"message"`
	} `json:"recommendations"`
}
