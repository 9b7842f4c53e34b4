package spark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// hsTime parses the History Server's "2022-01-13T02:04:57.127GMT" times.
func hsTime(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse("2006-01-02T15:04:05.000GMT", s)
	if err != nil {
		t.Fatalf("golden time %q: %v", s, err)
	}
	return tm.UnixMilli()
}

func readGolden(t *testing.T, name string, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(corpus.Read(t, "eventlogs", "golden", "apache", name)))
	d.UseNumber() // compare integers as integers
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// compare reports every field whose value differs from the golden's.
func compare(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if g := got[k]; fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s: %s = %v, History Server says %v", what, k, g, w)
		}
	}
}

// TestHistoryServerStage compares stage 2 of local-1642039451826 with the
// History Server's /stages/2 answer, field by field.
func TestHistoryServerStage(t *testing.T) {
	app, _ := build(t, "eventlogs", "apache", "local-1642039451826")
	var golden []map[string]any
	readGolden(t, "one_stage_json_with_partitionId_expectation.json", &golden)
	want := golden[0]
	var st *Stage
	for _, s := range app.Stages {
		if s.ID == 2 && s.Attempt == 0 {
			st = s
		}
	}
	if st == nil {
		t.Fatal("no stage 2")
	}
	m := st.Metrics
	got := map[string]any{
		"stageId": st.ID, "attemptId": st.Attempt, "name": st.Name, "numTasks": st.NumTasks, "status": st.Status,
		"numCompleteTasks": st.TaskCount - st.FailedTaskCount - st.KilledTaskCount,
		"numFailedTasks":   st.FailedTaskCount, "numKilledTasks": st.KilledTaskCount,
		"submissionTime": st.SubmitMs, "completionTime": st.CompleteMs, "firstTaskLaunchedTime": st.FirstLaunchMs,
		"executorRunTime": m.RunTimeMs, "executorCpuTime": m.CPUTimeNs,
		"executorDeserializeTime": m.DeserializeMs, "executorDeserializeCpuTime": m.DeserializeCPUNs,
		"resultSerializationTime": m.ResultSerializationMs, "jvmGcTime": m.GCTimeMs, "resultSize": m.ResultSize,
		"peakExecutionMemory": m.PeakExecutionMemory, "memoryBytesSpilled": m.MemorySpilled, "diskBytesSpilled": m.DiskSpilled,
		"inputBytes": m.InputBytes, "inputRecords": m.InputRecords, "outputBytes": m.OutputBytes, "outputRecords": m.OutputRecords,
		"shuffleRemoteBlocksFetched": m.ShuffleRemoteBlocks, "shuffleLocalBlocksFetched": m.ShuffleLocalBlocks,
		"shuffleFetchWaitTime": m.ShuffleFetchWaitMs, "shuffleRemoteBytesRead": m.ShuffleRemoteBytes,
		"shuffleRemoteBytesReadToDisk": m.ShuffleRemoteToDisk, "shuffleLocalBytesRead": m.ShuffleLocalBytes,
		"shuffleReadBytes": m.ShuffleReadBytes(), "shuffleReadRecords": m.ShuffleReadRecords,
		"shuffleWriteBytes": m.ShuffleWriteBytes, "shuffleWriteTime": m.ShuffleWriteTimeNs, "shuffleWriteRecords": m.ShuffleWriteRecords,
		"rddIds": fmt.Sprint(st.RDDIDs),
	}
	for _, k := range []string{"submissionTime", "completionTime", "firstTaskLaunchedTime"} {
		want[k] = hsTime(t, want[k].(string))
	}
	rdds := want["rddIds"].([]any)
	ids := make([]int, len(rdds))
	for i, r := range rdds {
		n, _ := r.(json.Number).Int64()
		ids[i] = int(n)
	}
	want["rddIds"] = fmt.Sprint(ids)
	execSummary := want["executorSummary"].(map[string]any)
	for k := range want {
		if _, ok := got[k]; !ok {
			delete(want, k) // fields the model does not keep: accumulators, executor metrics, push-based shuffle
		}
	}
	compare(t, "stage 2", got, want)

	// The per-executor summary of the stage, from its tasks.
	for id, es := range execSummary {
		w := es.(map[string]any)
		var sum TaskMetrics
		var taskTime int64
		var ok, failed, killed int
		for _, tk := range app.Tasks {
			if tk.StageID != 2 || tk.StageAttempt != 0 || tk.ExecutorID != id {
				continue
			}
			sum.Add(&tk.Metrics)
			taskTime += tk.DurationMs()
			switch tk.Status {
			case "SUCCESS":
				ok++
			case "KILLED":
				killed++
			default:
				failed++
			}
		}
		compare(t, "stage 2 executor "+id, map[string]any{
			"taskTime": taskTime, "succeededTasks": ok, "failedTasks": failed, "killedTasks": killed,
			"inputBytes": sum.InputBytes, "inputRecords": sum.InputRecords, "outputBytes": sum.OutputBytes,
			"outputRecords": sum.OutputRecords, "shuffleRead": sum.ShuffleReadBytes(), "shuffleReadRecords": sum.ShuffleReadRecords,
			"shuffleWrite": sum.ShuffleWriteBytes, "shuffleWriteRecords": sum.ShuffleWriteRecords,
			"memoryBytesSpilled": sum.MemorySpilled, "diskBytesSpilled": sum.DiskSpilled,
		}, map[string]any{
			"taskTime": w["taskTime"], "succeededTasks": w["succeededTasks"], "failedTasks": w["failedTasks"], "killedTasks": w["killedTasks"],
			"inputBytes": w["inputBytes"], "inputRecords": w["inputRecords"], "outputBytes": w["outputBytes"],
			"outputRecords": w["outputRecords"], "shuffleRead": w["shuffleRead"], "shuffleReadRecords": w["shuffleReadRecords"],
			"shuffleWrite": w["shuffleWrite"], "shuffleWriteRecords": w["shuffleWriteRecords"],
			"memoryBytesSpilled": w["memoryBytesSpilled"], "diskBytesSpilled": w["diskBytesSpilled"],
		})
	}
}

