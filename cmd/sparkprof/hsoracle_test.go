package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sparkprof/sparkprof/internal/sparktest"
)

// TestHistoryServerOracle has real Spark write every kind of event log
// (each compression codec, a rolling log, a log in progress, a failed app)
// and checks that analyze and serve --eventlog-dir read each, and that
// what they say equals what Spark's own History Server, run from the same
// distribution on the same directory, answers on its REST API, field by
// field (hsoracle_fields_test.go). One spark-submit a Spark line writes
// them all: an app after another in one driver.
//
// local-cluster has no application attempts (only YARN's and Kubernetes'
// drivers get an attempt id), so no log of several attempts is made here.
func TestHistoryServerOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Spark")
	}
	lines := sparktest.Lines(t)
	bin := buildBinary(t)
	tally := hsTally{}
	var reads []string
	for _, s := range lines {
		t.Run("Spark "+s.Version, func(t *testing.T) { reads = append(reads, oracleLine(t, s, bin, tally)...) })
	}
	t.Logf("event log → read by analyze, serve and the History Server:\n%-6s %-18s %-48s %s\n%s",
		"Spark", "kind", "log", "read", strings.Join(reads, "\n"))
	tally.report(t)
}

// eventLogKinds names a log of the event directory by its kind.
var eventLogKinds = regexp.MustCompile(`^(?:eventlog_v2_)?(app-[0-9]+-[0-9]+)(?:\.(lz4|lzf|snappy|zstd))?(\.inprogress)?$`)

// generatedLog is one event log the job wrote (or of the corpus), of an
// app and its attempt ("" for an app that names none).
type generatedLog struct{ app, attempt, kind, path string }

// oracleLine runs the event-log job on one Spark line and compares, first
// while its last app runs, then once it failed. It returns the lines of the
// read table.
func oracleLine(t *testing.T, s sparktest.Spark, bin string, tally hsTally) []string {
	dir := t.TempDir()
	events, release := filepath.Join(dir, "events"), filepath.Join(dir, "release")
	if err := os.MkdirAll(events, 0o755); err != nil {
		t.Fatal(err)
	}
	run := s.Start(t, sparktest.Job{Class: "dev.sparkprof.jobs.Jobs", Jar: s.JobsJar(t), Args: []string{"eventlogs", release},
		Conf: map[string]string{"spark.eventLog.enabled": "true", "spark.eventLog.dir": events}})
	_, running, _ := strings.Cut(run.WaitLine(t, "JOBS IN PROGRESS "), "JOBS IN PROGRESS ")
	running = strings.TrimSpace(running)

	hs, _ := startHistoryServer(t, s, events, dir)
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"), "--eventlog-dir", events, "--eventlog-poll", "1s")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()

	logs := listGeneratedLogs(t, events)
	if len(logs) != 6 {
		t.Fatalf("the job wrote %d event logs, want 6 (4 codecs, rolling, in progress): %v", len(logs), logs)
	}
	var table []string
	for _, l := range logs {
		if l.app == running && l.kind != "in progress" {
			t.Fatalf("the running app %s's log %s is not in progress", running, l.path)
		}
		table = append(table, oracleApp(t, s, l, hs, base, tally))
	}

	// The last app fails: its log ends, and is compared again.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run.End(); err == nil || !strings.Contains(run.Log, "planted failure of partition 3") {
		t.Fatalf("the failing app ended with %v; want its planted failure:\n%s", err, run.Log)
	}
	for _, l := range listGeneratedLogs(t, events) {
		if l.app == running {
			l.kind = "failed"
			table = append(table, oracleApp(t, s, l, hs, base, tally))
		}
	}
	return table
}

// listGeneratedLogs lists the event logs of the directory.
func listGeneratedLogs(t *testing.T, events string) []generatedLog {
	t.Helper()
	entries, err := os.ReadDir(events)
	if err != nil {
		t.Fatal(err)
	}
	var logs []generatedLog
	for _, e := range entries {
		m := eventLogKinds.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		kind := m[2]
		switch {
		case strings.HasPrefix(e.Name(), "eventlog_v2_"):
			parts, _ := filepath.Glob(filepath.Join(events, e.Name(), "events_*"))
			kind = fmt.Sprintf("rolling (%d files)", len(parts))
		case m[3] != "":
			kind = "in progress"
		case kind == "":
			kind = "plain"
		}
		logs = append(logs, generatedLog{app: m[1], kind: kind, path: filepath.Join(events, e.Name())})
	}
	return logs
}

