package spark

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// sparklensAgg is sparklens' aggregate of one metric over tasks.
type sparklensAgg struct {
	Value, Min, Max int64
}

// sparklensMetrics is sparklens' aggregates of the metrics of some tasks.
type sparklensMetrics struct {
	Count int                     `json:"count"`
	Map   map[string]sparklensAgg `json:"map"`
}

// sparklensValues maps sparklens' metric names to the model's values.
var sparklensValues = map[string]func(*Task) int64{
	"taskDuration":               func(tk *Task) int64 { return tk.DurationMs() },
	"executorRuntime":            func(tk *Task) int64 { return tk.Metrics.RunTimeMs },
	"resultSize":                 func(tk *Task) int64 { return tk.Metrics.ResultSize },
	"jvmGCTime":                  func(tk *Task) int64 { return tk.Metrics.GCTimeMs },
	"memoryBytesSpilled":         func(tk *Task) int64 { return tk.Metrics.MemorySpilled },
	"diskBytesSpilled":           func(tk *Task) int64 { return tk.Metrics.DiskSpilled },
	"peakExecutionMemory":        func(tk *Task) int64 { return tk.Metrics.PeakExecutionMemory },
	"inputBytesRead":             func(tk *Task) int64 { return tk.Metrics.InputBytes },
	"outputBytesWritten":         func(tk *Task) int64 { return tk.Metrics.OutputBytes },
	"shuffleReadBytesRead":       func(tk *Task) int64 { return tk.Metrics.ShuffleReadBytes() },
	"shuffleReadRecordsRead":     func(tk *Task) int64 { return tk.Metrics.ShuffleReadRecords },
	"shuffleReadFetchWaitTime":   func(tk *Task) int64 { return tk.Metrics.ShuffleFetchWaitMs },
	"shuffleReadRemoteBlocks":    func(tk *Task) int64 { return tk.Metrics.ShuffleRemoteBlocks },
	"shuffleReadLocalBlocks":     func(tk *Task) int64 { return tk.Metrics.ShuffleLocalBlocks },
	"shuffleWriteBytesWritten":   func(tk *Task) int64 { return tk.Metrics.ShuffleWriteBytes },
	"shuffleWriteRecordsWritten": func(tk *Task) int64 { return tk.Metrics.ShuffleWriteRecords },
	"shuffleWriteTime":           func(tk *Task) int64 { return tk.Metrics.ShuffleWriteTimeNs },
}

// TestSparklensGolden compares the app and per-stage task aggregates of
// sparklens' data dump for local-1532512550423 (sum, min and max of each
// metric, and the task count) with the model's tasks.
func TestSparklensGolden(t *testing.T) {
	app, _ := build(t, "eventlogs", "sparklens", "local-1532512550423")
	var golden struct {
		AppInfo struct {
			ApplicationID      string
			StartTime, EndTime int64
		} `json:"appInfo"`
		AppMetrics sparklensMetrics `json:"appMetrics"`
		StageMap   map[string]struct {
			StageMetrics sparklensMetrics `json:"stageMetrics"`
		} `json:"stageMap"`
	}
	if err := json.Unmarshal(corpus.Read(t, "eventlogs", "golden", "sparklens", "local-1532512550423.sparklens.json"), &golden); err != nil {
		t.Fatal(err)
	}
	if golden.AppInfo.ApplicationID != app.ID || golden.AppInfo.StartTime != app.StartMs || golden.AppInfo.EndTime != app.EndMs {
		t.Errorf("app %s %d-%d, sparklens %+v", app.ID, app.StartMs, app.EndMs, golden.AppInfo)
	}
	checkSparklens(t, "app", app.Tasks, golden.AppMetrics)
	for id, st := range golden.StageMap {
		var tasks []*Task
		for _, tk := range app.Tasks {
			if fmt.Sprint(tk.StageID) == id {
				tasks = append(tasks, tk)
			}
		}
		checkSparklens(t, "stage "+id, tasks, st.StageMetrics)
	}
}

// checkSparklens compares the aggregates of tasks, named by what, with
// sparklens': the task count, and the sum, min and max of each metric
// sparklensValues knows, of which there must be 15 at least.
func checkSparklens(t *testing.T, what string, tasks []*Task, want sparklensMetrics) {
	t.Helper()
	if len(tasks) != want.Count {
		t.Errorf("%s: %d tasks, sparklens %d", what, len(tasks), want.Count)
	}
	compared := 0
	for name, w := range want.Map {
		value, known := sparklensValues[name]
		if !known || len(tasks) == 0 {
			continue
		}
		var got sparklensAgg
		for i, tk := range tasks {
			v := value(tk)
			got.Value += v
			if i == 0 || v < got.Min {
				got.Min = v
			}
			if i == 0 || v > got.Max {
				got.Max = v
			}
		}
		compared++
		if got != w {
			t.Errorf("%s %s: %+v, sparklens %+v", what, name, got, w)
		}
	}
	if compared < 15 {
		t.Errorf("%s: compared only %d metrics", what, compared)
	}
}
