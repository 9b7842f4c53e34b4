package analysis

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// TestPython: the workers' wall samples serving tasks are summed by the
// stage they are labelled with and set against the stages' task time,
// with the functions of most self time; waiting for a task, and the JVM's
// own samples, are not a task's Python time.
func TestPython(t *testing.T) {
	p := profile.New()
	wall := p.AddType(profile.TypeWall)
	py := func(file, name string) profile.FrameID {
		return p.AddFrame(profile.Frame{Name: name, File: file, Kind: profile.KindPython})
	}
	main := py("pyspark/worker.py", "worker.py:main")
	process := py("pyspark/worker.py", "worker.py:process")
	slow := py("planted.py", "planted.py:slow_parse")
	dumps := py("pyspark/serializers.py", "pyspark/serializers.py:dump_stream")
	readInt := py("pyspark/serializers.py", "serializers.py:read_int")
	readUDFs := py("pyspark/worker.py", "worker.py:read_udfs")
	loads := py("pyspark/serializers.py", "pyspark/serializers.py:loads")
	invalidate := py("__init__.py", "__init__.py:invalidate_caches")
	readDirectory := py("<frozen zipimport>", "<frozen zipimport>:_read_directory")
	jvm := p.AddFrame(profile.Frame{Name: "java.lang.Thread.run", Kind: profile.KindJava})
	stage := func(id string) profile.LabelSetID {
		if id == "" {
			return 0
		}
		return p.AddLabels(profile.Labels{{Name: profile.LabelStageID, Value: id}})
	}
	add := func(ms int64, labels profile.LabelSetID, frames ...profile.FrameID) {
		p.Samples = append(p.Samples, profile.Sample{Value: ms * 1e6, Time: 1, Stack: p.AddStack(frames), Labels: labels, Type: wall})
	}
	add(800, stage("3"), main, process, slow)
	add(100, stage("3"), main, process, dumps)
	add(200, stage("3"), main, readUDFs, loads)
	add(50, stage("3"), main, invalidate, readDirectory)
	add(50, stage(""), main, process, slow)
	add(300, stage(""), main, readInt)
	add(500, stage("3"), jvm)
	app := &spark.App{Tasks: []*spark.Task{
		{StageID: 3, Metrics: spark.TaskMetrics{RunTimeMs: 1000}},
		{StageID: 3, Metrics: spark.TaskMetrics{RunTimeMs: 800}},
		{StageID: 4, Metrics: spark.TaskMetrics{RunTimeMs: 200}},
	}}
	want := &PythonTime{ServingMs: 1200, WaitingMs: 300, TaskMs: 2000, Share: 0.6, Stages: []StagePython{{
		StageID: 3, ServingMs: 1150, TaskMs: 1800, Share: 0.64, SerializationMs: 100, SetupMs: 200, ImportCachesMs: 50,
		Functions: []PythonFunction{{"planted.py:slow_parse", 800}, {"pyspark/serializers.py:loads", 200}, {"pyspark/serializers.py:dump_stream", 100}},
	}}}
	if got := Python([]*profile.Profile{p}, app); !reflect.DeepEqual(got, want) {
		t.Errorf("Python:\n got %+v\nwant %+v", got, want)
	}
	jvmOnly := profile.New()
	jvmOnly.Samples = append(jvmOnly.Samples, profile.Sample{Value: 1e6, Stack: jvmOnly.AddStack([]profile.FrameID{jvmOnly.AddFrame(profile.Frame{Name: "java.lang.Thread.run", Kind: profile.KindJava})}), Type: jvmOnly.AddType(profile.TypeWall)})
	if got := Python([]*profile.Profile{jvmOnly}, app); got != nil {
		t.Errorf("Python of a JVM's samples: %+v, want nil", got)
	}
}

// TestWithPythonSerialization: a stage whose Python workers spent enough
// of its task time moving records gets a python-serialization finding,
// unless a python-udf finding already covers it.
func TestWithPythonSerialization(t *testing.T) {
	th := DefaultThresholds
	th.PythonMinMs = 1000
	stage := func(serializationMs, servingMs, taskMs int64) *PythonTime {
		return &PythonTime{Stages: []StagePython{{StageID: 2, ServingMs: servingMs, SerializationMs: serializationMs, TaskMs: taskMs,
			Share:     round2(share(servingMs, taskMs)),
			Functions: []PythonFunction{{"pyspark/serializers.py:FramedSerializer._write_with_length", serializationMs}}}}}
	}
	udf := []Finding{{Kind: KindPythonUDF, StageID: intp(2)}}
	tests := []struct {
		name     string
		py       *PythonTime
		findings []Finding
		want     int
	}{
		{"pickling most of the stage", stage(3000, 3100, 5000), nil, 1},
		{"pickling most of the workers' time, the JVM shuffling", stage(1200, 1800, 5000), nil, 1},
		{"a UDF's stage", stage(3000, 3100, 5000), udf, 0},
		{"Python under the share", stage(1200, 1300, 5000), nil, 0},
		{"pickling under half the workers' time", stage(1200, 3000, 5000), nil, 0},
		{"under the time", stage(900, 1000, 1000), nil, 0},
		{"no Python", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := find(WithPython(tt.findings, tt.py, nil, th), KindPythonSerialization)
			if len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %+v", len(fs), tt.want, fs)
			}
			if tt.want == 1 && (*fs[0].StageID != 2 || fs[0].Evidence.(*PythonSerializationEvidence).ServingMs != tt.py.Stages[0].ServingMs) {
				t.Errorf("finding %+v", fs[0])
			}
		})
	}
}

