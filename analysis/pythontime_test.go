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
	dumps := py("pyspark/serializers.py", "serializers.py:dump_stream")
	readInt := py("pyspark/serializers.py", "serializers.py:read_int")
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
	add(50, stage(""), main, process, slow)
	add(300, stage(""), main, readInt)
	add(500, stage("3"), jvm)
	app := &spark.App{Tasks: []*spark.Task{
		{StageID: 3, Metrics: spark.TaskMetrics{RunTimeMs: 1000}},
		{StageID: 3, Metrics: spark.TaskMetrics{RunTimeMs: 800}},
		{StageID: 4, Metrics: spark.TaskMetrics{RunTimeMs: 200}},
	}}
	want := &PythonTime{ServingMs: 950, WaitingMs: 300, TaskMs: 2000, Share: 0.48, Stages: []StagePython{{
		StageID: 3, ServingMs: 900, TaskMs: 1800, Share: 0.5,
		Functions: []PythonFunction{{"planted.py:slow_parse", 800}, {"serializers.py:dump_stream", 100}},
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

// TestPythonFindings: a stage whose Python workers spent enough of its
// task time moving records gets a python-serialization finding, unless a
// python-udf finding already covers it.
func TestPythonFindings(t *testing.T) {
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
			fs := PythonFindings(tt.py, nil, tt.findings, th)
			if len(fs) != tt.want {
				t.Fatalf("%d findings, want %d: %+v", len(fs), tt.want, fs)
			}
			if tt.want == 1 && (fs[0].Kind != KindPythonSerialization || *fs[0].StageID != 2 || fs[0].Evidence.(*PythonSerializationEvidence).ServingMs != tt.py.Stages[0].ServingMs) {
				t.Errorf("finding %+v", fs[0])
			}
		})
	}
}

// TestWithSampledPython: an estimated python-udf finding takes its
// stage's sampled Python time; a measured one, and the findings given,
// stay as they are.
func TestWithSampledPython(t *testing.T) {
	udf := func(stage int, estimated bool) Finding {
		return pythonFinding(stage, &PythonUDFEvidence{Operator: "BatchEvalPython", UDFs: []string{"slow_parse"}, PythonMs: 10_000,
			Estimated: estimated, TaskMs: 11_000, Share: 0.91})
	}
	findings := []Finding{udf(3, true), udf(6, false)}
	py := &PythonTime{Stages: []StagePython{{StageID: 3, ServingMs: 7_400}, {StageID: 6, ServingMs: 5_000}}}
	got := WithSampledPython(findings, py)
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
	if got := WithSampledPython(findings, nil); &got[0] != &findings[0] {
		t.Error("no Python time: the findings are not returned as they are")
	}
}
