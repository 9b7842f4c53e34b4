package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// PythonTime is the wall time of PySpark's Python workers, from their
// samples (py-spy's, which the agent sends with spark.sparkprof.python):
// the time they served tasks, against the tasks' run time, in the app and
// in each stage, and the time they waited for a task.
type PythonTime struct {
	// ServingMs is the workers' time serving tasks; WaitingMs their time
	// waiting for the next one (a reused worker between tasks).
	ServingMs int64 `json:"servingMs"`
	WaitingMs int64 `json:"waitingMs"`
	// TaskMs is the run time of the app's tasks (executorRunTime), and
	// Share ServingMs's part of it.
	TaskMs int64   `json:"taskMs"`
	Share  float64 `json:"share"`
	// Stages are the stages whose tasks the workers served, the most
	// Python time first.
	Stages []StagePython `json:"stages"`
}

// StagePython is the Python workers' time serving one stage's tasks.
type StagePython struct {
	StageID   int     `json:"stageId"`
	ServingMs int64   `json:"servingMs"`
	TaskMs    int64   `json:"taskMs"`
	Share     float64 `json:"share"`
	// SerializationMs is the part of ServingMs in PySpark's serializers
	// and pickle: records moved between the JVM and Python.
	SerializationMs int64 `json:"serializationMs"`
	// SetupMs is the part of ServingMs setting up each task before its
	// first record: reading its Python functions, unpickling them with
	// what they capture, and the imports that brings.
	SetupMs int64 `json:"setupMs"`
	// ImportCachesMs is the part of ServingMs in PySpark's worker clearing
	// Python's import caches before each task (importlib.invalidate_caches,
	// which re-reads the directories of pyspark.zip and the job's
	// archives): PySpark's own cost, which no change to the job removes.
	ImportCachesMs int64 `json:"importCachesMs"`
	// Functions are the Python functions where the workers spent most of
	// that time (their self time, "file.py:function"), at most three.
	Functions []PythonFunction `json:"functions"`
}

// PythonFunction is a Python function's self time in a stage's workers.
type PythonFunction struct {
	Name string `json:"name"`
	Ms   int64  `json:"ms"`
}

// Python returns the Python workers' time in profiles' wall samples, with
// the stages and tasks of app (nil: shares are 0), or nil when no sample is
// a worker's.
func Python(profiles []*profile.Profile, app *spark.App) *PythonTime {
	serving := map[int]int64{} // by stage; -1: no stage
	serialization, setup, importCaches := map[int]int64{}, map[int]int64{}, map[int]int64{}
	self := map[int]map[string]int64{}
	var waiting int64
	for _, p := range profiles {
		wall, ok := p.TypeIndex(profile.TypeWall)
		if !ok || !slices.ContainsFunc(p.Frames, attribution.IsWorkerMain) {
			continue
		}
		kinds := map[profile.StackID]workerStack{}
		var buf []profile.FrameID
		for _, s := range p.Samples {
			if s.Type != wall {
				continue
			}
			k, ok := kinds[s.Stack]
			if !ok {
				buf = p.Stack(s.Stack, buf[:0])
				k = classifyWorkerStack(p, buf)
				kinds[s.Stack] = k
			}
			switch {
			case !k.worker:
				continue
			case k.waiting:
				waiting += s.Value
				continue
			}
			stage := sampleStage(p, s)
			serving[stage] += s.Value
			switch {
			case k.setup:
				setup[stage] += s.Value
			case k.importCaches:
				importCaches[stage] += s.Value
			case isSerialization(k.leaf):
				serialization[stage] += s.Value
			}
			if k.leaf != "" {
				if self[stage] == nil {
					self[stage] = map[string]int64{}
				}
				self[stage][k.leaf] += s.Value
			}
		}
	}
	if len(serving) == 0 && waiting == 0 {
		return nil
	}
	const msNs = int64(1e6)
	out := &PythonTime{WaitingMs: waiting / msNs, Stages: []StagePython{}}
	taskMs := stageRunTimes(app)
	for stage, ns := range serving {
		out.ServingMs += ns / msNs
		if stage < 0 {
			continue
		}
		sp := StagePython{StageID: stage, ServingMs: ns / msNs, TaskMs: taskMs[stage], Functions: topFunctions(self[stage], 3),
			SerializationMs: serialization[stage] / msNs, SetupMs: setup[stage] / msNs, ImportCachesMs: importCaches[stage] / msNs}
		sp.Share = round2(share(sp.ServingMs, sp.TaskMs))
		out.Stages = append(out.Stages, sp)
	}
	for _, ms := range taskMs {
		out.TaskMs += ms
	}
	out.Share = round2(share(out.ServingMs, out.TaskMs))
	slices.SortFunc(out.Stages, func(a, b StagePython) int {
		return cmp.Or(cmp.Compare(b.ServingMs, a.ServingMs), cmp.Compare(a.StageID, b.StageID))
	})
	return out
}

