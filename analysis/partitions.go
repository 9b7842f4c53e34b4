package analysis

import (
	"fmt"
	"slices"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// targetPartitionBytes is the partition size a too-few-tasks finding
// suggests splitting a stage's data into: Spark's own default for file
// splits (spark.sql.files.maxPartitionBytes).
const targetPartitionBytes = 128 << 20

// fewTasksRule: a stage with fewer tasks than the executor slots that were
// free while it ran, whose tasks ran long on much data: more partitions
// would have used the idle slots.
func fewTasksRule(f *stageFacts, th Thresholds) (Finding, bool) {
	if f.median < th.FewTasksMinMs || f.app == nil || f.spanMs <= 0 {
		return Finding{}, false
	}
	reads := make([]int64, len(f.tasks))
	var input, shuffle int64
	for i, t := range f.tasks {
		reads[i] = t.Metrics.InputBytes + t.Metrics.ShuffleReadBytes()
		input += t.Metrics.InputBytes
		shuffle += t.Metrics.ShuffleReadBytes()
	}
	medRead := median(slices.Clone(reads))
	if medRead < th.FewTasksMinBytes {
		return Finding{}, false
	}
	from := f.stage.FirstLaunchMs
	free := freeSlots(f.app, f.stage, from, from+f.spanMs)
	n := len(f.tasks)
	if int(free) <= n {
		return Finding{}, false
	}
	parts := max(int((input+shuffle+targetPartitionBytes-1)/targetPartitionBytes), int(free))
	// Their work spread over the free slots, but no faster than the
	// longest task's data split into target-sized parts would run.
	est := max(f.sumMs/int64(free), f.sumMs/int64(parts))
	sev := Warning
	if f.app.DurationMs > 0 && share(f.spanMs, f.app.DurationMs) >= 0.25 {
		sev = Critical
	}
	msg := fmt.Sprintf("stage %d: %s of a median %s on %s each, while %.0f executor slots were free: too few partitions to use them",
		f.stage.ID, english.Plural(n, "task"), english.Millis(f.median), english.Bytes(medRead), free)
	msg += fmt.Sprintf("; split into %d it would take about %s instead of %s", parts, english.Millis(est), english.Millis(f.spanMs))
	return Finding{Kind: KindTooFewTasks, Severity: sev, Message: msg,
		Suggestion: fewTasksSuggestion(f.config, input, shuffle, parts),
		Evidence: &TooFewTasksEvidence{Tasks: n, FreeSlots: round2(free), MedianMs: f.median, MedianBytes: medRead,
			InputBytes: input, ShuffleReadBytes: shuffle, Partitions: parts, EstimatedMs: est, StageSpanMs: f.spanMs, StageRef: f.stageRef()},
		score: float64(f.spanMs - est)}, true
}

// fewTasksSuggestion says how to give a stage parts partitions: through
// the shuffle's partition count when it read a shuffle, else through the
// input's splits.
func fewTasksSuggestion(config map[string]string, input, shuffle int64, parts int) string {
	if shuffle >= input {
		now := config["spark.sql.shuffle.partitions"]
		if now == "" {
			now = "200, the default"
		}
		return fmt.Sprintf("it read %s of shuffle data: repartition(%d) before it, or for SQL raise spark.sql.shuffle.partitions (now %s) to %d; "+
			"with AQE (spark.sql.adaptive.enabled) set spark.sql.adaptive.coalescePartitions.initialPartitionNum=%d and spark.sql.adaptive.advisoryPartitionSizeInBytes=128m",
			english.Bytes(shuffle), parts, now, parts, parts)
	}
	return fmt.Sprintf("it read %s of input in few splits: lower spark.sql.files.maxPartitionBytes, write the input as more or splittable files (gzip is not splittable), or repartition(%d) after reading",
		english.Bytes(input), parts)
}

// freeSlots returns the mean number of executor cores from–until that no
// task of another stage attempt than st kept busy: the executors' cores
// while they were alive, less the other stages' tasks running then.
func freeSlots(app *spark.App, st *spark.Stage, from, until int64) float64 {
	span := until - from
	if span <= 0 {
		return 0
	}
	overlap := func(a, b int64) int64 {
		if b == 0 || b > until {
			b = until // alive to the end
		}
		return max(b-max(a, from), 0)
	}
	var coreMs int64
	for _, e := range app.Executors {
		if e.ID == "driver" || e.Cores <= 0 {
			continue
		}
		coreMs += int64(e.Cores) * overlap(e.AddedMs, e.RemovedMs)
	}
	for _, t := range app.Tasks {
		if (t.StageID != st.ID || t.StageAttempt != st.Attempt) && t.FinishMs > t.LaunchMs && t.LaunchMs < until && t.FinishMs > from {
			coreMs -= overlap(t.LaunchMs, t.FinishMs)
		}
	}
	return float64(max(coreMs, 0)) / float64(span)
}
