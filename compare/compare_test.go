package compare

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// stageSpec is a stage of a generated run: its tasks' durations and data.
type stageSpec struct {
	name    string
	parents []int
	ms      []int64 // a task each
	bytes   []int64 // read (shuffle) by each task; nil for a first stage, which writes them
	gcMs    int64   // per task
	cpuMs   int64   // per task: 90 % of its time less GC unless set
}

// runSpec is a generated run: stages run one after another on slots
// executors of one core, each task on the first free one.
type runSpec struct {
	slots  int
	stages []stageSpec
	config map[string]string
}

// app makes the run's application.
func (r runSpec) app(id string) *spark.App {
	a := &spark.App{Summary: spark.Summary{ID: id, Name: "nightly", StartMs: 1_000_000}}
	a.Environment = &spark.Environment{}
	for k, v := range r.config {
		a.Environment.Spark = append(a.Environment.Spark, [2]string{k, v})
	}
	for i := range r.slots {
		a.Executors = append(a.Executors, &spark.Executor{ID: string(rune('1' + i)), Host: "h", Cores: 1, AddedMs: a.StartMs})
	}
	now := a.StartMs + 1000 // the driver starts up
	var taskID int64
	for id, s := range r.stages {
		free := make([]int64, r.slots)
		for i := range free {
			free[i] = now
		}
		st := &spark.Stage{ID: id, Name: s.name, Parents: s.parents, RDDIDs: []int{id}, JobID: 0, SQLID: -1, Status: "COMPLETE"}
		end := now
		for i, ms := range s.ms {
			slot := 0
			for j := range free {
				if free[j] < free[slot] {
					slot = j
				}
			}
			t := &spark.Task{ID: taskID, Index: i, StageID: id, ExecutorID: a.Executors[slot].ID, Host: "h",
				LaunchMs: free[slot], FinishMs: free[slot] + ms, Status: "SUCCESS"}
			t.Metrics.RunTimeMs, t.Metrics.GCTimeMs = ms, s.gcMs
			t.Metrics.CPUTimeNs = (ms - s.gcMs) * 9 / 10 * 1e6
			if s.cpuMs > 0 {
				t.Metrics.CPUTimeNs = s.cpuMs * 1e6
			}
			if s.bytes != nil {
				t.Metrics.ShuffleLocalBytes = s.bytes[i]
			} else {
				t.Metrics.ShuffleWriteBytes = ms * 1000
			}
			taskID++
			free[slot] = t.FinishMs
			end = max(end, t.FinishMs)
			a.Tasks = append(a.Tasks, t)
		}
		st.SubmitMs, st.CompleteMs = now, end
		a.Stages = append(a.Stages, st)
		now = end
	}
	a.EndMs = now + 500 // the driver writes the results
	a.DurationMs = a.EndMs - a.StartMs
	return a
}

// even is n tasks of ms each, reading bytes each.
func even(n int, ms, bytes int64) (durs, data []int64) {
	for range n {
		durs, data = append(durs, ms), append(data, bytes)
	}
	return durs, data
}

// nightly is the generated job: a stage writing data, a stage reading it
// by key with tasks of ms each over n tasks.
func nightly(slots, n int, ms, bytes int64, tweak func(durs, data []int64)) runSpec {
	durs, data := even(n, ms, bytes)
	if tweak != nil {
		tweak(durs, data)
	}
	mapMs, _ := even(4, 300, 0)
	return runSpec{slots: slots, config: map[string]string{"spark.sql.shuffle.partitions": strconv.Itoa(n)}, stages: []stageSpec{
		{name: "collect at Job.java:10", ms: mapMs},
		{name: "collect at Job.java:10", parents: []int{0}, ms: durs, bytes: data},
	}}
}