// TestHistoryServerTaskList compares the tasks of stage 0 of
// local-1642039451826 with the History Server's taskList answer.
func TestHistoryServerTaskList(t *testing.T) {
	app, _ := build(t, "eventlogs", "apache", "local-1642039451826")
	var golden []map[string]any
	readGolden(t, "stage_task_list_with_partitionId_expectation.json", &golden)
	byID := map[int64]*Task{}
	for _, tk := range app.Tasks {
		if tk.StageID == 0 {
			byID[tk.ID] = tk
		}
	}
	if len(byID) != len(golden) {
		t.Errorf("stage 0 has %d tasks, History Server lists %d", len(byID), len(golden))
	}
	for _, w := range golden {
		id, _ := w["taskId"].(json.Number).Int64()
		tk := byID[id]
		if tk == nil {
			t.Errorf("task %d missing", id)
			continue
		}
		m := tk.Metrics
		got := map[string]any{
			"taskId": tk.ID, "index": tk.Index, "attempt": tk.Attempt, "partitionId": tk.Partition,
			"launchTime": tk.LaunchMs, "duration": tk.DurationMs(), "executorId": tk.ExecutorID, "host": tk.Host,
			"status": tk.Status, "taskLocality": tk.Locality, "speculative": tk.Speculative,
			"schedulerDelay": tk.SchedulerDelayMs(), "gettingResultTime": tk.GettingResultMs(),
		}
		want := map[string]any{}
		for k := range got {
			want[k] = w[k]
		}
		want["launchTime"] = hsTime(t, w["launchTime"].(string))
		compare(t, fmt.Sprintf("task %d", id), got, want)
		wm := w["taskMetrics"].(map[string]any)
		sub := func(k string) map[string]any { return wm[k].(map[string]any) }
		compare(t, fmt.Sprintf("task %d metrics", id), map[string]any{
			"executorRunTime": m.RunTimeMs, "executorCpuTime": m.CPUTimeNs, "executorDeserializeTime": m.DeserializeMs,
			"executorDeserializeCpuTime": m.DeserializeCPUNs, "resultSerializationTime": m.ResultSerializationMs,
			"jvmGcTime": m.GCTimeMs, "resultSize": m.ResultSize, "peakExecutionMemory": m.PeakExecutionMemory,
			"memoryBytesSpilled": m.MemorySpilled, "diskBytesSpilled": m.DiskSpilled,
			"bytesRead": m.InputBytes, "recordsRead": m.InputRecords, "bytesWritten": m.OutputBytes, "recordsWritten": m.OutputRecords,
			"remoteBlocksFetched": m.ShuffleRemoteBlocks, "localBlocksFetched": m.ShuffleLocalBlocks, "fetchWaitTime": m.ShuffleFetchWaitMs,
			"remoteBytesRead": m.ShuffleRemoteBytes, "remoteBytesReadToDisk": m.ShuffleRemoteToDisk, "localBytesRead": m.ShuffleLocalBytes,
			"shuffleRecordsRead": m.ShuffleReadRecords, "shuffleBytesWritten": m.ShuffleWriteBytes, "writeTime": m.ShuffleWriteTimeNs,
			"shuffleRecordsWritten": m.ShuffleWriteRecords,
		}, map[string]any{
			"executorRunTime": wm["executorRunTime"], "executorCpuTime": wm["executorCpuTime"], "executorDeserializeTime": wm["executorDeserializeTime"],
			"executorDeserializeCpuTime": wm["executorDeserializeCpuTime"], "resultSerializationTime": wm["resultSerializationTime"],
			"jvmGcTime": wm["jvmGcTime"], "resultSize": wm["resultSize"], "peakExecutionMemory": wm["peakExecutionMemory"],
			"memoryBytesSpilled": wm["memoryBytesSpilled"], "diskBytesSpilled": wm["diskBytesSpilled"],
			"bytesRead": sub("inputMetrics")["bytesRead"], "recordsRead": sub("inputMetrics")["recordsRead"],
			"bytesWritten": sub("outputMetrics")["bytesWritten"], "recordsWritten": sub("outputMetrics")["recordsWritten"],
			"remoteBlocksFetched": sub("shuffleReadMetrics")["remoteBlocksFetched"], "localBlocksFetched": sub("shuffleReadMetrics")["localBlocksFetched"],
			"fetchWaitTime": sub("shuffleReadMetrics")["fetchWaitTime"], "remoteBytesRead": sub("shuffleReadMetrics")["remoteBytesRead"],
			"remoteBytesReadToDisk": sub("shuffleReadMetrics")["remoteBytesReadToDisk"], "localBytesRead": sub("shuffleReadMetrics")["localBytesRead"],
			"shuffleRecordsRead": sub("shuffleReadMetrics")["recordsRead"], "shuffleBytesWritten": sub("shuffleWriteMetrics")["bytesWritten"],
			"writeTime": sub("shuffleWriteMetrics")["writeTime"], "shuffleRecordsWritten": sub("shuffleWriteMetrics")["recordsWritten"],
		})
	}
}

