package uber_test

import (
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// TestThreadLabels checks that Uber records decoded through format.Decode
// carry the task labels of their Spark thread names: the straggler's task
// 0 thread runs in about 1,072 samples, and a Console reporter record of
// "Executor task launch worker for task 7" is task 7's.
func TestThreadLabels(t *testing.T) {
	console := `ConsoleOutputReporter - Stacktrace: {"stacktrace":[],"endEpoch":1550400756483,"appId":"app-1","host":"h1","name":"1@h1","threadState":"RUNNABLE","count":1,"threadName":"Executor task launch worker for task 7"}`
	tests := []struct {
		name     string
		data     []byte
		task     string
		min, max int
	}{
		{"ProfileStraggler", corpus.Read(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"), "0", 1000, 1100},
		{"console", []byte(console), "7", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := format.Decode(tt.data, tt.name, format.Options{Format: "uber"})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range p.Samples {
				if p.Label(s, profile.LabelTaskID) == tt.task && s.State == profile.StateRunnable {
					n++
				}
			}
			if n < tt.min || n > tt.max {
				t.Errorf("task %s RUNNABLE in %d samples, want %d to %d", tt.task, n, tt.min, tt.max)
			}
		})
	}
}
