package server

import (
	"context"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// The samples of a straggling task are the same for `sparkprof analyze` (its
// profiles read beside the app) and for the server (the store's samples of
// the task): those taken while the task ran. Its thread, named after the
// task as before Spark 4.2, keeps the name while it idles after the task,
// and those later samples, more than the task's own, belong to no task.
func TestTaskSamplesAgree(t *testing.T) {
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	app := &spark.App{Summary: spark.Summary{ID: "app-20261101100000-0001", Name: "agree", StartMs: start, EndMs: start + 60_000, DurationMs: 60_000}}
	stage := &spark.Stage{ID: 0, Status: "COMPLETE", SubmitMs: start, FirstLaunchMs: start, CompleteMs: start + 21_000, DurationMs: 21_000, JobID: -1, SQLID: -1}
	app.Stages = []*spark.Stage{stage}
	for id := range int64(6) {
		run := int64(1_000) // the straggler, task 5, runs 20 s
		if id == 5 {
			run = 20_000
		}
		app.Tasks = append(app.Tasks, &spark.Task{ID: id, Index: int(id), Partition: int(id), ExecutorID: "1", Host: "node-1",
			LaunchMs: start, FinishMs: start + run, Status: "SUCCESS", Metrics: spark.TaskMetrics{RunTimeMs: run}})
	}
	straggler := app.Tasks[5]

	// Task 5's thread: 30 CPU samples of work while the task runs, then 50
	// of idling after it ended, 10 s later, under the same name.
	p := profile.New()
	cpu := p.AddType(profile.TypeCPU)
	th := p.AddThread(profile.Thread{ID: 41, Name: "Executor task launch worker for task 5"})
	stack := func(leaf string) profile.StackID {
		return p.AddStack([]profile.FrameID{p.AddFrame(profile.Frame{Name: "org.apache.spark.executor.Executor$TaskRunner.run"}), p.AddFrame(profile.Frame{Name: leaf})})
	}
	work, idle := stack("com.example.Job.work"), stack("sun.misc.Unsafe.park")
	const ms = int64(time.Millisecond)
	for i := range int64(30) {
		p.Add(profile.Sample{Stack: work, Value: 10 * ms, Type: cpu, Thread: th, Time: (start + 1_000 + i*500) * ms})
	}
	for i := range int64(50) {
		p.Add(profile.Sample{Stack: idle, Value: 10 * ms, Type: cpu, Thread: th, Time: (straggler.FinishMs + 10_000 + i*100) * ms})
	}
	attribution.LabelThreads(p) // as every decoded profile is
	p.Labels = profile.Labels{{Name: profile.LabelAppID, Value: app.ID}, {Name: profile.LabelExecutorID, Value: "1"}}
	p.Start, p.End = (start+1_000)*ms, (straggler.FinishMs+16_000)*ms

	// The CLI: the app analysed with the profile beside it.
	cli := stragglerHotspot(t, analysis.Analyze(analysis.Input{App: app, Profiles: []*profile.Profile{p}}, analysis.DefaultThresholds))

	// The server: the app analysed from its log alone, the profile stored.
	_, db := newTestServer(t, Config{})
	s := newServer(t, Config{Store: db})
	rep := analysis.NewReport(analysis.Input{App: app}, analysis.Analyze(analysis.Input{App: app}, analysis.DefaultThresholds), nil, nil)
	s.apps.Put("", rep)
	if err := db.Append("", &store.Upload{From: p.Start, Until: p.End, Labels: profile.Labels{{Name: profile.LabelServiceName, Value: "agree"}, {Name: profile.LabelAppID, Value: app.ID}}, Profile: p}); err != nil {
		t.Fatal(err)
	}
	live, err := s.query.App(context.Background(), "", query.AppAttempt{ID: app.ID})
	if err != nil {
		t.Fatal(err)
	}
	srv := stragglerHotspot(t, live.Findings)

	want := analysis.Hotspot{Type: "cpu", Samples: 30 * 10 * ms, Leaf: "com.example.Job.work", Share: 1, Code: "com.example.Job.work"}
	if cli != want || srv != want {
		t.Errorf("task %d's samples:\n analyze %+v\n server  %+v\n want    %+v (its 30 while it ran)", straggler.ID, cli, srv, want)
	}
	// The rule itself, on each sample.
	keep := attribution.TaskSamples(app.ID, straggler)
	kept := 0
	for _, smp := range p.Samples {
		if keep(p, smp) {
			kept++
		}
	}
	if kept != 30 {
		t.Errorf("TaskSamples keeps %d of the thread's %d samples, want the 30 taken while task %d ran", kept, len(p.Samples), straggler.ID)
	}
}

// stragglerHotspot returns where the samples of the one straggler among
// findings went, failing the test when it has none.
func stragglerHotspot(t *testing.T, findings []analysis.Finding) analysis.Hotspot {
	t.Helper()
	for _, f := range findings {
		if ev, ok := f.Evidence.(*analysis.StragglerEvidence); ok {
			if ev.Profile == nil {
				t.Fatalf("straggler %q: no samples explained", f.Message)
			}
			return *ev.Profile
		}
	}
	t.Fatalf("no straggler among %d findings", len(findings))
	return analysis.Hotspot{}
}