// oracleApp reads one log with analyze, waits until serve and the History
// Server show the app as the log has it, and compares their answers.
func oracleApp(t *testing.T, s sparktest.Spark, l generatedLog, hs, base string, tally hsTally) string {
	t.Helper()
	code, stdout, stderr := sparkprof(t, "analyze", "--json", l.path)
	if code != 0 {
		t.Fatalf("analyze --json %s: exit %d\n%s", l.path, code, stderr)
	}
	var rep jsonObj
	decodeJSON(t, "analyze --json "+l.path, []byte(stdout), &rep)
	app := jsonPath(rep, "app").(jsonObj)
	if app["id"] != l.app || hsNorm(app["attemptId"]) != l.attempt {
		t.Fatalf("analyze --json %s read app %v attempt %v; want %s attempt %q", l.path, app["id"], app["attemptId"], l.app, l.attempt)
	}
	finished := jsonInt(app["endMs"]) != 0
	hsURL, servedURL, q := hs+"/applications/"+l.app, base+"/api/v1/apps/"+l.app, ""
	if l.attempt != "" {
		hsURL, q = hsURL+"/"+l.attempt, "&appAttempt="+l.attempt
	}

	// serve: the app is listed with the log's tasks and end, and its
	// report becomes analyze's. A poll may find a log's end event before
	// the events Spark writes after it; a later poll reads those (one run
	// of 4.3.0 compared the executors a poll early).
	sections := []string{"jobs", "stages", "executors", "sql", "environment"}
	var row, served jsonObj
	waitUntil(t, "serve to read "+l.path+" as analyze does", func() error {
		var apps []jsonObj
		mustGetJSON(t, base+"/api/v1/apps", &apps)
		row = nil
		for _, a := range apps {
			at := attemptOf(a, "attemptId", l.attempt)
			if a["id"] == l.app && at != nil && hsNorm(at["taskCount"]) == hsNorm(app["taskCount"]) && (at["status"] == "finished") == finished {
				row = a
			}
		}
		if row == nil {
			return fmt.Errorf("the app's list has no attempt %q with %v tasks, finished %v", l.attempt, app["taskCount"], finished)
		}
		served = nil
		mustGetJSON(t, servedURL+"?tasks=none"+q, &served)
		for _, k := range sections {
			if a, b := mustJSON(t, rep[k]), mustJSON(t, served[k]); !bytes.Equal(a, b) {
				return fmt.Errorf("%s differ: %s", k, firstDifference(a, b))
			}
		}
		return nil
	})

	// The History Server: the app is listed, complete as the log is.
	var hsApp jsonObj
	waitFor(t, "the History Server to list "+l.app, func() bool {
		var apps []jsonObj
		if getJSONNumbers(hs+"/applications", &apps) != nil {
			return false
		}
		for _, a := range apps {
			if at := attemptOf(a, "attemptId", l.attempt); a["id"] == l.app && at != nil && at["completed"] == finished {
				hsApp = a
				return true
			}
		}
		return false
	})
	where := s.Version + " " + l.kind + " " + filepath.Base(l.path)
	compareApplication(t, tally, where, hsApp, row)
	compareReport(t, tally, where, hsURL, rep, servedURL, q)
	return fmt.Sprintf("%-6s %-18s %-48s analyze, serve, History Server", s.Version, l.kind, filepath.Base(l.path))
}

// attemptOf returns the attempt of an app (of either side's list) whose
// key names attempt, "" for one that names none.
func attemptOf(app jsonObj, key, attempt string) jsonObj {
	attempts, _ := app["attempts"].([]any)
	for _, a := range attempts {
		if a := a.(jsonObj); hsNorm(a[key]) == attempt {
			return a
		}
	}
	return nil
}

// compareApplication compares the History Server's application with
// sparkprof's row of /api/v1/apps, attempt by attempt.
func compareApplication(t *testing.T, tally hsTally, where string, hsApp, row jsonObj) {
	t.Helper()
	hsAttempts, _ := hsApp["attempts"].([]any)
	spAttempts, _ := row["attempts"].([]any)
	tally.compareValue("applications.attempts (count)", where, len(hsAttempts), len(spAttempts))
	app := jsonObj{}
	for k, v := range hsApp {
		if k != "attempts" {
			app[k] = v
		}
	}
	tally.compare("applications", where, app, row, nil)
	for i, a := range hsAttempts {
		if i < len(spAttempts) {
			tally.compare("applications.attempts", where, a.(jsonObj), spAttempts[i].(jsonObj), nil)
		}
	}
}

