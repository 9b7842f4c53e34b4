package spark

import (
	"testing"

	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

// TestFromLogs builds the apps of the straggler riddles' console logs: one
// job of one stage of three tasks on the driver (local[3]), whose
// durations are those the TaskSetManager lines give (the corpus README).
func TestFromLogs(t *testing.T) {
	tests := []struct {
		rel    []string
		taskMs [3]int64 // TID 0, 1, 2
	}{
		{[]string{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"}, [3]int64{1_070_586, 122_813, 137_399}},
		{[]string{"applogs", "phil_stopwatch", "profile_straggler", "Straggler_PySpark.log.gz"}, [3]int64{566_462, 35_899, 39_995}},
	}
	for _, tt := range tests {
		t.Run(tt.rel[2], func(t *testing.T) {
			logs, err := applog.OpenAll(corpus.Path(t, tt.rel...), applog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			app := FromLogs(logs)
			if app.JobCount != 1 || len(app.Stages) != 1 || app.TaskCount != 3 || app.FailedTaskCount != 0 {
				t.Fatalf("%d jobs, %d stages, %d tasks (%d failed); want 1, 1, 3 (0)", app.JobCount, len(app.Stages), app.TaskCount, app.FailedTaskCount)
			}
			if st := app.Stages[0]; st.ID != 0 || st.Status != "COMPLETE" || st.NumTasks != 3 || st.DurationMs <= 0 {
				t.Errorf("stage %+v, want stage 0 complete with 3 tasks", st)
			}
			if len(app.Executors) != 1 || app.Executors[0].ID != "driver" || app.ExecutorCount != 0 || app.Executors[0].CompletedTasks != 3 {
				t.Errorf("executors %+v, want the driver alone with 3 tasks", app.Executors)
			}
			for _, task := range app.Tasks {
				if task.ID < 0 || task.ID > 2 {
					t.Fatalf("task id %d, want 0 to 2", task.ID)
				}
				// Launch and finish times are whole seconds; durations ms.
				if got, want := task.DurationMs(), tt.taskMs[task.ID]; got < want-1000 || got > want+1000 {
					t.Errorf("task %d ran %d ms, want about %d", task.ID, got, want)
				}
			}
			if app.DurationMs <= app.Stages[0].DurationMs {
				t.Errorf("app ran %d ms, stage %d ms: want the app longer", app.DurationMs, app.Stages[0].DurationMs)
			}
		})
	}
}

func TestFailureClass(t *testing.T) {
	tests := []struct{ reason, want string }{
		{"java.lang.RuntimeException: boom", "ExceptionFailure"},
		{"ExecutorLostFailure (executor 1 exited caused by one of the running tasks) Reason: Container killed", "ExecutorLostFailure"},
		{"TaskKilled (another attempt succeeded)", "TaskKilled"},
		{"FetchFailed(BlockManagerId(2, host, 7337, None), shuffleId=0)", "FetchFailed"},
		{"org.apache.spark.SparkException: Task failed", "ExceptionFailure"},
	}
	for _, tt := range tests {
		if got := failureClass(tt.reason); got != tt.want {
			t.Errorf("failureClass(%q) = %q, want %q", tt.reason, got, tt.want)
		}
	}
}