// workerStack is what a stack says of a Python worker: whether it is a
// worker's, waiting for a task, setting one up or clearing the import
// caches before one, and its innermost Python function.
type workerStack struct {
	worker, waiting, setup, importCaches bool
	leaf                                 string
}

// classifyWorkerStack reads a stack (root first).
func classifyWorkerStack(p *profile.Profile, stack []profile.FrameID) workerStack {
	var k workerStack
	for _, f := range stack {
		if attribution.IsWorkerMain(p.Frames[f]) {
			k.worker = true
		}
		if k.worker && isTaskSetup(p.Frames[f]) {
			k.setup = true
		}
		if k.worker && isImportCaches(p.Frames[f]) {
			k.importCaches = true
		}
		if p.Frames[f].Kind == profile.KindPython {
			k.leaf = p.Frames[f].Name
		}
	}
	k.waiting = k.worker && attribution.WaitingForTask(p, stack)
	return k
}

// isTaskSetup reports whether a frame is PySpark's worker reading a
// task's Python functions (pyspark/worker.py's read_udfs, for SQL's UDFs,
// and read_command, for the RDD API's functions; read_command is in
// worker_util.py from Spark 4).
func isTaskSetup(f profile.Frame) bool {
	if f.Kind != profile.KindPython || !strings.HasSuffix(f.File, "worker.py") && !strings.HasSuffix(f.File, "worker_util.py") {
		return false
	}
	return strings.HasSuffix(f.Name, ":read_udfs") || strings.HasSuffix(f.Name, ":read_command")
}

// isImportCaches reports whether a frame is Python clearing its import
// caches (importlib.invalidate_caches and the finders' and zipimport's
// methods it calls), which PySpark's worker does before each task.
func isImportCaches(f profile.Frame) bool {
	if f.Kind != profile.KindPython {
		return false
	}
	file, fn, _ := strings.Cut(f.Name, ":")
	return strings.HasSuffix(fn, "invalidate_caches") &&
		(file == "__init__.py" || strings.HasPrefix(file, "<frozen importlib.") || file == "<frozen zipimport>")
}

// isSerialization reports whether a Python function (py-spy's
// "file.py:function") moves records between the JVM and Python: PySpark's
// serializers, which read and write the stream, and pickle's.
func isSerialization(name string) bool {
	file, _, _ := strings.Cut(name, ":")
	return strings.HasSuffix(file, "pyspark/serializers.py") || strings.Contains(file, "cloudpickle") ||
		file == "pickle.py" || strings.HasSuffix(file, "/pickle.py")
}

// sampleStage returns the stage a sample is labelled with, or -1.
func sampleStage(p *profile.Profile, s profile.Sample) int {
	v, ok := p.LabelSet(s.Labels).Get(profile.LabelStageID)
	if !ok {
		v, ok = p.Labels.Get(profile.LabelStageID)
	}
	if !ok {
		return -1
	}
	id, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return id
}

// stageRunTimes returns the run time of each stage's tasks, all attempts.
func stageRunTimes(app *spark.App) map[int]int64 {
	out := map[int]int64{}
	if app == nil {
		return out
	}
	for _, t := range app.Tasks {
		out[t.StageID] += t.Metrics.RunTimeMs
	}
	return out
}