// compareReport compares the History Server's jobs, stages, task summaries
// and lists, executors, environment and SQL executions of an app with
// analyze's report and serve's stage pages.
func compareReport(t *testing.T, tally hsTally, where, hs string, rep jsonObj, served, q string) {
	t.Helper()
	byKey := func(list any, keys ...string) map[string]jsonObj {
		m := map[string]jsonObj{}
		l, _ := list.([]any)
		for _, x := range l {
			o := x.(jsonObj)
			var k []string
			for _, key := range keys {
				k = append(k, hsNorm(o[key]))
			}
			m[strings.Join(k, ".")] = o
		}
		return m
	}
	// The executors that ran a task whose output was lost (resubmitted).
	var all jsonObj
	mustGetJSON(t, served+"?tasks=all"+q, &all)
	resubmittedOn := map[string]bool{}
	tasks, _ := all["tasks"].([]any)
	for _, x := range tasks {
		if x := x.(jsonObj); x["reason"] == "Resubmitted" {
			resubmittedOn[hsNorm(x["executorId"])] = true
		}
	}
	tagged := func(answer, executor string) string {
		if resubmittedOn[executor] {
			return answer + " (ran resubmitted tasks)"
		}
		return answer
	}
	for _, c := range []struct {
		answer, path string
		hsKeys       []string
		sp           string
		spKeys       []string
	}{
		{"jobs", "/jobs", []string{"jobId"}, "jobs", []string{"jobId"}},
		{"stages", "/stages", []string{"stageId", "attemptId"}, "stages", []string{"stageId", "attempt"}},
		{"allexecutors", "/allexecutors", []string{"id"}, "executors", []string{"id"}},
		{"sql", "/sql?length=1000", []string{"id"}, "sql", []string{"sqlId"}},
	} {
		var list []any
		mustGetJSON(t, hs+c.path, &list)
		sp := byKey(rep[c.sp], c.spKeys...)
		hsByKey := byKey(list, c.hsKeys...)
		for k, o := range sp {
			if _, ok := hsByKey[k]; !ok && c.answer == "jobs" && jsonInt(o["submitMs"]) == 0 {
				tally.compareValue("jobs (without JobStart)", where+" job "+k, nil, k)
				delete(sp, k)
			}
		}
		tally.compareValue(c.answer+" (keys)", where, sortedKeys(hsByKey), sortedKeys(sp))
		for k, h := range hsByKey {
			if o, ok := sp[k]; ok {
				answer := c.answer
				if answer == "allexecutors" {
					answer = tagged(answer, k)
				}
				tally.compare(answer, where+" "+c.answer+" "+k, h, o, rep)
				if c.answer == "sql" {
					compareSQLNodes(tally, where+" sql "+k, h, o)
				}
			}
		}
	}
	// executors: the live ones.
	var live []any
	mustGetJSON(t, hs+"/executors", &live)
	alive := map[string]jsonObj{}
	for k, e := range byKey(rep["executors"], "id") {
		if jsonInt(e["removedMs"]) == 0 {
			alive[k] = e
		}
	}
	tally.compareValue("executors (keys)", where, sortedKeys(byKey(live, "id")), sortedKeys(alive))
	for k, h := range byKey(live, "id") {
		if o, ok := alive[k]; ok {
			tally.compare(tagged("executors", k), where+" executor "+k, h, o, rep)
		}
	}
	var env jsonObj
	mustGetJSON(t, hs+"/environment", &env)
	if spEnv, ok := rep["environment"].(jsonObj); ok {
		tally.compare("environment", where, env, spEnv, rep)
	} else {
		tally.compareValue("environment (present)", where, true, false)
	}
	compareStagePages(t, tally, where, hs, rep, served, q)
}

