package analysis

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/spark"
)

func TestStragglerCause(t *testing.T) {
	// task runs 1 s (launch to finish) on host with metrics m.
	task := func(host string, ms int64, m spark.TaskMetrics) *spark.Task {
		if m.RunTimeMs == 0 {
			m.RunTimeMs = ms
		}
		return &spark.Task{Host: host, LaunchMs: 1000, FinishMs: 1000 + ms, Metrics: m}
	}
	typical := func(host string) *spark.Task {
		return task(host, 1000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000, GCTimeMs: 10})
	}
	others := []*spark.Task{typical("a"), typical("a"), typical("b"), typical("b"), typical("c")}
	tests := []struct {
		name     string
		t        *spark.Task
		others   []*spark.Task
		kind     string
		phrase   string
		knownNot bool
	}{
		{"bytes", task("a", 9000, spark.TaskMetrics{InputBytes: 900 << 20, InputRecords: 1000}), others, "skew", "it read 9.0x the median task's data (900.0 MiB against 100.0 MiB)", false},
		{"records", task("a", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 5000}), others, "skew", "it read 5.0x the median task's records (5000 against 1000)", false},
		{"gc", task("a", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000, GCTimeMs: 4000}), others, "gc", "it spent 44% of its run time in GC (4.0 s)", false},
		{"shuffle wait", task("a", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000, ShuffleFetchWaitMs: 5000}), others, "shuffle-wait", "waited 56% of its run time for shuffle data", false},
		{"spill", task("a", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000, DiskSpilled: 1 << 30}), others, "spill", "it spilled 1.0 GiB to disk", false},
		{"slow host", task("d", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000}),
			append([]*spark.Task{task("d", 4000, spark.TaskMetrics{InputBytes: 100 << 20}), task("d", 5000, spark.TaskMetrics{InputBytes: 100 << 20})}, others...),
			"slow-host", "the other tasks on its host d ran 5.0x the median too", false},
		{"deserialize", task("a", 9000, spark.TaskMetrics{RunTimeMs: 900, DeserializeMs: 8000, InputBytes: 100 << 20, InputRecords: 1000}), others, "deserialize", "8.0 s of its 9.0 s went to deserialising", false},
		{"off cpu", task("a", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000, CPUTimeNs: 1e9}), others, "off-cpu", "it ran on a CPU 11% of its run time", false},
		{"compute", task("a", 9000, spark.TaskMetrics{InputBytes: 100 << 20, InputRecords: 1000}), others, "compute", "its own work took the time", false},
		{"from a log: no metrics", &spark.Task{Host: "a", LaunchMs: 1, FinishMs: 9001}, others, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, phrase, sugg, ok := stragglerCause(tt.t, tt.others, false, DefaultThresholds)
			if ok == tt.knownNot {
				t.Fatalf("known %v, want %v", ok, !tt.knownNot)
			}
			if kind != tt.kind || !strings.Contains(phrase, tt.phrase) || (ok && sugg == "") {
				t.Errorf("cause %q: %q (suggestion %q), want %q: %q", kind, phrase, sugg, tt.kind, tt.phrase)
			}
		})
	}
}

// TestStragglerCauseCorpus: eventlog_4nodes_8cores_dynamic_alloc's task 29
// was the first task of executor 6, added by dynamic allocation 0.75 s
// before: it ran 625 ms like the others after 15.1 s deserialising. In
// spark_event_log_example, stage 1's task 124 spent 3.0 s of its 9.7 s in
// GC.
func TestStragglerCauseCorpus(t *testing.T) {
	tests := []struct {
		rel  []string
		want string
	}{
		{[]string{"nvidia", "eventlog_4nodes_8cores_dynamic_alloc.zstd"}, "task 29 (partition 3, executor 6) ran 15.8 s, 19.2x the median task (821 ms); 15.1 s of its 15.8 s went to deserialising the task before it ran, one of its executor's first tasks"},
		{[]string{"sparklint", "spark_event_log_example"}, "task 124 (partition 56, executor 2) ran 9.7 s, 4.6x the median task (2.1 s); it spent 31% of its run time in GC (3.0 s)"},
	}
	for _, tt := range tests {
		t.Run(tt.rel[1], func(t *testing.T) {
			var msgs []string
			for _, f := range Analyze(fromEventLog(t, append([]string{"eventlogs"}, tt.rel...)...), DefaultThresholds) {
				msgs = append(msgs, f.Message)
				if also, ok := f.Evidence["also"].([]string); ok {
					msgs = append(msgs, also...)
				}
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tt.want) {
				t.Errorf("no finding says %q:\n%s", tt.want, strings.Join(msgs, "\n"))
			}
		})
	}
}

