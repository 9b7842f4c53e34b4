package attribution

import (
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// TestApplyWorkerRuns: a Python worker's sample belongs to the task its
// executor ran at the time, or to the stage of the tasks that ran; the
// daemon's samples, and a worker's waiting for its next task, to none.
func TestApplyWorkerRuns(t *testing.T) {
	const s = int64(1e9) // a second in ns
	runs := []TaskRun{
		{ThreadID: 40, StageID: 3, Partition: 0, TaskID: 7, StartMs: 10_000, EndMs: 0}, // drained running, then ended
		{ThreadID: 40, StageID: 3, Partition: 0, TaskID: 7, StartMs: 10_000, EndMs: 12_000},
		{ThreadID: 40, StageID: 3, Partition: 1, TaskID: 8, StartMs: 13_000, EndMs: 16_000},
		{ThreadID: 41, StageID: 3, Partition: 2, TaskID: 9, StartMs: 15_000, EndMs: 17_000},
		{ThreadID: 41, StageID: 5, Partition: 0, TaskID: 10, StartMs: 17_500, EndMs: 19_000},
		{ThreadID: 40, StageID: 4, Partition: 0, TaskID: 11, StartMs: 18_000, EndMs: 20_000},
	}
	worker := "pyspark/daemon.py:<module>;pyspark/daemon.py:manager;pyspark/worker.py:main;job.py:slow_parse"
	daemon := "pyspark/daemon.py:<module>;pyspark/daemon.py:manager"
	// A reused worker waiting for its next task, as Spark 3.5's and 4.3's
	// wait, and one reading rows of its task.
	waiting35 := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/serializers.py:read_int"
	waiting43 := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/worker.py:invoke_udf;" +
		"pyspark/messages/spark_message_receiver.py:SparkMessageReceiver._state_transition.<locals>.decorator.<locals>.wrapper;" +
		"pyspark/messages/spark_message_receiver.py:SparkMessageReceiver.get_init_message;" +
		"pyspark/messages/socket/spark_socket_message_receiver.py:SparkSocketMessageReceiver._do_get_init_message;pyspark/serializers.py:read_int"
	reading := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/worker.py:process;pyspark/serializers.py:load_stream;pyspark/serializers.py:read_int"
	for _, tc := range []struct {
		name        string
		stack       string
		at          int64
		stage, task string // "" for none
	}{
		{"the one task running", worker, 11 * s, "3", "7"},
		{"the daemon", daemon, 11 * s, "", ""},
		{"waiting for the next task (Spark 3.5)", waiting35, 11 * s, "", ""},
		{"waiting for the next task (Spark 4.3)", waiting43, 11 * s, "", ""},
		{"reading the task's rows", reading, 11 * s, "3", "7"},
		{"between tasks", worker, 12*s + 500e6, "", ""},
		{"two tasks of one stage", worker, 15*s + 500e6, "3", ""},
		{"tasks of two stages", worker, 18*s + 500e6, "", ""},
		{"untimed", worker, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := profile.New()
			typ := p.AddType(profile.TypeWall)
			frames := strings.Split(tc.stack, ";")
			slices.Reverse(frames)
			ls := p.AddLabels(profile.Labels{{Name: "spark_executor_id", Value: "1"}})
			p.Samples = append(p.Samples, profile.Sample{Value: 1e7, Time: tc.at, Stack: p.AddPythonStack(frames), Labels: ls, Type: typ})
			n := ApplyWorkerRuns(p, runs)
			got := p.LabelSet(p.Samples[0].Labels)
			stage, _ := got.Get(profile.LabelStageID)
			task, _ := got.Get(profile.LabelTaskID)
			if stage != tc.stage || task != tc.task {
				t.Errorf("labels %v, want stage %q task %q", got, tc.stage, tc.task)
			}
			if exec, _ := got.Get("spark_executor_id"); exec != "1" {
				t.Errorf("labels %v lost the executor", got)
			}
			if want := map[bool]int{true: 1}[tc.task != ""]; n != want {
				t.Errorf("ApplyWorkerRuns labelled %d samples with a task, want %d", n, want)
			}
		})
	}
}

