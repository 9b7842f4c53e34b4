package spark

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

func build(t *testing.T, rel ...string) (*App, *Report) {
	t.Helper()
	return buildPath(t, corpus.Path(t, rel...))
}

// buildPath builds the app of the event log at path.
func buildPath(t *testing.T, path string) (*App, *Report) {
	t.Helper()
	r, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	app, rep, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	return app, rep
}

// TestCounts checks Build against the counts in the corpus README tables.
// -1 marks a figure the README does not state.
func TestCounts(t *testing.T) {
	tests := []struct {
		rel                  []string
		tasks, failed        int
		added, removed       int
		jobs, sql, malformed int
		missingEnd           bool
	}{
		{[]string{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"}, 8630, 53, 8, 2, 75, 28, 0, false}, // README says no ApplicationEnd, but line 17715 is one (two JobEnds follow)
		{[]string{"nvidia", "eventlog_4nodes_8cores_dynamic_alloc.zstd"}, 235, 0, 15, 14, 20, 5, 0, false},
		{[]string{"nvidia", "rp_sql_eventlog.zstd"}, 217, -1, 9, 1, 2, 1, 0, false},
		{[]string{"nvidia", "malformed_json_eventlog.zstd"}, 217, -1, 9, 1, 2, 1, 1, false},
		{[]string{"nvidia", "nds_q88_photon_db_13_3.zstd"}, 4896, -1, -1, 1, 57, 27, 0, true},
		{[]string{"nvidia", "truncated_eventlog"}, 21, -1, -1, -1, 2, 2, 0, true},
		{[]string{"nvidia", "spark2-eventlog.zstd"}, 6, -1, -1, -1, 6, 4, 0, false},
		{[]string{"nvidia", "eventlog_v2_local-1623876083964"}, 2801, -1, -1, -1, -1, -1, 0, false},
		{[]string{"nvidia", "db_sim_eventlog"}, 2801, -1, -1, -1, -1, -1, 0, false},
		{[]string{"nvidia", "aqeshuffle_eventlog.zstd"}, 26, -1, -1, -1, 4, 1, 0, false},
		{[]string{"nvidia", "java_udf_eventlog"}, 2, -1, -1, -1, 2, 3, 0, false},
		{[]string{"apache", "local-1642039451826"}, 35, -1, -1, -1, 6, 2, 0, false},
		{[]string{"apache", "app-20161116163331-0000"}, 24, 8, 4, -1, -1, -1, 0, false},
		{[]string{"apache", "eventlog_v2_local-1766844910796"}, 2, 0, -1, -1, 1, -1, 0, false},
		{[]string{"apache", "local-1430917381535_1"}, 0, 0, -1, -1, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(filepath.Join(tt.rel...), func(t *testing.T) {
			app, rep := build(t, append([]string{"eventlogs"}, tt.rel...)...)
			removed := 0
			for _, e := range app.Executors {
				if e.RemovedMs > 0 {
					removed++
				}
			}
			added := 0
			for _, e := range app.Executors {
				if e.AddedMs > 0 && e.ID != "driver" {
					added++
				}
			}
			check := func(name string, got, want int) {
				if want >= 0 && got != want {
					t.Errorf("%s = %d, want %d", name, got, want)
				}
			}
			check("tasks", app.TaskCount, tt.tasks)
			check("failed tasks", app.FailedTaskCount, tt.failed)
			check("executors added", added, tt.added)
			check("executors removed", removed, tt.removed)
			check("jobs", app.JobCount, tt.jobs)
			check("SQL executions", app.SQLCount, tt.sql)
			check("malformed lines", rep.MalformedLines, tt.malformed)
			if rep.MissingEnd != tt.missingEnd {
				t.Errorf("MissingEnd = %v, want %v", rep.MissingEnd, tt.missingEnd)
			}
		})
	}
}

// TestFailureReasons groups the 53 failed tasks of the failure log by reason.
func TestFailureReasons(t *testing.T) {
	app, _ := build(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")
	want := map[string]int{"Resubmitted": 50, "FetchFailed": 2, "ExecutorLostFailure": 1}
	if !reflect.DeepEqual(app.FailureReasons, want) {
		t.Errorf("FailureReasons = %v, want %v", app.FailureReasons, want)
	}
}

// TestMalformedPosition checks that bad lines are reported by line number:
// the corrupted line 4 of malformed_json_eventlog and the last line of the
// sparkscope running-incomplete log, cut mid-object.
func TestMalformedPosition(t *testing.T) {
	tests := []struct {
		rel  []string
		line int
	}{
		{[]string{"eventlogs", "nvidia", "malformed_json_eventlog.zstd"}, 4},
		{[]string{"eventlogs", "sparkscope", "app-20231025121456-0004-eventLog-running-incomplete"}, 15},
	}
	for _, tt := range tests {
		_, rep := build(t, tt.rel...)
		if len(rep.Malformed) != 1 || rep.Malformed[0].Line != tt.line {
			t.Errorf("%s: Malformed = %v, want line %d", tt.rel[2], rep.Malformed, tt.line)
		}
	}
}

// A log of many malformed lines and many events not modelled keeps the
// positions and names of the first ones only, and counts them all: what
// it keeps does not grow with the log.
func TestReportBounded(t *testing.T) {
	var b bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&b, "not json %d\n{\"Event\":\"SparkListenerCustom%d\"}\n", i, i)
	}
	path := filepath.Join(t.TempDir(), "events")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, rep := buildPath(t, path)
	if len(rep.Malformed) != MaxMalformed || rep.MalformedLines != 1000 || rep.Malformed[0].Line != 1 {
		t.Errorf("malformed: %d positions (first %v), %d counted; want %d and 1000", len(rep.Malformed), rep.Malformed[0], rep.MalformedLines, MaxMalformed)
	}
	if len(rep.Unknown) != MaxUnknown+1 || rep.Unknown[OtherUnknown] != 1000-MaxUnknown {
		t.Errorf("unknown: %d names, %d others; want %d and %d", len(rep.Unknown), rep.Unknown[OtherUnknown], MaxUnknown+1, 1000-MaxUnknown)
	}
}

// TestExecutorsRemovedGolden compares removals with spark-rapids-tools'
// executors_removed_eventlog_expectation.csv row by row.
func TestExecutorsRemovedGolden(t *testing.T) {
	app, _ := build(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")
	rows, err := csv.NewReader(bytes.NewReader(corpus.Read(t, "eventlogs", "golden", "nvidia", "executors_removed_eventlog_expectation.csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, e := range app.Executors {
		if e.RemovedMs > 0 {
			got = append(got, []string{e.ID, strconv.FormatInt(e.RemovedMs, 10), e.RemovalReason})
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
	if want := rows[1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("removed executors:\n got %q\nwant %q", got, want)
	}
}

// TestTruncatedZstd cuts a zstd log at several offsets: Build must return a
// partial result and report where the data stopped.
func TestTruncatedZstd(t *testing.T) {
	raw, err := os.ReadFile(corpus.Path(t, "eventlogs", "nvidia", "rp_sql_eventlog.zstd"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, cut := range []int{len(raw) / 4, len(raw) / 2, len(raw) - 10} {
		path := filepath.Join(dir, "cut.zstd")
		if err := os.WriteFile(path, raw[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := eventlog.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		app, rep, err := Build(r)
		r.Close()
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if len(rep.Truncations) != 1 {
			t.Errorf("cut %d: truncations = %v, want 1", cut, rep.Truncations)
		}
		if app.TaskCount > 217 {
			t.Errorf("cut %d: %d tasks, more than the whole log", cut, app.TaskCount)
		}
	}
}

func FuzzBuild(f *testing.F) {
	for _, l := range bytes.Split(corpus.Read(f, "eventlogs", "nvidia", "spark2-eventlog.zstd"), []byte("\n")) {
		f.Add(l)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, line []byte) {
		path := filepath.Join(dir, "log")
		if err := os.WriteFile(path, line, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := eventlog.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, _, err := Build(r); err != nil {
			t.Skip(err)
		}
	})
}

// BenchmarkBuild measures Build on a 36.5 MB (uncompressed) zstd log; the
// reported MB/s is of uncompressed log bytes.
func BenchmarkBuild(b *testing.B) {
	path := corpus.Path(b, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")
	b.SetBytes(36555789)
	for b.Loop() {
		r, err := eventlog.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Build(r); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// TestEveryLog builds every event log of the corpus (incl. the hand-edited
// sparkscope error fixtures and the sparklens and sparklint logs): none may
// fail, and each must yield at least one event. The sparklint .zip (History
// Server download format) is not decoded yet and is skipped.
func TestEveryLog(t *testing.T) {
	root := corpus.Path(t, "eventlogs")
	for _, group := range []string{"apache", "nvidia", "sparklens", "sparklint", "sparkscope"} {
		ents, err := os.ReadDir(filepath.Join(root, group))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if filepath.Ext(e.Name()) == ".zip" {
				continue
			}
			rel := []string{"eventlogs", group, e.Name()}
			if e.Name() == "directory_source" {
				// A directory of separate logs, not a rolled log.
				rel = append(rel, "event_log_1")
			}
			t.Run(group+"/"+e.Name(), func(t *testing.T) {
				app, rep := build(t, rel...)
				if app.ID == "" && app.TaskCount == 0 && len(rep.Unknown) == 0 {
					t.Errorf("no events read; report %+v", rep)
				}
			})
		}
	}
}

// escapeCSV writes line breaks and tabs as spark-rapids-tools' CSVs do.
func escapeCSV(s string) string {
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
}

func nvidiaCSV(t *testing.T, name string) []map[string]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(corpus.Read(t, "eventlogs", "golden", "nvidia", name))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, k := range rows[0] {
			m[k] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// TestFailureTablesGolden checks the failed tasks, stages and jobs of
// tasks_executors_fail_compressed_eventlog.zstd against spark-rapids-tools'
// expected CSVs, reason texts included. Like those tables, failed tasks
// are those with status FAILED (not Resubmitted or killed ones).
func TestFailureTablesGolden(t *testing.T) {
	app, _ := build(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")

	var failed []*Task
	for _, tk := range app.Tasks {
		if tk.Status == "FAILED" && tk.Reason != "Resubmitted" {
			failed = append(failed, tk)
		}
	}
	want := nvidiaCSV(t, "tasks_failure_eventlog_expectation.csv")
	if len(failed) != len(want) {
		t.Errorf("%d failed tasks, golden has %d", len(failed), len(want))
	}
	for i := 0; i < len(failed) && i < len(want); i++ {
		tk, w := failed[i], want[i]
		got := map[string]string{
			"stageId": fmt.Sprint(tk.StageID), "stageAttemptId": fmt.Sprint(tk.StageAttempt), "taskId": fmt.Sprint(tk.ID),
			"attempt": fmt.Sprint(tk.Attempt), "taskStatus": tk.Status, "speculative": fmt.Sprint(tk.Speculative),
			"duration": fmt.Sprint(tk.DurationMs()), "executorRunTime": fmt.Sprint(tk.Metrics.RunTimeMs),
			"jvmGCTime": fmt.Sprint(tk.Metrics.GCTimeMs), "failureReason": escapeCSV(tk.Message),
		}
		for k, g := range got {
			if g != w[k] {
				t.Errorf("task %s: %s = %.200q, golden %.200q", w["taskId"], k, g, w[k])
			}
		}
	}

	var stages []*Stage
	for _, st := range app.Stages {
		if st.Status == "FAILED" {
			stages = append(stages, st)
		}
	}
	wantStages := nvidiaCSV(t, "stages_failure_eventlog_expectation.csv")
	if len(stages) != len(wantStages) {
		t.Errorf("%d failed stages, golden has %d", len(stages), len(wantStages))
	}
	for i := 0; i < len(stages) && i < len(wantStages); i++ {
		st, w := stages[i], wantStages[i]
		got := map[string]string{"stageId": fmt.Sprint(st.ID), "attemptId": fmt.Sprint(st.Attempt), "name": st.Name,
			"numTasks": fmt.Sprint(st.NumTasks), "failureReason": escapeCSV(st.Failure)}
		for k, g := range got {
			if g != w[k] {
				i := 0
				for i < len(g) && i < len(w[k]) && g[i] == w[k][i] {
					i++
				}
				t.Errorf("stage %s: %s differs from byte %d: %.200q, golden %.200q", w["stageId"], k, i, g[i:], w[k][i:])
			}
		}
	}

	var jobs []*Job
	for _, j := range app.Jobs {
		if j.Result == "JobFailed" {
			jobs = append(jobs, j)
		}
	}
	wantJobs := nvidiaCSV(t, "jobs_failure_eventlog_expectation.csv")
	if len(jobs) != len(wantJobs) {
		t.Fatalf("%d failed jobs, golden has %d", len(jobs), len(wantJobs))
	}
	for i, j := range jobs {
		w := wantJobs[i]
		// Intended difference: the event log gives a failed job's
		// exception message only; spark-rapids-tools prints it as a
		// java.lang.Exception, sparkprof keeps the message.
		got := map[string]string{"jobID": fmt.Sprint(j.ID), "sqlID": fmt.Sprint(j.SQLID), "jobResult": j.Result,
			"failureReason": "java.lang.Exception: " + escapeCSV(j.Failure)}
		for k, g := range got {
			if g != w[k] {
				t.Errorf("job %s: %s = %q, golden %q", w["jobID"], k, g, w[k])
			}
		}
	}
}

// TestSkippedStages: a stage an ended job listed and never ran is skipped,
// as Spark's UI says, while a running job's are still pending; the
// local-1642039451826 log cut before job 2 ends, and whole.
func TestSkippedStages(t *testing.T) {
	whole := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	lines := bytes.SplitAfter(whole, []byte("\n"))
	end := slices.IndexFunc(lines, func(l []byte) bool {
		return bytes.Contains(l, []byte(`"Event":"SparkListenerJobEnd","Job ID":2`))
	})
	if end < 0 {
		t.Fatal("no JobEnd of job 2")
	}
	for _, c := range []struct {
		name                   string
		log                    []byte
		pending, skipped, jobs int
	}{
		{"job 2 running", bytes.Join(lines[:end], nil), 2, 1, 3}, // job 1 skipped one
		{"whole", whole, 0, 6, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "local-1642039451826")
			if err := os.WriteFile(path, c.log, 0o644); err != nil {
				t.Fatal(err)
			}
			app, _ := buildPath(t, path)
			status := map[string]int{}
			for _, st := range app.Stages {
				status[st.Status]++
			}
			if status["PENDING"] != c.pending || status["SKIPPED"] != c.skipped || len(app.Jobs) != c.jobs {
				t.Errorf("stages by status %v, %d jobs; want %d pending, %d skipped, %d jobs", status, len(app.Jobs), c.pending, c.skipped, c.jobs)
			}
		})
	}
}

// TestExecutorRemovedTwice: real Spark 3.5's standalone cluster removes a
// decommissioned executor twice; the first reason is the one kept, as the
// History Server keeps it.
func TestExecutorRemovedTwice(t *testing.T) {
	log := `{"Event":"SparkListenerLogStart","Spark Version":"3.5.9"}
{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1000,"User":"u"}
{"Event":"SparkListenerExecutorAdded","Timestamp":1100,"Executor ID":"1","Executor Info":{"Host":"h","Total Cores":1}}
{"Event":"SparkListenerExecutorRemoved","Timestamp":5237,"Executor ID":"1","Removed Reason":"Executor decommission: Executor 1 is decommissioned."}
{"Event":"SparkListenerExecutorRemoved","Timestamp":5723,"Executor ID":"1","Removed Reason":"Command exited with code 0"}
{"Event":"SparkListenerApplicationEnd","Timestamp":9000}
`
	path := filepath.Join(t.TempDir(), "app-1")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	app, _ := buildPath(t, path)
	for _, e := range app.Executors {
		if e.ID == "1" && (e.RemovedMs != 5237 || e.RemovalReason != "Executor decommission: Executor 1 is decommissioned.") {
			t.Errorf("executor 1 removed at %d for %q; want the first removal, at 5237 for its decommission", e.RemovedMs, e.RemovalReason)
		}
	}
}

// TestRemovalOfUnaddedExecutor: Spark logs a removal for each executor
// launched while the app shut down, which never registered; the History
// Server lists none of them, nor does the model.
func TestRemovalOfUnaddedExecutor(t *testing.T) {
	log := `{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1000,"User":"u"}
{"Event":"SparkListenerExecutorAdded","Timestamp":1100,"Executor ID":"0","Executor Info":{"Host":"h","Total Cores":1}}
{"Event":"SparkListenerExecutorRemoved","Timestamp":1900,"Executor ID":"0","Removed Reason":"Command exited with code 143"}
{"Event":"SparkListenerExecutorRemoved","Timestamp":1901,"Executor ID":"2","Removed Reason":"java.lang.IllegalStateException: Shutdown hooks cannot be modified during shutdown."}
{"Event":"SparkListenerApplicationEnd","Timestamp":2000}
`
	path := filepath.Join(t.TempDir(), "app-1")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	app, _ := buildPath(t, path)
	var got []string
	for _, e := range app.Executors {
		got = append(got, fmt.Sprintf("%s removed at %d", e.ID, e.RemovedMs))
	}
	if want := []string{"0 removed at 1900"}; !reflect.DeepEqual(got, want) {
		t.Errorf("executors %q, want %q", got, want)
	}
}

// TestExitCode: Spark 4's ApplicationEnd logs the driver's exit code.
func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		end  string
		want string
	}{
		{`{"Event":"SparkListenerApplicationEnd","Timestamp":2000,"ExitCode":1}`, "1"},
		{`{"Event":"SparkListenerApplicationEnd","Timestamp":2000,"ExitCode":0}`, "0"},
		{`{"Event":"SparkListenerApplicationEnd","Timestamp":2000}`, "none"},
	} {
		path := filepath.Join(t.TempDir(), "app-1")
		log := `{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1000,"User":"u"}` + "\n" + tt.end + "\n"
		if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
		app, _ := buildPath(t, path)
		got := "none"
		if app.Summary.ExitCode != nil {
			got = strconv.Itoa(*app.Summary.ExitCode)
		}
		if got != tt.want {
			t.Errorf("%s: exit code %s, want %s", tt.end, got, tt.want)
		}
	}
}
