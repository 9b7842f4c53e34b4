package attribution

import (
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// TestApplyTaskRuns: a pooled thread that ran tasks 1 and 2 in one window
// carries task 1's name on every sample, as the Flight Recorder names it;
// the agent's runs decide each sample's task.
func TestApplyTaskRuns(t *testing.T) {
	const s = int64(1e9) // a second in ns
	runs := []TaskRun{
		// Task 1 listed twice, as a drain that races its end sends it: running, then ended.
		{ThreadID: 7, ThreadName: "Executor task launch worker for task 0.0 in stage 3.0 (TID 1)", StageID: 3, Partition: 0, TaskID: 1, StartMs: 10_000, EndMs: 0},
		{ThreadID: 7, ThreadName: "Executor task launch worker for task 0.0 in stage 3.0 (TID 1)", StageID: 3, Partition: 0, TaskID: 1, StartMs: 10_000, EndMs: 12_000},
		{ThreadID: 7, ThreadName: "Executor task launch worker for task 1.0 in stage 3.0 (TID 2)", StageID: 3, Partition: 1, TaskID: 2, StartMs: 15_000, EndMs: 0},
	}
	for _, tt := range []struct {
		name  string
		at    int64
		wall  bool
		state profile.ThreadState
		want  string // the task, "" for none
	}{
		{"in the first run", 11 * s, false, 0, "1"},
		{"in the second run, under the first's name", 16 * s, false, 0, "2"},
		{"on CPU just after the first run: its result", 12*s + 300e6, false, 0, "1"},
		{"on CPU just before the second run: deserialising it", 14*s + 700e6, false, 0, "2"},
		{"before the first run on CPU: deserialising it", 9 * s, false, 0, "1"},
		{"idle between the runs", 13 * s, true, profile.StateWaiting, ""},
		{"running between the runs, wall clock", 14*s + 900e6, true, profile.StateRunnable, "2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := profile.New()
			typ := p.AddType(profile.TypeCPU)
			if tt.wall {
				typ = p.AddType(profile.TypeWall)
			}
			st := p.AddStack([]profile.FrameID{p.AddFrame(profile.Frame{Name: "f"})})
			th := p.AddThread(profile.Thread{ID: 7, Name: runs[0].ThreadName})
			p.Add(profile.Sample{Stack: st, Value: 1, Type: typ, Thread: th, Time: tt.at, State: tt.state})
			LabelThreads(p)
			ApplyTaskRuns(p, runs)
			got, _ := p.SampleLabels(p.Samples[0]).Get(profile.LabelTaskID)
			if got != tt.want {
				t.Errorf("task %q, want %q (labels %s)", got, tt.want, p.SampleLabels(p.Samples[0]))
			}
		})
	}
}