// compareStagePages compares each stage attempt's taskSummary and taskList
// with serve's stage page and task list (of the app attempt q names).
func compareStagePages(t *testing.T, tally hsTally, where, hs string, rep jsonObj, served, q string) {
	t.Helper()
	stages, _ := rep["stages"].([]any)
	for _, st := range stages {
		st := st.(jsonObj)
		if jsonInt(st["taskCount"]) == 0 {
			continue
		}
		id, attempt := hsNorm(st["stageId"]), hsNorm(st["attempt"])
		at := where + " stage " + id + "." + attempt
		var page jsonObj
		mustGetJSON(t, served+"/stages/"+id+"?attempt="+attempt+q, &page)
		if jsonInt(page["summarized"]) > 0 {
			var sum jsonObj
			mustGetJSON(t, hs+"/stages/"+id+"/"+attempt+"/taskSummary?quantiles=0,0.25,0.5,0.75,1.0", &sum)
			q, _ := page["quantiles"].([]any)
			tally.compareSummary(at, sum, q, jsonInt(st["failedTaskCount"]) > 0)
		}
		var hsTasks []any
		mustGetJSON(t, hs+"/stages/"+id+"/"+attempt+"/taskList?length=10000", &hsTasks)
		sp := map[string]jsonObj{}
		for offset := 0; ; offset += 1000 {
			var page jsonObj
			mustGetJSON(t, fmt.Sprintf("%s/stages/%s/tasks?attempt=%s&limit=1000&offset=%d%s", served, id, attempt, offset, q), &page)
			list, _ := page["tasks"].([]any)
			for _, x := range list {
				sp[hsNorm(x.(jsonObj)["taskId"])] = x.(jsonObj)
			}
			if len(list) < 1000 {
				break
			}
		}
		hsIDs := map[string]jsonObj{}
		for _, x := range hsTasks {
			hsIDs[hsNorm(x.(jsonObj)["taskId"])] = x.(jsonObj)
		}
		tally.compareValue("taskList (keys)", at, sortedKeys(hsIDs), sortedKeys(sp))
		for k, h := range hsIDs {
			if o, ok := sp[k]; ok {
				answer := "taskList"
				if o["reason"] == "Resubmitted" {
					answer += " (resubmitted)"
				}
				tally.compare(answer, at+" task "+k, h, o, rep)
			}
		}
	}
}

func sortedKeys(m map[string]jsonObj) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}

// startHistoryServer runs Spark's History Server on the event directory,
// on a free loopback port, and returns its REST API's base URL once it
// says where it listens, and its log as it grows.
func startHistoryServer(t *testing.T, s sparktest.Spark, events, dir string) (string, *lineLog) {
	t.Helper()
	tmp := filepath.Join(dir, "history-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(dir, "history.properties")
	conf := "spark.history.fs.logDirectory=file://" + events + "\nspark.history.ui.port=0\n" +
		"spark.history.fs.update.interval=1s\n"
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(s.Home, "bin", "spark-class"), "org.apache.spark.deploy.history.HistoryServer",
		"--properties-file", props)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+s.Home, "SPARK_LOCAL_IP=127.0.0.1", "TMPDIR="+tmp,
		"SPARK_DAEMON_JAVA_OPTS=-Djava.io.tmpdir="+tmp)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("History Server: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	started := regexp.MustCompile(`Bound HistoryServer to .*, and started at http://[^:]+:([0-9]+)`)
	sc := bufio.NewScanner(out)
	log := &lineLog{}
	for sc.Scan() {
		log.add(sc.Text())
		if m := started.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
					log.add(sc.Text())
				}
			}()
			return "http://127.0.0.1:" + m[1] + "/api/v1", log
		}
	}
	t.Fatalf("the History Server ended without listening:\n%s", log)
	return "", nil
}

// lineLog is a process's output, line by line, as it grows.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(line string) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// Lines returns the lines so far.
func (l *lineLog) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *lineLog) String() string { return strings.Join(l.Lines(), "\n") }

// getJSONNumbers reads a JSON answer, its numbers as json.Number.
func getJSONNumbers(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	d := json.NewDecoder(resp.Body)
	d.UseNumber()
	return d.Decode(v)
}

// mustGetJSON is getJSONNumbers that fails the test on an error.
func mustGetJSON(t *testing.T, url string, v any) {
	t.Helper()
	if err := getJSONNumbers(url, v); err != nil {
		t.Fatal(err)
	}
}

func decodeJSON(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// firstDifference shows where two JSON texts first differ, a little of
// each around it.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	around := func(x []byte) string {
		return string(x[max(0, i-60):min(len(x), i+60)])
	}
	return fmt.Sprintf("at byte %d, analyze has …%s…, serve …%s…", i, around(a), around(b))
}