// topFunctions returns the n functions of most time in byName.
func topFunctions(byName map[string]int64, n int) []PythonFunction {
	fs := []PythonFunction{}
	for name, ns := range byName {
		fs = append(fs, PythonFunction{Name: name, Ms: ns / 1e6})
	}
	slices.SortFunc(fs, func(a, b PythonFunction) int {
		return cmp.Or(cmp.Compare(b.Ms, a.Ms), cmp.Compare(a.Name, b.Name))
	})
	return firstN(fs, n)
}

// PythonSerializationEvidence is a python-serialization finding's: a
// stage's Python workers' time moving records between the JVM and Python,
// against their time serving its tasks and the tasks' run time.
type PythonSerializationEvidence struct {
	StageRef
	SerializationMs int64            `json:"serializationMs"`
	ServingMs       int64            `json:"servingMs"`
	TaskMs          int64            `json:"taskMs"`
	Share           float64          `json:"share"` // SerializationMs over TaskMs
	Functions       []PythonFunction `json:"functions"`
}

func (*PythonSerializationEvidence) evidence() {}

// serializationShare of the workers' time a stage's must spend moving
// records for its python-serialization finding.
const serializationShare = 0.5

// pythonSerializationFindings returns a python-serialization finding for
// each stage whose Python workers served its tasks for at least
// th.PythonShare of its task time and spent most of that
// (serializationShare), and at least th.PythonMinMs, pickling records and
// moving them between the JVM and Python (the RDD API's records, which
// Spark's SQL metrics do not measure), unless findings already has a
// python-udf finding for it, which says the same of a UDF's rows. The
// JVM's side of moving the records (a shuffle of their bytes) is in the
// task time too, so the serialisation is measured against the workers'
// time.
func pythonSerializationFindings(py *PythonTime, app *spark.App, findings []Finding, th Thresholds) []Finding {
	udf := stagesWith(findings, KindPythonUDF)
	var out []Finding
	for _, s := range py.Stages {
		share := share(s.SerializationMs, s.TaskMs)
		if udf[s.StageID] || s.TaskMs == 0 || s.Share < th.PythonShare || s.SerializationMs < th.PythonMinMs ||
			float64(s.SerializationMs) < serializationShare*float64(s.ServingMs) {
			continue
		}
		ev := &PythonSerializationEvidence{StageRef: stageRef(app, s.StageID), SerializationMs: s.SerializationMs,
			ServingMs: s.ServingMs, TaskMs: s.TaskMs, Share: round2(share), Functions: s.Functions}
		msg := fmt.Sprintf("stage %d: its Python workers spent %s moving records between the JVM and Python (pickling them and "+
			"reading and writing the stream), %.0f%% of the stage's %s task time and %.0f%% of their %s serving its tasks",
			s.StageID, english.Millis(s.SerializationMs), 100*share, english.Millis(s.TaskMs),
			100*float64(s.SerializationMs)/float64(max(s.ServingMs, 1)), english.Millis(s.ServingMs))
		out = append(out, Finding{Kind: KindPythonSerialization, Severity: Warning, StageID: intp(s.StageID), Message: msg,
			Suggestion: "records cross between the JVM and Python one pickled object at a time: keep the data in DataFrames and " +
				"use pyspark.sql.functions (no Python worker at all), or move it in Arrow batches (mapInArrow, mapInPandas, pandas " +
				"UDFs); with RDDs, send fewer and smaller records (aggregate in mapPartitions before a shuffle, drop fields early)",
			Evidence: ev, score: float64(s.SerializationMs)})
	}
	return out
}

// stageRef names the latest attempt of a stage of app.
func stageRef(app *spark.App, stage int) StageRef {
	var ref StageRef
	if app == nil {
		return ref
	}
	for _, st := range app.Stages {
		if st.ID == stage && st.Attempt >= ref.StageAttempt {
			ref = StageRef{StageAttempt: st.Attempt, StageName: st.Name}
		}
	}
	return ref
}