// TestWarmUpOverhead: application_1603128018386_7846's stage 0 ran each
// executor's first task, which spent ~500 ms deserialising against 3–5 ms
// for the later tasks: its overhead is the executors' warm-up, not tasks
// too small, and is only information. directory_source's stage 3 waited
// ~350 ms per task to be scheduled, on warm executors: a warning.
func TestWarmUpOverhead(t *testing.T) {
	tests := []struct {
		rel      []string
		severity string
		message  string
	}{
		{[]string{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"}, Info, "stage 0: 47% of task time is scheduling and (de)serialisation, 100% of it in the executors' first tasks"},
		{[]string{"sparklint", "directory_source", "event_log_1"}, Warning, "stage 3: 35% of task time is scheduling and (de)serialisation, not work"},
	}
	for _, tt := range tests {
		t.Run(tt.rel[1], func(t *testing.T) {
			fs := find(Analyze(fromEventLog(t, append([]string{"eventlogs"}, tt.rel...)...), DefaultThresholds), KindSchedulerOverhead)
			if len(fs) != 1 || fs[0].Severity != tt.severity || !strings.HasPrefix(fs[0].Message, tt.message) {
				t.Errorf("findings %+v, want one %s: %q", fs, tt.severity, tt.message)
			}
		})
	}
}

func TestFirstTasks(t *testing.T) {
	task := func(id int64, exec string, launch, finish int64) *spark.Task {
		return &spark.Task{ID: id, ExecutorID: exec, LaunchMs: launch, FinishMs: finish}
	}
	got := firstTasks([]*spark.Task{
		task(1, "1", 100, 900), task(2, "1", 110, 950), task(3, "1", 905, 950), // 3 starts after 1 ended
		task(4, "2", 500, 0), task(5, "2", 600, 700), // 4 still runs: only it
	})
	want := map[int64]bool{1: true, 2: true, 4: true}
	if len(got) != len(want) {
		t.Fatalf("first tasks %v, want %v", got, want)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("first tasks %v, want %v", got, want)
		}
	}
}

// TestSkewWithoutCost: a task that read ten times the others' data but ran
// as long as they did is information, not a warning.
func TestSkewWithoutCost(t *testing.T) {
	var tasks []*spark.Task
	for i := range 5 {
		in := int64(100 << 20)
		if i == 2 {
			in *= 10
		}
		tasks = append(tasks, &spark.Task{ID: int64(i), Status: "SUCCESS", ExecutorID: "1", LaunchMs: 1000, FinishMs: 61000,
			Metrics: spark.TaskMetrics{RunTimeMs: 60000, InputBytes: in}})
	}
	st := &spark.Stage{ID: 7, FirstLaunchMs: 1000, CompleteMs: 61000}
	f, ok := stageVerdict(st, tasks, stageContext{}, DefaultThresholds)
	if !ok || f.Kind != KindSkew || f.Severity != Info || !strings.Contains(f.Message, "yet ran about as long as the others (1.0 min against a median of 1.0 min)") {
		t.Errorf("finding %+v, want skew as information", f)
	}
}

// TestDriverGaps: rp_sql_eventlog's app started 78.0 s before its job 0,
// whose first task launched 6.8 s later; after it, 20.9 s passed before
// job 1 (times from the raw events).
func TestDriverGaps(t *testing.T) {
	fs := find(Analyze(fromEventLog(t, "eventlogs", "nvidia", "rp_sql_eventlog.zstd"), DefaultThresholds), KindDriverTime)
	want := "; the longest: 1.3 min from the app's start to job 0, 20.9 s before job 1, 6.8 s with job 0 waiting for its first task"
	if len(fs) != 1 || !strings.HasSuffix(fs[0].Message, want) {
		t.Errorf("findings %+v, want one ending %q", fs, want)
	}
}

func TestLongestGaps(t *testing.T) {
	app := &spark.App{
		Summary: spark.Summary{StartMs: 1000, EndMs: 100_000},
		Jobs:    []*spark.Job{{ID: 0, SubmitMs: 5000}, {ID: 1, SubmitMs: 30_000}, {ID: 2, SubmitMs: 31_000}},
	}
	busy := [][2]int64{{8000, 20_000}, {40_000, 50_000}, {52_000, 60_000}}
	var got []string
	for _, g := range longestGaps(app, busy, 10) {
		got = append(got, fmt.Sprintf("%d-%d %s", g.StartMs, g.EndMs, g.Before))
	}
	want := []string{
		"60000-100000 after the last task, before the app's end",
		"20000-30000 before job 1",
		"31000-40000 with job 2 waiting for its first task",
		"1000-5000 from the app's start to job 0",
		"5000-8000 with job 0 waiting for its first task",
		"50000-52000 between tasks",
		"30000-31000 from job 1 to job 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("gaps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTinyTasksOfShufflePartitions: rp_sql's stage 3 read a shuffle in 200
// tasks of 47 ms, and the app left spark.sql.shuffle.partitions at its
// default of 200: the suggestion says so.
func TestTinyTasksOfShufflePartitions(t *testing.T) {
	fs := find(Analyze(fromEventLog(t, "eventlogs", "nvidia", "rp_sql_eventlog.zstd"), DefaultThresholds), KindTaskSize)
	want := "its 200 tasks are spark.sql.shuffle.partitions's default"
	if len(fs) != 1 || !strings.HasPrefix(fs[0].Suggestion, want) {
		t.Errorf("findings %+v, want one suggesting %q", fs, want)
	}
}