// TestApplyWorkerRunsSlots: on an executor of two task slots, each
// stretch of a worker's serving, between its waits for a task or the
// daemon's loop between two, goes to the task that ended nearest its end,
// or began nearest its start when the trace cuts it or two tasks ended as
// near; a stretch two tasks match as well both ways gets their stage
// alone.
func TestApplyWorkerRunsSlots(t *testing.T) {
	serve := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/worker.py:process;job.py:part"
	wait := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/serializers.py:read_int"
	// The daemon's loop in the worker between two tasks (gc.collect), the
	// wait for the next too short to be sampled.
	between := "pyspark/daemon.py:<module>;pyspark/daemon.py:manager"
	runs := []TaskRun{
		{ThreadID: 40, StageID: 3, TaskID: 18, StartMs: 5_000, EndMs: 8_000},
		{ThreadID: 41, StageID: 3, TaskID: 19, StartMs: 5_030, EndMs: 8_050},
		{ThreadID: 40, StageID: 3, TaskID: 20, StartMs: 10_000, EndMs: 14_000},
		{ThreadID: 41, StageID: 3, TaskID: 21, StartMs: 10_050, EndMs: 16_300},
		{ThreadID: 40, StageID: 3, TaskID: 22, StartMs: 14_500, EndMs: 18_000},
		{ThreadID: 41, StageID: 3, TaskID: 23, StartMs: 16_200, EndMs: 18_040},
		{ThreadID: 40, StageID: 4, TaskID: 24, StartMs: 19_000, EndMs: 0},
		{ThreadID: 41, StageID: 4, TaskID: 25, StartMs: 19_500, EndMs: 0},
	}
	// The worker's timeline, in 100 ms samples: what it did from each ms on.
	checkWorkerTimeline(t, "", runs, 20_000, []span{
		{4_900, wait, ""},
		{5_100, serve, "-"}, // begins and ends within 100 ms of both tasks 18 and 19
		{8_000, wait, ""},
		{10_100, serve, "20"}, // ends 50 ms before task 20, 2 s before task 21
		{14_000, between, ""},
		{14_600, serve, "22"}, // ends with task 22 and 40 ms before task 23; began 100 ms after 22, 1.6 s before 23
		{18_000, wait, ""},
		{19_100, serve, "24"}, // the trace ends before the stretch does: by its start
	})
}

// TestApplyWorkerRunsBackToBack: a worker that takes its next task so soon
// that neither its wait nor the daemon's loop is sampled serves two tasks
// in one stretch; processing records again after the first task's end and
// the second's setup starts the second.
func TestApplyWorkerRunsBackToBack(t *testing.T) {
	process := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/worker.py:main.<locals>.process;job.py:part"
	setup := "pyspark/daemon.py:worker;pyspark/worker.py:main;<frozen zipimport>:zipimporter.invalidate_caches"
	wait := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/serializers.py:read_int"
	runs := []TaskRun{
		{ThreadID: 40, StageID: 3, TaskID: 30, StartMs: 1_000, EndMs: 3_000},
		{ThreadID: 41, StageID: 3, TaskID: 31, StartMs: 1_050, EndMs: 5_000},
		{ThreadID: 40, StageID: 3, TaskID: 32, StartMs: 3_050, EndMs: 7_000},
		{ThreadID: 41, StageID: 3, TaskID: 33, StartMs: 5_050, EndMs: 8_000},
	}
	// The worker of thread 41's tasks, in 100 ms samples from its first.
	checkWorkerTimeline(t, "", runs, 8_500, []span{
		{1_100, setup, "31"},
		{1_300, process, "31"},
		{4_900, setup, "-"}, // task 31's end and task 33's setup, while tasks 31 and 32 ran
		{5_100, process, "33"},
		{8_000, wait, ""},
	})
}

