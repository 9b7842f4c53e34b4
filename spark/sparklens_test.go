package spark

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// TestSparklensGolden compares the app and per-stage task aggregates of
// sparklens' data dump for local-1532512550423 (sum, min and max of each
// metric, and the task count) with the model's tasks.
func TestSparklensGolden(t *testing.T) {
	app, _ := build(t, "eventlogs", "sparklens", "local-1532512550423")
	type agg struct {
		Value, Min, Max int64
	}
	type metrics struct {
		Count int            `json:"count"`
		Map   map[string]agg `json:"map"`
	}
	var golden struct {
		AppInfo struct {
			ApplicationID      string
			StartTime, EndTime int64
		} `json:"appInfo"`
		AppMetrics metrics `json:"appMetrics"`
		StageMap   map[string]struct {
			StageMetrics metrics `json:"stageMetrics"`
		} `json:"stageMap"`
	}
	if err := json.Unmarshal(corpus.Read(t, "eventlogs", "golden", "sparklens", "local-1532512550423.sparklens.json"), &golden); err != nil {
		t.Fatal(err)
	}
	if golden.AppInfo.ApplicationID != app.ID || golden.AppInfo.StartTime != app.StartMs || golden.AppInfo.EndTime != app.EndMs {
		t.Errorf("app %s %d-%d, sparklens %+v", app.ID, app.StartMs, app.EndMs, golden.AppInfo)
	}
	value := func(tk *Task, name string) (int64, bool) {
		m := tk.Metrics
		switch name {
		case "taskDuration":
			return tk.DurationMs(), true
		case "executorRuntime":
			return m.RunTimeMs, true
		case "resultSize":
			return m.ResultSize, true
		case "jvmGCTime":
			return m.GCTimeMs, true
		case "memoryBytesSpilled":
			return m.MemorySpilled, true
		case "diskBytesSpilled":
			return m.DiskSpilled, true
		case "peakExecutionMemory":
			return m.PeakExecutionMemory, true
		case "inputBytesRead":
			return m.InputBytes, true
		case "outputBytesWritten":
			return m.OutputBytes, true
		case "shuffleReadBytesRead":
			return m.ShuffleReadBytes(), true
		case "shuffleReadRecordsRead":
			return m.ShuffleReadRecords, true
		case "shuffleReadFetchWaitTime":
			return m.ShuffleFetchWaitMs, true
		case "shuffleReadRemoteBlocks":
			return m.ShuffleRemoteBlocks, true
		case "shuffleReadLocalBlocks":
			return m.ShuffleLocalBlocks, true
		case "shuffleWriteBytesWritten":
			return m.ShuffleWriteBytes, true
		case "shuffleWriteRecordsWritten":
			return m.ShuffleWriteRecords, true
		case "shuffleWriteTime":
			return m.ShuffleWriteTimeNs, true
		}
		return 0, false
	}
	check := func(what string, tasks []*Task, want metrics) {
		if len(tasks) != want.Count {
			t.Errorf("%s: %d tasks, sparklens %d", what, len(tasks), want.Count)
		}
		compared := 0
		for name, w := range want.Map {
			var got agg
			ok := false
			for i, tk := range tasks {
				v, known := value(tk, name)
				if !known {
					break
				}
				ok = true
				got.Value += v
				if i == 0 || v < got.Min {
					got.Min = v
				}
				if i == 0 || v > got.Max {
					got.Max = v
				}
			}
			if !ok {
				continue
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
	check("app", app.Tasks, golden.AppMetrics)
	for id, st := range golden.StageMap {
		var tasks []*Task
		for _, tk := range app.Tasks {
			if fmt.Sprint(tk.StageID) == id {
				tasks = append(tasks, tk)
			}
		}
		check("stage "+id, tasks, st.StageMetrics)
	}
}
