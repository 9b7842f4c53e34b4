package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

func fromEventLog(t *testing.T, rel ...string) Input {
	t.Helper()
	r, err := eventlog.Open(corpus.Path(t, rel...))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	app, rep, err := spark.Build(r)
	if err != nil {
		t.Fatal(err)
	}
	return Input{App: app, Report: rep}
}

func fromLog(t *testing.T, rel ...string) Input {
	t.Helper()
	logs, err := applog.OpenAll(corpus.Path(t, rel...), applog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Input{App: spark.FromLogs(logs), Logs: logs}
}

func find(fs []Finding, kind Kind) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// TestStragglerRiddles checks that both of Phil's straggler riddles, from
// their console logs alone, name task 0 as the straggler with the ratio the
// corpus README computes from the TaskSetManager durations.
func TestStragglerRiddles(t *testing.T) {
	tests := []struct {
		name          string
		rel           []string
		taskMs, ratio float64
	}{
		{"Scala ProfileStraggler", []string{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"}, 1_070_586, 7.79},
		{"PySpark profile_straggler", []string{"applogs", "phil_stopwatch", "profile_straggler", "Straggler_PySpark.log.gz"}, 566_462, 14.16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := find(Analyze(fromLog(t, tt.rel...), DefaultThresholds), KindStraggler)
			if len(fs) != 1 {
				t.Fatalf("%d straggler findings, want 1", len(fs))
			}
			f := fs[0]
			if f.TaskID == nil || *f.TaskID != 0 || f.StageID == nil || *f.StageID != 0 {
				t.Errorf("straggler = task %v of stage %v, want task 0 of stage 0: %s", f.TaskID, f.StageID, f.Message)
			}
			ev := f.Evidence.(*StragglerEvidence)
			if ms := ev.TaskMs; float64(ms) < tt.taskMs-1000 || float64(ms) > tt.taskMs+1000 {
				t.Errorf("task ran %d ms, want about %.0f", ms, tt.taskMs)
			}
			if r := ev.Ratio; r < tt.ratio-0.2 || r > tt.ratio+0.2 {
				t.Errorf("ratio %.2f, want about %.2f", r, tt.ratio)
			}
		})
	}
}

// TestFailuresGrouped checks the 53 failed task attempts of
// tasks_executors_fail_compressed_eventlog.zstd grouped by reason.
func TestFailuresGrouped(t *testing.T) {
	fs := find(Analyze(fromEventLog(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"), DefaultThresholds), KindFailures)
	if len(fs) != 1 {
		t.Fatalf("%d failures findings, want 1", len(fs))
	}
	got := map[string]int{}
	ev := fs[0].Evidence.(*FailuresEvidence)
	for _, g := range ev.Groups {
		got[g.Reason] += g.Count
	}
	want := map[string]int{"Resubmitted": 50, "FetchFailed": 2, "ExecutorLostFailure": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d tasks, want %d (groups %v)", k, got[k], v, got)
		}
	}
	if ev.Tasks != 53 || fs[0].Severity != Critical {
		t.Errorf("finding %+v", fs[0])
	}
}

// TestSmallEffects: findings about amounts too small to act on are left
// out, with the thresholds at their defaults and with the minimums taken
// away; and the failures message counts what failed in words.
func TestSmallEffects(t *testing.T) {
	none := DefaultThresholds
	none.GCMinMs, none.IdleMinCoreMs, none.DriverMinMs = 0, 0, 0
	tests := []struct {
		name             string
		rel              []string
		kind             Kind
		th               Thresholds
		want             int
		message, without string
	}{
		// Spark Pi: 11 ms of GC in 20 ms of task time, 4% of the 265 ms
		// its executor ran the task, and 2 executors idle for 0.01
		// core-hours.
		{"gc of milliseconds", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindGC, DefaultThresholds, 0, "", ""},
		{"gc of milliseconds, no minimum", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindGC, none, 0, "", ""},
		// Local mode, 8 tasks at once: their GC times add up to 4.5 s of
		// 27.7 s, each counting the driver JVM's collections; the JVM
		// spent 381 ms of the 2.5 s its tasks ran in GC.
		{"gc, no minimum", []string{"nvidia", "aqeshuffle_eventlog.zstd"}, KindGC, none, 1, "executors spent 15% of their time in GC while its tasks ran (381 ms of 2.5 s; the tasks' own GC times add up to 4.5 s", ""},
		{"idle seconds", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindIdleExecutors, DefaultThresholds, 0, "", ""},
		{"idle, no minimum", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindIdleExecutors, none, 1, "", ""},
		{"gc of seconds", []string{"nvidia", "eventlog_4nodes_8cores_dynamic_alloc.zstd"}, KindGC, DefaultThresholds, 1, "stage 4: executors spent 14% of their time in GC while its tasks ran (1.1 s of 7.4 s", ""},
		{"driver time of seconds", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindDriverTime, DefaultThresholds, 0, "", ""},
		{"driver time, no minimum", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindDriverTime, none, 1, "97% of the application's time (8.1 s of 8.4 s)", ""},
		{"driver time of minutes", []string{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"}, KindDriverTime, DefaultThresholds, 1, "88% of the application's time (1.4 min of 1.6 min)", ""},
		{"skew that cost time", []string{"nvidia", "nds_q88_photon_db_13_3.zstd"}, KindSkew, DefaultThresholds, 1, "task 1443 read 96.3 MiB, 52.1x the median task (1.8 MiB), and ran 2.6 s, 2.6x the median task (1.0 s)", ""},
		{"idle core-hours", []string{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"}, KindIdleExecutors, DefaultThresholds, 1, "0.70 core-hours", ""},
		{"what-if without gain", []string{"sparkscope", "app-20231025121456-0004-eventLog-finished"}, KindWhatIf, DefaultThresholds, 1, "would not shorten the run: about 8.4 s either way (replaying the observed task times)", "where the run took"},
		// The replay packs stage 0's one-minute straggler first: 4.3 min
		// on the app's 3 executors, against the 5.2 min it ran.
		{"what-if, replay shorter than the run", []string{"sparklint", "spark_event_log_example"}, KindWhatIf, DefaultThresholds, 1, "about 4.0 min instead of 4.3 min (replaying the observed task times: 4.3 min on 3 executors, where the run took 5.2 min)", ""},
		// Dynamic allocation ran 15 executors, at most 7 at once.
		{"what-if under dynamic allocation", []string{"nvidia", "eventlog_4nodes_8cores_dynamic_alloc.zstd"}, KindWhatIf, DefaultThresholds, 1, "14 executors instead of 7 (the most that ran at once, of 15 in all)", ""},
		{"one executor lost", []string{"nvidia", "rp_sql_eventlog.zstd"}, KindExecutorLoss, DefaultThresholds, 1, "1 executor lost or excluded during the run: executor 1 on host9 (Container container_e87_1603128018386_7759_01_000002 exited from explicit termi…)", ""},
		{"failures", []string{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"}, KindFailures, DefaultThresholds, 1, "53 task attempts did not succeed: 50 Resubmitted, 2 FetchFailed, 1 ExecutorLostFailure; 1 stage attempt and 1 job failed", ""},
		{"failures, none of stages or jobs", []string{"apache", "app-20161116163331-0000"}, KindFailures, DefaultThresholds, 1, "8 task attempts did not succeed: 8 ExceptionFailure", "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := find(Analyze(fromEventLog(t, append([]string{"eventlogs"}, tt.rel...)...), tt.th), tt.kind)
			if len(fs) != tt.want {
				t.Fatalf("%d %s findings, want %d: %+v", len(fs), tt.kind, tt.want, fs)
			}
			if len(fs) == 0 {
				return
			}
			if m := fs[0].Message; !strings.Contains(m, tt.message) {
				t.Errorf("message %q, want %q in it", m, tt.message)
			}
			if m := fs[0].Message; tt.without != "" && strings.Contains(m, tt.without) {
				t.Errorf("message %q, want no %q in it", m, tt.without)
			}
		})
	}
}

// TestFoldStages: of the seven stages of eventlog_4nodes_8cores_dynamic_alloc
// whose executors spent 10 % or more of their time in GC (at least 100 ms,
// of any cost to the app), the three with the most effect keep their
// findings and one finding names the four others.
func TestFoldStages(t *testing.T) {
	th := DefaultThresholds
	th.GCMinMs, th.GCAppShare = 100, 0
	fs := find(Analyze(fromEventLog(t, "eventlogs", "nvidia", "eventlog_4nodes_8cores_dynamic_alloc.zstd"), th), KindGC)
	if len(fs) != maxStageFindings+1 {
		t.Fatalf("%d gc findings, want %d and a folded one: %+v", len(fs), maxStageFindings, fs)
	}
	seen := map[int]bool{}
	for _, f := range fs[:maxStageFindings] {
		if f.StageID == nil {
			t.Fatalf("finding %q has no stage", f.Message)
		}
		seen[*f.StageID] = true
	}
	folded := fs[maxStageFindings]
	ev, _ := folded.Evidence.(*FoldedEvidence)
	if ev == nil {
		t.Fatalf("folded finding %+v", folded)
	}
	stages, messages := ev.Stages, ev.Messages
	if folded.StageID != nil || len(stages) != 4 || len(messages) != 4 || !strings.HasPrefix(folded.Message, "4 more stages alike: ") {
		t.Fatalf("folded finding %+v", folded)
	}
	for i, id := range stages {
		if seen[id] {
			t.Errorf("stage %d is both kept and folded", id)
		}
		if !strings.HasPrefix(messages[i], fmt.Sprintf("stage %d: ", id)) {
			t.Errorf("stage %d folded with the message %q", id, messages[i])
		}
		seen[id] = true
	}
	if len(seen) != 7 {
		t.Errorf("%d stages with a gc finding, want 7", len(seen))
	}
}

// TestEveryEventLog analyses every event log of the corpus: no panic, a
// report that encodes, and warnings where the log is incomplete.
func TestEveryEventLog(t *testing.T) {
	root := corpus.Path(t, "eventlogs")
	var logs []string
	for _, dir := range []string{"apache", "nvidia", "sparklint", "sparklens", "sparkscope"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := filepath.Join(dir, e.Name())
			if e.Name() == "directory_source" {
				name = filepath.Join(name, "event_log_1")
			}
			logs = append(logs, name)
		}
	}
	for _, rel := range logs {
		t.Run(rel, func(t *testing.T) {
			in := fromEventLog(t, "eventlogs", rel)
			fs := Analyze(in, DefaultThresholds)
			var b bytes.Buffer
			if err := json.NewEncoder(&b).Encode(NewReport(in, fs, nil, nil)); err != nil {
				t.Fatal(err)
			}
			if in.Report.MissingEnd && len(find(fs, KindWarnings)) == 0 {
				t.Errorf("log without ApplicationEnd but no warning")
			}
		})
	}
}

func TestMakespan(t *testing.T) {
	tests := []struct {
		durs  []int64
		slots int
		want  int64
	}{
		{[]int64{10, 10, 10, 10}, 2, 20},
		{[]int64{30, 10, 10, 10}, 2, 30},
		{[]int64{5}, 8, 5},
		{[]int64{7, 5, 4, 3, 1}, 2, 10},
	}
	for _, tt := range tests {
		if got := makespan(tt.durs, tt.slots); got != tt.want {
			t.Errorf("makespan(%v, %d) = %d, want %d", tt.durs, tt.slots, got, tt.want)
		}
	}
}

// TestCriticalPath: within a job the path follows parent links; jobs that
// ran at once count by the longest among them; stages no job named are
// jobs of their own; groups of jobs that ran one after another add up.
func TestCriticalPath(t *testing.T) {
	// stage builds a stage of job that ran from start for ms.
	stage := func(id, job int, start, ms int64, parents ...int) *spark.Stage {
		return &spark.Stage{ID: id, JobID: job, SubmitMs: start, CompleteMs: start + ms, DurationMs: ms, Parents: parents}
	}
	tests := []struct {
		name    string
		stages  []*spark.Stage
		path    []int
		stages5 []int
		total   int64
		jobs    []int
		message string
	}{
		{
			name: "one job, a diamond",
			stages: []*spark.Stage{
				stage(0, 0, 0, 100), stage(1, 0, 100, 50, 0), stage(2, 0, 100, 300, 0), stage(3, 0, 400, 10, 1, 2),
			},
			path: []int{0, 2, 3}, stages5: []int{0, 2, 3}, total: 410, jobs: []int{0},
			message: "critical path through the stage graph: stages 0 → 2 → 3, 410 ms",
		},
		{
			name: "jobs one after another",
			stages: []*spark.Stage{
				stage(0, 0, 0, 100), stage(1, 0, 100, 200, 0),
				stage(2, 1, 1000, 700),
				stage(3, 2, 2000, 50), stage(4, 2, 2050, 60, 3), stage(5, 2, 2050, 20, 3),
			},
			path: []int{0, 1, 2, 3, 4}, stages5: []int{0, 1, 2, 3, 4}, total: 1110, jobs: []int{0, 1, 2},
			message: "critical path: 1.1 s of stages (37% of the 3.0 s run) in 3 jobs that ran one after another (5 stages on the path); the longest: stage 2 (700 ms), stage 1 (200 ms)",
		},
		{
			name: "jobs at once count by the longest",
			stages: []*spark.Stage{
				stage(0, 0, 0, 1000),
				stage(1, 1, 100, 2000), // runs while job 0 does, and longer
				stage(2, 2, 150, 300),
				stage(3, 3, 2500, 100),
			},
			path: []int{1, 3}, stages5: []int{1, 3}, total: 2100, jobs: []int{1, 3},
			message: "in 2 jobs that ran one after another",
		},
		{
			name: "stages no job named, and a skipped one",
			stages: []*spark.Stage{
				stage(0, -1, 0, 100), stage(1, -1, 500, 200), stage(2, 0, 1000, 300), stage(3, 0, 0, 0, 2),
			},
			path: []int{0, 1, 2}, stages5: []int{0, 1, 2}, total: 600, jobs: []int{0},
			message: "in 3 jobs",
		},
		{
			name:   "a cycle in a damaged log",
			stages: []*spark.Stage{stage(0, 0, 0, 100, 1), stage(1, 0, 100, 200, 0)},
			total:  300, jobs: []int{0},
			message: "critical path through the stage graph: stages ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &spark.App{Stages: tt.stages}
			app.DurationMs = 3000
			f, ok := criticalPathRule(&appFacts{Input: Input{App: app}}, DefaultThresholds)
			if !ok {
				t.Fatal("no finding")
			}
			if !strings.Contains(f.Message, tt.message) {
				t.Errorf("message %q, want %q in it", f.Message, tt.message)
			}
			ev := f.Evidence.(*CriticalPathEvidence)
			if got := ev.DurationMs; got != tt.total {
				t.Errorf("durationMs %v, want %d", got, tt.total)
			}
			if got := ev.Jobs; fmt.Sprint(got) != fmt.Sprint(tt.jobs) {
				t.Errorf("jobs %v, want %v", got, tt.jobs)
			}
			if tt.path == nil {
				return
			}
			if got := ev.Path; fmt.Sprint(got) != fmt.Sprint(tt.path) {
				t.Errorf("path %v, want %v", got, tt.path)
			}
			if got := ev.Stages; fmt.Sprint(got) != fmt.Sprint(tt.stages5) {
				t.Errorf("stages %v, want %v", got, tt.stages5)
			}
		})
	}
}

// TestCriticalPathOverJobs: application_1603128018386_7846 ran 80 jobs one
// after another (five of them without a JobStart, whose stages carry no job
// id); its critical path goes through every one of them, not only the
// longest job's stages 0 → 1 → 2, and takes 13 % of the run.
func TestCriticalPathOverJobs(t *testing.T) {
	in := fromEventLog(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")
	fs := find(Analyze(in, DefaultThresholds), KindCriticalPath)
	if len(fs) != 1 {
		t.Fatalf("%d critical-path findings, want 1", len(fs))
	}
	f := fs[0]
	// A path of 135 stages marks its five longest.
	ev := f.Evidence.(*CriticalPathEvidence)
	if got := fmt.Sprint(ev.Stages); got != "[0 4 1 238 3]" {
		t.Errorf("marked stages %s, want the five longest", got)
	}
	want := "critical path: 12.9 s of stages (13% of the 1.6 min run) in 80 jobs that ran one after another (135 stages on the path); the longest: stage 0 (1.5 s), stage 4 (607 ms)"
	if !strings.HasPrefix(f.Message, want) {
		t.Errorf("message %q, want it to start %q", f.Message, want)
	}
	var jobMs int64
	for _, j := range in.App.Jobs {
		jobMs += j.DurationMs
	}
	if total := ev.DurationMs; total > jobMs || total > in.App.DurationMs {
		t.Errorf("path of %d ms, longer than the jobs (%d ms) or the run (%d ms)", total, jobMs, in.App.DurationMs)
	}
}

// TestDriverLog: tasks read from a log carry no metrics, so none of their
// time reads as scheduler overhead; a warning whose text starts on the line
// after its header is named by that text; repeated runs of lines are a
// log-chunks finding.
func TestDriverLog(t *testing.T) {
	fs := Analyze(fromLog(t, "applogs", "nvidia", "driverlog"), DefaultThresholds)
	if got := find(fs, KindSchedulerOverhead); len(got) != 0 {
		t.Errorf("scheduler-overhead findings from a log without task metrics: %+v", got)
	}
	errs := find(fs, KindErrors)
	if len(errs) != 1 {
		t.Fatalf("%d errors findings, want 1", len(errs))
	}
	if want := "newest first: !Exec <CollectLimitExec> cannot run on GPU"; !strings.Contains(errs[0].Message, want) {
		t.Errorf("message %q, want %q in it", errs[0].Message, want)
	}
	// Of its 298 lines, 18 are a run of task lines that repeats.
	chunks := find(fs, KindLogChunks)
	if len(chunks) != 1 || chunks[0].Evidence.(*LogChunksEvidence).Lines != 298 ||
		!strings.HasPrefix(chunks[0].Message, "the most repeated run of log lines covers 18 of 298 lines: ") {
		t.Errorf("log-chunks findings %+v, want one covering 18 of 298 lines", chunks)
	}
}

// TestStragglerHotspot: with the riddles' Uber stack samples, the straggler
// finding says where task 0's running samples went: in the Scala job, 842
// of 1,069 end in TraversableOnce.nonEmpty (the quadratic List append; the
// corpus README), called from the job's closure; in the PySpark job all 566
// are the JVM reading from its Python worker.
func TestStragglerHotspot(t *testing.T) {
	tests := []struct {
		dir     string
		log     string
		want    Hotspot
		message string
	}{
		{"ProfileStraggler", "JobStraggler.log.gz",
			Hotspot{Type: "samples", Samples: 1069, Leaf: "scala.collection.TraversableOnce$class.nonEmpty", Share: 0.79,
				Code: "profile.sparkjobs.JobStraggler$$anonfun$3$$anonfun$apply$1.apply$mcVJ$sp"},
			"; 79% of its 1069 stack samples end in scala.collection.TraversableOnce$class.nonEmpty, called from profile.sparkjobs.JobStraggler"},
		{"profile_straggler", "Straggler_PySpark.log.gz",
			Hotspot{Type: "samples", Samples: 566, Leaf: "java.net.SocketInputStream.socketRead0", Share: 1, Python: true},
			"the thread waits for its Python worker, so the time went to Python code"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			in := fromLog(t, "applogs", "phil_stopwatch", tt.dir, tt.log)
			p, err := format.Load(corpus.Path(t, "jvm-profiler", "phil_stopwatch", tt.dir, "Stacktrace.json.gz"), format.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in.Profiles = []*profile.Profile{p}
			fs := find(Analyze(in, DefaultThresholds), KindStraggler)
			if len(fs) != 1 {
				t.Fatalf("%d straggler findings, want 1", len(fs))
			}
			ev := fs[0].Evidence.(*StragglerEvidence)
			if ev.Profile == nil || *ev.Profile != tt.want {
				t.Errorf("profile evidence %+v, want %+v", ev.Profile, tt.want)
			}
			if !strings.Contains(fs[0].Message, tt.message) {
				t.Errorf("message %q, want %q in it", fs[0].Message, tt.message)
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
		severity Severity
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