// TestWithPythonStartup: a stage whose Python workers spent enough of its
// task time setting up its tasks gets a python-startup finding that gives
// the time a task, unless Spark's metrics gave it one already.
func TestWithPythonStartup(t *testing.T) {
	th := DefaultThresholds
	th.PythonMinMs = 1000
	stage := func(setupMs, servingMs, taskMs int64) *PythonTime {
		return &PythonTime{Stages: []StagePython{{StageID: 5, ServingMs: servingMs, SetupMs: setupMs, TaskMs: taskMs,
			Share: round2(share(servingMs, taskMs))}}}
	}
	app := &spark.App{Environment: &spark.Environment{Spark: [][2]string{{"spark.python.worker.reuse", "false"}}}}
	for range 16 {
		app.Tasks = append(app.Tasks, &spark.Task{StageID: 5})
	}
	measured := []Finding{{Kind: KindPythonStartup, StageID: intp(5)}}
	tests := []struct {
		name     string
		py       *PythonTime
		findings []Finding
		want     int
	}{
		{"setting up most of the stage", stage(1600, 1800, 2400), nil, 1},
		{"under the share", stage(1600, 8000, 9000), nil, 0},
		{"under the time", stage(900, 1000, 1000), nil, 0},
		{"Spark's metrics gave it", stage(1600, 1800, 2400), measured, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := find(WithPython(tt.findings, tt.py, app, th), KindPythonStartup)
			if len(fs) != len(tt.findings)+tt.want {
				t.Fatalf("%d findings, want %d: %+v", len(fs), len(tt.findings)+tt.want, fs)
			}
			if tt.want == 0 {
				return
			}
			ev := fs[0].Evidence.(*PythonStartupEvidence)
			if *fs[0].StageID != 5 || !ev.Sampled || ev.Tasks != 16 || ev.PerTaskMs != 100 || ev.Share != 0.67 ||
				!strings.Contains(fs[0].Message, "100 ms a task over 16 tasks") ||
				!strings.HasPrefix(fs[0].Suggestion, "spark.python.worker.reuse is false") {
				t.Errorf("finding %q (%s), evidence %+v", fs[0].Message, fs[0].Suggestion, ev)
			}
		})
	}
}

// TestWithPythonSampledUDF: an estimated python-udf finding takes its
// stage's sampled Python time after the tasks' setting up, and is dropped
// when that is under the thresholds; a measured one, and the findings
// given, stay as they are.
func TestWithPythonSampledUDF(t *testing.T) {
	udf := func(stage int, estimated bool) Finding {
		return pythonFinding(stage, &PythonUDFEvidence{Operator: "BatchEvalPython", UDFs: []string{"slow_parse"}, PythonMs: 10_000,
			Estimated: estimated, TaskMs: 11_000, Share: 0.91})
	}
	findings := []Finding{udf(3, true), udf(6, false), udf(8, true), udf(11, true)}
	// Stage 11 as in real Spark 3.5: its tasks' UDF is cheap, and most of
	// what is not setting up is PySpark clearing the import caches.
	py := &PythonTime{Stages: []StagePython{{StageID: 3, ServingMs: 7_600, SetupMs: 200}, {StageID: 6, ServingMs: 5_000},
		{StageID: 8, ServingMs: 3_000, SetupMs: 2_000}, {StageID: 11, ServingMs: 8_000, SetupMs: 3_000, ImportCachesMs: 2_400}}}
	th := DefaultThresholds
	th.PythonMinMs = 1000
	got := WithPython(findings, py, nil, th)
	if len(got) != 2 {
		t.Fatalf("%d findings, want 2 (stage 8's Python is mostly setting up, stage 11's that and clearing import caches): %+v", len(got), got)
	}
	slices.SortFunc(got, func(a, b Finding) int { return *a.StageID - *b.StageID })
	ev := got[0].Evidence.(*PythonUDFEvidence)
	if *got[0].StageID != 3 || ev.PythonMs != 7_400 || ev.Estimated || !ev.Sampled || ev.Share != 0.67 ||
		!strings.Contains(got[0].Message, "7.4 s in Python (the workers' samples), 67%") {
		t.Errorf("stage 3's finding %q, evidence %+v", got[0].Message, ev)
	}
	if ev := got[1].Evidence.(*PythonUDFEvidence); ev.PythonMs != 10_000 || ev.Sampled {
		t.Errorf("stage 6's measured finding changed: %+v", ev)
	}
	if ev := findings[0].Evidence.(*PythonUDFEvidence); !ev.Estimated || ev.PythonMs != 10_000 {
		t.Errorf("the findings given changed: %+v", ev)
	}
	if got := WithPython(findings, nil, nil, th); &got[0] != &findings[0] {
		t.Error("no Python time: the findings are not returned as they are")
	}
}