// TestHistoryServerExecutors compares the executor summaries of two apps
// with the History Server's /executors answers. Intended difference: the
// History Server reports a totalDuration for a driver that ran no task
// (10,671 ms for app-20161116163331-0000); sparkprof sums task durations
// only, so the driver's is 0 and is not compared.
func TestHistoryServerExecutors(t *testing.T) {
	tests := []struct{ log, golden string }{
		{"app-20161116163331-0000", "executor_node_excludeOnFailure_expectation.json"},
		{"application_1536831636016_59384_1", "executor_list_with_executor_garbage_collection_metrics_json_expectation.json"},
	}
	for _, tt := range tests {
		t.Run(tt.log, func(t *testing.T) {
			app, _ := build(t, "eventlogs", "apache", tt.log)
			var golden []map[string]any
			readGolden(t, tt.golden, &golden)
			byID := map[string]*Executor{}
			for _, e := range app.Executors {
				byID[e.ID] = e
			}
			if len(app.Executors) != len(golden) {
				t.Errorf("%d executors, History Server lists %d", len(app.Executors), len(golden))
			}
			for _, w := range golden {
				id := w["id"].(string)
				e := byID[id]
				if e == nil {
					t.Errorf("executor %s missing", id)
					continue
				}
				got := map[string]any{
					"totalCores": e.Cores, "maxMemory": e.MaxMemory, "addTime": e.AddedMs,
					"totalTasks": e.TotalTasks, "completedTasks": e.CompletedTasks, "failedTasks": e.FailedTasks,
					"totalDuration": e.TotalDurationMs, "totalGCTime": e.TotalGCTimeMs, "totalInputBytes": e.InputBytes,
					"totalShuffleRead": e.ShuffleRead, "totalShuffleWrite": e.ShuffleWrite, "isExcluded": e.Excluded,
				}
				want := map[string]any{}
				for k := range got {
					if v, ok := w[k]; ok {
						want[k] = v
					}
				}
				if id == "driver" {
					delete(want, "totalDuration")
				}
				want["addTime"] = hsTime(t, w["addTime"].(string))
				if w["isExcluded"] == nil {
					want["isExcluded"] = w["isBlacklisted"]
				}
				compare(t, "executor "+id, got, want)
			}
		})
	}
}
