package attribution

import (
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

func TestClassifyThread(t *testing.T) {
	tests := []struct {
		name string
		want ThreadInfo
	}{
		{"Executor task launch worker for task 0",
			ThreadInfo{Pool: PoolTask, Task: true, Stage: -1, StageAttempt: -1, Index: -1, Attempt: -1, TaskID: 0}},
		{"Executor task launch worker for task 1822.0 in stage 0.0 (TID 1822)",
			ThreadInfo{Pool: PoolTask, Task: true, Stage: 0, StageAttempt: 0, Index: 1822, Attempt: 0, TaskID: 1822}},
		{"Executor task launch worker for task 3.1 in stage 12.2 (TID 4711)",
			ThreadInfo{Pool: PoolTask, Task: true, Stage: 12, StageAttempt: 2, Index: 3, Attempt: 1, TaskID: 4711}},
		{"Executor task launch worker-7",
			ThreadInfo{Pool: PoolTask, Idle: true, Stage: -1, StageAttempt: -1, Index: -1, Attempt: -1, TaskID: -1}},
		{"Executor task idle worker#3",
			ThreadInfo{Pool: PoolTask, Idle: true, Stage: -1, StageAttempt: -1, Index: -1, Attempt: -1, TaskID: -1}},
		{"Executor task launch worker for task 3.x in stage 1.0 (TID 9)",
			ThreadInfo{Pool: PoolTask, Stage: -1, StageAttempt: -1, Index: -1, Attempt: -1, TaskID: -1}},
	}
	for _, tt := range tests {
		if got := ClassifyThread(tt.name); got != tt.want {
			t.Errorf("ClassifyThread(%q) = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestPools(t *testing.T) {
	// Thread names seen in the corpus (Uber Stacktrace records, driver logs).
	tests := map[string]string{
		"shuffle-server-5-1":                        PoolShuffle,
		"files-client-6-1":                          PoolShuffle,
		"RemoteBlock-temp-file-clean-thread":        PoolShuffle,
		"dispatcher-event-loop-2":                   PoolRPC,
		"rpc-server-3-1":                            PoolRPC,
		"netty-rpc-env-timeout":                     PoolRPC,
		"spark-listener-group-appStatus":            PoolListenerBus,
		"driver-heartbeater":                        PoolHeartbeater,
		"heartbeat-receiver-event-loop-thread":      PoolHeartbeater,
		"dag-scheduler-event-loop":                  PoolScheduler,
		"task-result-getter-1":                      PoolScheduler,
		"map-output-dispatcher-3":                   PoolScheduler,
		"Reference Handler":                         PoolJVM,
		"C2 CompilerThread0":                        PoolJVM,
		"GC Thread#0":                               PoolGC,
		"G1 Young RemSet Sampling":                  PoolGC,
		"block-manager-storage-async-thread-pool-0": PoolBlockManager,
		"broadcast-exchange-0":                      PoolBroadcast,
		"main":                                      PoolOther,
		"SparkUI-36":                                PoolOther,
	}
	for name, want := range tests {
		if got := ClassifyThread(name).Pool; got != want {
			t.Errorf("pool of %q = %s, want %s", name, got, want)
		}
	}
}

func TestLabelThreads(t *testing.T) {
	p := profile.New()
	cpu := p.AddType(profile.TypeCPU)
	st := p.AddStack([]profile.FrameID{p.AddFrame(profile.Frame{Name: "f"})})
	th := p.AddThread(profile.Thread{ID: 1, Name: "Executor task launch worker for task 5.0 in stage 3.1 (TID 42)"})
	own := p.AddLabels(profile.Labels{{Name: "k", Value: "v"}})
	p.Add(profile.Sample{Stack: st, Value: 1, Type: cpu, Thread: th, Labels: own})
	p.Add(profile.Sample{Stack: st, Value: 1, Type: cpu})
	LabelThreads(p)
	got := p.SampleLabels(p.Samples[0]).String()
	want := `{k="v", spark_partition="5", spark_stage_attempt="1", spark_stage_id="3", spark_task_id="42", thread_pool="task"}`
	if got != want {
		t.Errorf("labels = %s\nwant     %s", got, want)
	}
	if p.Samples[1].Labels != profile.NoLabels {
		t.Errorf("sample without thread got labels %s", p.SampleLabels(p.Samples[1]))
	}
}