// TestApplyWorkerRunsNamed: runs that name their workers' processes give
// each worker's samples their task where timing cannot: two tasks that
// start and end together. A run that names another worker is not this
// one's; one that names none may be.
func TestApplyWorkerRunsNamed(t *testing.T) {
	serve := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/worker.py:process;job.py:part"
	wait := "pyspark/daemon.py:worker;pyspark/worker.py:main;pyspark/serializers.py:read_int"
	runs := []TaskRun{
		{ThreadID: 40, StageID: 3, TaskID: 0, StartMs: 1_000, EndMs: 5_000, PythonPids: []int64{7}},
		{ThreadID: 41, StageID: 3, TaskID: 1, StartMs: 1_003, EndMs: 5_018, PythonPids: []int64{8}},
		{ThreadID: 40, StageID: 3, TaskID: 2, StartMs: 5_100, EndMs: 8_000},
		{ThreadID: 41, StageID: 3, TaskID: 3, StartMs: 5_110, EndMs: 8_020, PythonPids: []int64{8}},
	}
	for _, tc := range []struct {
		thread string
		want   []span
	}{
		{"python 7 0 (140: MainThread)", []span{
			{1_100, serve, "0"},
			{5_000, wait, ""},
			{5_200, serve, "2"}, // task 3 is worker 8's
		}},
		{"python 8 0 (140: MainThread)", []span{
			{1_100, serve, "1"},
			{5_000, wait, ""},
			{5_200, serve, "3"},
		}},
		{"python 9 0", []span{ // a worker no run names: task 2 is the one that may be its
			{1_100, serve, ""},
			{5_000, wait, ""},
			{5_200, serve, "2"},
		}},
		{"", []span{ // a thread of no known process: by time alone
			{1_100, serve, "-"},
			{5_000, wait, ""},
			{5_200, serve, "-"},
		}},
	} {
		t.Run(tc.thread, func(t *testing.T) { checkWorkerTimeline(t, tc.thread, runs, 7_900, tc.want) })
	}
}

// A span of a worker's timeline: what it did from fromMs on, and the task
// its samples must get ("-" for the stage alone, "" for none).
type span struct {
	fromMs int64
	stack  string
	task   string
}

// checkWorkerTimeline samples a worker's timeline every 100 ms until
// endMs, on the thread of that name ("" for none), applies runs to the
// samples, and checks each sample's task.
func checkWorkerTimeline(t *testing.T, thread string, runs []TaskRun, endMs int64, timeline []span) {
	t.Helper()
	const ms = int64(1e6)
	p := profile.New()
	typ := p.AddType(profile.TypeWall)
	var th profile.ThreadID
	if thread != "" {
		th = p.AddThread(profile.Thread{Name: thread})
	}
	want := map[int]string{}
	for k, span := range timeline {
		to := endMs
		if k+1 < len(timeline) {
			to = timeline[k+1].fromMs
		}
		frames := strings.Split(span.stack, ";")
		slices.Reverse(frames)
		stack := p.AddPythonStack(frames)
		for at := span.fromMs; at+100 <= to; at += 100 {
			want[len(p.Samples)] = span.task
			p.Samples = append(p.Samples, profile.Sample{Value: 100 * ms, Time: at * ms, Stack: stack, Type: typ, Thread: th})
		}
	}
	ApplyWorkerRuns(p, runs)
	for i, s := range p.Samples {
		ls := p.LabelSet(s.Labels)
		task, _ := ls.Get(profile.LabelTaskID)
		stage, _ := ls.Get(profile.LabelStageID)
		switch w := want[i]; {
		case w == "-" && (task != "" || stage != "3"):
			t.Errorf("sample at %d ms: labels %v, want stage 3 alone", s.Time/ms, ls)
		case w != "-" && task != w:
			t.Errorf("sample at %d ms: labels %v, want task %q", s.Time/ms, ls, w)
		}
	}
}
