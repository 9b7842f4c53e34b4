package attribution

import (
	"strconv"
	"strings"
)

// Thread pools a thread can belong to. They are the values of the
// thread_pool label.
const (
	PoolTask         = "task"          // executor task launch workers
	PoolShuffle      = "shuffle"       // shuffle and block transfer (netty)
	PoolRPC          = "rpc"           // RPC dispatcher and server
	PoolListenerBus  = "listener-bus"  // driver listener bus
	PoolHeartbeater  = "heartbeater"   // executor and driver heartbeats
	PoolBlockManager = "block-manager" // block manager
	PoolBroadcast    = "broadcast"     // broadcast exchange and torrent
	PoolGC           = "gc"            // garbage collector threads
	PoolJVM          = "jit-vm"        // JIT compilers and VM threads
	PoolScheduler    = "scheduler"     // driver scheduling (DAG, task results)
	PoolOther        = "other"
)

// ThreadInfo is what a thread name tells about a thread.
type ThreadInfo struct {
	Pool string
	// Task is set for threads that run (or last ran) a known task.
	Task bool
	// Idle marks task threads that run no task (Spark 4.2+ idle workers,
	// workers not yet started).
	Idle bool
	// Stage, StageAttempt, Index and Attempt are -1 when the name does not
	// carry them (Spark up to 3.0 names only the task id).
	Stage, StageAttempt int
	Index, Attempt      int // task index within the stage, task attempt
	TaskID              int64
}

const (
	taskPrefix = "Executor task launch worker"
	idlePrefix = "Executor task idle worker"
)

// ClassifyThread returns what name tells about its thread: executor task
// threads yield their stage, stage attempt, task index and task id; every
// other thread is put in a thread pool (shuffle, rpc, listener bus, GC, ...).
func ClassifyThread(name string) ThreadInfo {
	info := ThreadInfo{Pool: PoolOther, Stage: -1, StageAttempt: -1, Index: -1, Attempt: -1, TaskID: -1}
	switch {
	case strings.HasPrefix(name, taskPrefix):
		info.Pool = PoolTask
		parseTask(strings.TrimPrefix(name, taskPrefix), &info)
		return info
	case strings.HasPrefix(name, idlePrefix):
		info.Pool = PoolTask
		info.Idle = true
		return info
	}
	info.Pool = pool(name)
	return info
}

// parseTask reads the part of a task thread name after the prefix:
// " for task 7" (Spark <= 3.0), " for task 3.0 in stage 2.0 (TID 7)"
// (Spark 3.1+) or "-12" (a worker that has not run a task yet).
func parseTask(rest string, info *ThreadInfo) {
	rest, ok := strings.CutPrefix(rest, " for task ")
	if !ok {
		info.Idle = true
		return
	}
	if tid, err := strconv.ParseInt(rest, 10, 64); err == nil {
		info.Task, info.TaskID = true, tid
		return
	}
	// "3.0 in stage 2.0 (TID 7)"
	task, rest, ok1 := strings.Cut(rest, " in stage ")
	stage, rest, ok2 := strings.Cut(rest, " (TID ")
	tid, ok3 := strings.CutSuffix(rest, ")")
	if !ok1 || !ok2 || !ok3 {
		return
	}
	id, err := strconv.ParseInt(tid, 10, 64)
	if err != nil {
		return
	}
	idx, att, okT := pair(task)
	st, stAtt, okS := pair(stage)
	if !okT || !okS {
		return
	}
	info.Task, info.TaskID = true, id
	info.Index, info.Attempt = idx, att
	info.Stage, info.StageAttempt = st, stAtt
}

// pair parses "a.b" into two non-negative integers.
func pair(s string) (int, int, bool) {
	a, b, ok := strings.Cut(s, ".")
	if !ok {
		return 0, 0, false
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return x, y, err1 == nil && err2 == nil && x >= 0 && y >= 0
}

// pool maps a non-task thread name to its pool by the names Spark, Netty
// and the JVM give their threads.
func pool(name string) string {
	for _, r := range poolRules {
		for _, p := range r.prefixes {
			if strings.HasPrefix(name, p) {
				return r.pool
			}
		}
	}
	return PoolOther
}

var poolRules = []struct {
	pool     string
	prefixes []string
}{
	{PoolRPC, []string{"netty-rpc"}},
	{PoolShuffle, []string{"shuffle-", "files-client", "files-server", "RemoteBlock", "netty-", "threadDeathWatcher", "fetch-", "push-based-shuffle", "shuffle-chunk"}},
	{PoolRPC, []string{"dispatcher-", "rpc-", "inbox-", "spark-rpc"}},
	{PoolListenerBus, []string{"spark-listener-group-", "SparkListenerBus", "element-tracking-store"}},
	{PoolHeartbeater, []string{"driver-heartbeater", "executor-heartbeater", "heartbeat-receiver"}},
	{PoolBlockManager, []string{"block-manager", "BlockManager", "block-", "spark-block"}},
	{PoolBroadcast, []string{"broadcast-", "Broadcast", "torrent"}},
	{PoolGC, []string{"GC Thread", "G1 ", "GC task", "Gang worker", "Concurrent Mark", "ZGC", "ZThread", "Shenandoah", "PS ", "Parallel GC", "CMS", "VM Periodic"}},
	{PoolJVM, []string{"C1 CompilerThread", "C2 CompilerThread", "C1-", "C2-", "VM Thread", "Signal Dispatcher", "Service Thread", "Reference Handler", "Finalizer", "Common-Cleaner", "Sweeper thread", "Attach Listener", "DestroyJavaVM", "Notification Thread", "JFR ", "process reaper"}},
	{PoolScheduler, []string{"dag-scheduler", "task-result-getter", "map-output-dispatcher", "spark-dynamic-executor-allocation", "context-cleaner", "Spark Context Cleaner", "task-scheduler", "driver-revive-thread", "kill-executor-thread", "executor-kill-mark-cleanup", "cleaner"}},
}