// TestPlantedCauses compares generated runs, each with one planted change
// from the first, and wants the change named as its main cause, its part
// of the change with its share, and the parts adding up to the change.
func TestPlantedCauses(t *testing.T) {
	first := nightly(2, 8, 1000, 1<<20, nil)
	for _, tt := range []struct {
		name string
		new  runSpec
		want Kind
	}{
		{"input doubled", nightly(2, 8, 2000, 2<<20, nil), KindInput},
		{"a key skewed", nightly(2, 8, 1000, 1<<20, func(d, b []int64) {
			d[3], b[3] = 6000, 6<<20
			for i := range d {
				if i != 3 {
					d[i], b[i] = 285, 300<<10
				}
			}
		}), KindSkew},
		{"a slower function", nightly(2, 8, 3000, 1<<20, nil), KindCode},
		{"fewer executors", nightly(1, 8, 1000, 1<<20, nil), KindExecutors},
		{"fewer partitions", nightly(2, 1, 8000, 8<<20, nil), KindConfig},
		{"busier hosts", func() runSpec {
			r := nightly(2, 8, 2000, 1<<20, nil)
			r.stages[1].cpuMs = 900
			return r
		}(), KindHosts},
		{"more GC", func() runSpec {
			r := nightly(2, 8, 2000, 1<<20, nil)
			r.stages[1].gcMs = 1000
			return r
		}(), KindGC},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Compare(Run{App: first.app("old")}, Run{App: tt.new.app("new")}, Options{})
			if len(r.Causes) == 0 {
				t.Fatalf("no causes of a change of %d ms", r.ChangeMs)
			}
			var sum int64
			var shares float64
			for _, c := range r.Causes {
				sum += c.ChangeMs
				shares += c.Share
				t.Logf("%-9s %6d ms %5.1f %%  %s", c.Kind, c.ChangeMs, 100*c.Share, c.Evidence)
			}
			if sum != r.ChangeMs || math.Abs(shares-1) > 0.01 {
				t.Errorf("the causes add up to %d ms and %.3f of the change, want %d ms and 1", sum, shares, r.ChangeMs)
			}
			if top := r.Causes[0]; top.Kind != tt.want || top.Share < 0.9 {
				t.Errorf("main cause %s (%.0f %%), want %s, nearly all of it", top.Kind, 100*top.Share, tt.want)
			}
			for _, s := range r.Stages {
				if s.Old == nil || s.New == nil || s.Old.ID != s.New.ID || s.Confidence != 1 {
					t.Errorf("stage %+v matched to %+v with confidence %v, want itself at 1", s.New, s.Old, s.Confidence)
				}
			}
		})
	}
}

// TestMatchStages matches stages whose ids moved (a job ran before them in
// the new run), tells new and gone stages apart, and is less sure of a
// stage whose call site recurs a different number of times.
func TestMatchStages(t *testing.T) {
	old := runSpec{slots: 2, stages: []stageSpec{
		{name: "load at A.scala:1", ms: []int64{100, 100}},
		{name: "collect at A.scala:2", parents: []int{0}, ms: []int64{100}, bytes: []int64{1}},
		{name: "save at A.scala:9", ms: []int64{100}},
	}}
	new := runSpec{slots: 2, stages: []stageSpec{
		{name: "count at A.scala:0", ms: []int64{100}},
		{name: "load at A.scala:1", ms: []int64{100, 100}},
		{name: "collect at A.scala:2", parents: []int{1}, ms: []int64{100}, bytes: []int64{1}},
	}}
	r := Compare(Run{App: old.app("old")}, Run{App: new.app("new")}, Options{})
	type pair struct {
		old, new int // -1 for none
		conf     float64
	}
	var got []pair
	for _, s := range r.Stages {
		p := pair{-1, -1, s.Confidence}
		if s.Old != nil {
			p.old = s.Old.ID
		}
		if s.New != nil {
			p.new = s.New.ID
		}
		got = append(got, p)
	}
	want := []pair{{-1, 0, 0}, {0, 1, 1}, {1, 2, 1}, {2, -1, 0}}
	if len(got) != len(want) {
		t.Fatalf("matches %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("match %d: %v, want %v", i, got[i], want[i])
		}
	}
	var plan int64
	for _, c := range r.Causes {
		if c.Kind == KindPlan {
			plan = c.ChangeMs
		}
	}
	if plan != 0 { // a 100 ms stage came, another went
		t.Errorf("plan cause %d ms, want 0 (one stage of 100 ms new, one gone)", plan)
	}
}

// TestSameRun compares real logs with themselves: every stage matched to
// itself with full confidence, and no change.
func TestSameRun(t *testing.T) {
	for _, rel := range []string{
		"nvidia/nds_q88_photon_db_13_3.zstd",
		"nvidia/aqeshuffle_eventlog.zstd",
		"nvidia/tasks_executors_fail_compressed_eventlog.zstd",
		"nvidia/eventlog_4nodes_8cores_dynamic_alloc.zstd",
		"apache/application_1536831636016_59384_1",
	} {
		t.Run(rel, func(t *testing.T) {
			app := buildApp(t, corpus.Path(t, "eventlogs", rel))
			r := Compare(Run{App: app}, Run{App: app}, Options{})
			if r.ChangeMs != 0 || r.DurationRatio != 1 {
				t.Errorf("change %d ms (%v×), want none", r.ChangeMs, r.DurationRatio)
			}
			matched := 0
			for _, s := range r.Stages {
				if s.Old == nil || s.New == nil || s.Old.ID != s.New.ID || s.Confidence != 1 {
					t.Errorf("stage %+v matched to %+v at %v (%s)", s.New, s.Old, s.Confidence, s.MatchedBy)
					continue
				}
				matched++
			}
			for _, c := range r.Causes {
				if c.ChangeMs != 0 {
					t.Errorf("cause %s of %d ms in a run against itself", c.Kind, c.ChangeMs)
				}
			}
			t.Logf("%d stages matched", matched)
			if matched == 0 {
				t.Error("no stage ran")
			}
		})
	}
}