// TestPythonStartupRule: Spark 4's start-up and initialisation metrics of
// a stage's Python operator give a python-startup finding only when the
// app does not reuse its workers: a reused worker's count its wait for
// the task.
func TestPythonStartupRule(t *testing.T) {
	app := func(reuse string) *spark.App {
		metric := func(name string, total int64) *spark.PlanMetric {
			return &spark.PlanMetric{Name: name, Type: "timing", Known: true, Total: total, MaxAt: &spark.MaxAt{Stage: 4}}
		}
		a := &spark.App{
			Stages: []*spark.Stage{{ID: 4, Name: "collect at planted.py:80"}},
			SQL: []*spark.SQLExecution{{ID: 1, Plan: &spark.PlanNode{Name: "BatchEvalPython", Detail: "BatchEvalPython [score(k#1)#2], [pythonUDF0#3]",
				Metrics: []*spark.PlanMetric{metric(pyStartMetric, 600), metric(pyInitMetric, 3_400), metric(pyExecMetric, 400),
					{Name: pySentMetric, Type: "size", Known: true, Total: 1 << 20, MaxAt: &spark.MaxAt{Stage: 4}}}}}},
		}
		if reuse != "" {
			a.Environment = &spark.Environment{Spark: [][2]string{{"spark.python.worker.reuse", reuse}}}
		}
		for i := range 8 {
			a.Tasks = append(a.Tasks, &spark.Task{StageID: 4, ID: int64(i), Index: i, FinishMs: 600,
				Metrics: spark.TaskMetrics{RunTimeMs: 600}})
		}
		return a
	}
	th := DefaultThresholds
	th.PythonMinMs = 1000
	for _, reuse := range []string{"", "true", "false"} {
		fs := find(Analyze(Input{App: app(reuse)}, th), KindPythonStartup)
		if reuse != "false" {
			if len(fs) != 0 {
				t.Errorf("reuse %q: %d python-startup findings, want none: %+v", reuse, len(fs), fs)
			}
			continue
		}
		if len(fs) != 1 {
			t.Fatalf("reuse false: %d python-startup findings, want 1", len(fs))
		}
		ev := fs[0].Evidence.(*PythonStartupEvidence)
		if ev.StartupMs != 4_000 || ev.Sampled || ev.Tasks != 8 || ev.PerTaskMs != 500 || ev.TaskMs != 4_800 ||
			!strings.HasPrefix(fs[0].Suggestion, "spark.python.worker.reuse is false") {
			t.Errorf("finding %q (%s), evidence %+v", fs[0].Message, fs[0].Suggestion, ev)
		}
	}
}

// TestPythonStartupRuleOrder: two stages whose workers started alike get
// their findings in the order of the stages, every time.
func TestPythonStartupRuleOrder(t *testing.T) {
	metric := func(name string, total int64, stage int) *spark.PlanMetric {
		return &spark.PlanMetric{Name: name, Type: "timing", Known: true, Total: total, MaxAt: &spark.MaxAt{Stage: stage}}
	}
	a := &spark.App{Environment: &spark.Environment{Spark: [][2]string{{"spark.python.worker.reuse", "false"}}}}
	for _, stage := range []int{5, 4} {
		a.Stages = append(a.Stages, &spark.Stage{ID: stage})
		a.SQL = append(a.SQL, &spark.SQLExecution{ID: int64(stage), Plan: &spark.PlanNode{Name: "BatchEvalPython", Detail: "BatchEvalPython [score(k#1)#2], [pythonUDF0#3]",
			Metrics: []*spark.PlanMetric{metric(pyInitMetric, 4_000, stage), metric(pyExecMetric, 400, stage)}}})
		for i := range 8 {
			a.Tasks = append(a.Tasks, &spark.Task{StageID: stage, ID: int64(10*stage + i), Index: i, FinishMs: 600, Metrics: spark.TaskMetrics{RunTimeMs: 600}})
		}
	}
	th := DefaultThresholds
	th.PythonMinMs = 1000
	for range 20 {
		fs := find(Analyze(Input{App: a}, th), KindPythonStartup)
		if len(fs) != 2 || *fs[0].StageID != 4 || *fs[1].StageID != 5 {
			t.Fatalf("python-startup findings %+v, want stages 4 then 5", fs)
		}
	}
}