func buildApp(t *testing.T, path string) *spark.App {
	t.Helper()
	r, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	app, _, err := spark.Build(r)
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func TestSameInEveryJVM(t *testing.T) {
	for in, want := range map[string]string{
		"org.apache.spark.rdd.RDD$$Lambda$1232+0x00007fe1e0789130.2020247813.apply": "org.apache.spark.rdd.RDD$$Lambda.apply",
		"a.B$$Lambda$12/0x0000000800c0b000.run":                                     "a.B$$Lambda.run",
		"java.lang.invoke.LambdaForm$DMH.0x000000080129cc00.newInvokeSpecial":       "java.lang.invoke.LambdaForm$DMH.newInvokeSpecial",
		"dev.sparkprof.jobs.Jobs.parseDate":                                         "dev.sparkprof.jobs.Jobs.parseDate",
		"kafka.server.ReplicaManager$$Lambda_.apply":                                "kafka.server.ReplicaManager$$Lambda_.apply",
	} {
		if got := sameInEveryJVM(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// stageProfile is a CPU profile of stage 2 with the stacks (root first,
// ";"-separated) and values given.
func stageProfile(stacks map[string]int64) *profile.Profile {
	p := profile.New()
	typ := p.AddType(profile.TypeCPU)
	ls := p.AddLabels(profile.Labels{{Name: profile.LabelStageID, Value: "2"}})
	for stack, v := range stacks {
		var ids []profile.FrameID
		for _, name := range strings.Split(stack, ";") {
			ids = append(ids, p.AddFrame(profile.Frame{Name: name}))
		}
		p.Samples = append(p.Samples, profile.Sample{Value: v, Stack: p.AddStack(ids), Labels: ls, Type: typ})
	}
	return p
}

// TestGrownFunctions: a function made slower is named, not its callers,
// which grow with it, nor a function that did not grow; a caller whose
// own time grew as much is named beside it.
func TestGrownFunctions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new map[string]int64
		cpu      int64 // the new run's stage CPU ms (the old one's is 1000, for as much data)
		want     []FunctionChange
	}{{
		name: "function three times slower",
		old:  map[string]int64{"run;udf$$Lambda$12+0x7f01.call;parseDate": 88, "run;agg": 12},
		new:  map[string]int64{"run;udf$$Lambda$40+0x7f99.call;parseDate": 264, "run;agg": 12},
		cpu:  2760,
		want: []FunctionChange{{"parseDate", 0.88, 0.957}},
	}, {
		// The shape of the real-Spark runs: the UDF's lambda has a little
		// time of its own and grows a little more than parseDate.
		name: "caller with a little time of its own",
		old:  map[string]int64{"run;agg;udf.call;lambda;parseDate": 910, "run;agg;udf.call;lambda": 22, "run;agg": 68},
		new:  map[string]int64{"run;agg;udf.call;lambda;parseDate": 940, "run;agg;udf.call;lambda": 20, "run;agg": 40},
		cpu:  2860,
		want: []FunctionChange{{"parseDate", 0.91, 0.94}},
	}, {
		name: "function slower under two callers",
		old:  map[string]int64{"run;a;parse": 40, "run;b;parse": 40, "run;c": 20},
		new:  map[string]int64{"run;a;parse": 120, "run;b;parse": 120, "run;c": 20},
		cpu:  2600,
		want: []FunctionChange{{"parse", 0.8, 0.923}},
	}, {
		name: "two functions slower",
		old:  map[string]int64{"run;a;parse": 40, "run;b;format": 40, "run;c": 20},
		new:  map[string]int64{"run;a;parse": 160, "run;b;format": 80, "run;c": 20},
		cpu:  2600,
		want: []FunctionChange{{"parse", 0.4, 0.615}, {"format", 0.4, 0.308}},
	}, {
		name: "caller slower beside its callee",
		old:  map[string]int64{"run;read": 40, "run;read;decode": 40, "run;c": 20},
		new:  map[string]int64{"run;read": 120, "run;read;decode": 120, "run;c": 20},
		cpu:  2600,
		want: []FunctionChange{{"decode", 0.4, 0.462}, {"read", 0.8, 0.923}},
	}, {
		name: "nothing slower",
		old:  map[string]int64{"run;a;parse": 80, "run;c": 20},
		new:  map[string]int64{"run;a;parse": 80, "run;c": 20},
		cpu:  1000,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			o := &runFacts{profiles: []*profile.Profile{stageProfile(tc.old)}}
			n := &runFacts{profiles: []*profile.Profile{stageProfile(tc.new)}}
			os := &stageFacts{id: 2, m: StageMetrics{CPUMs: 1000, ShuffleReadRecords: 1000}}
			ns := &stageFacts{id: 2, m: StageMetrics{CPUMs: tc.cpu, ShuffleReadRecords: 1000}}
			if got := grownFunctions(o, n, os, ns); !slices.Equal(got, tc.want) {
				t.Errorf("grown functions %+v, want %+v", got, tc.want)
			}
		})
	}
}
