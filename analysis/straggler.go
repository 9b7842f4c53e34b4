package analysis

import (
	"fmt"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// skewSuggestion is what a finding of data skew suggests.
const skewSuggestion = "find the hot key or partition: repartition on a better-distributed key or salt the hot one; for joins, let AQE split skewed partitions (spark.sql.adaptive.skewJoin.enabled)"

// stragglerCause says, from its metrics against the other tasks of its
// stage, why a straggler ran long: when it ran under half its time, what
// took the rest (deserialising it, which first says was one of a new
// executor's first tasks, fetching its result, or scheduler delay); else
// the first of data skew, garbage collection, waiting for shuffle data,
// spilling, a slow host (the other tasks there ran long too), running off
// CPU and, when none of those, its own work. It returns the cause's kind,
// a phrase for the finding's message and a suggestion, or ok false when
// the tasks carry no metrics (from logs).
func stragglerCause(t *spark.Task, others []*spark.Task, first bool, th Thresholds) (kind, phrase, suggestion string, ok bool) {
	m := &t.Metrics
	if m.RunTimeMs <= 0 || len(others) == 0 {
		return "", "", "", false
	}
	// Time before and after the task ran: its run time may be typical.
	if dur := t.DurationMs(); dur > 0 && share(m.RunTimeMs, dur) < 0.5 {
		switch d, r, wait := m.DeserializeMs, t.GettingResultMs(), t.SchedulerDelayMs(); {
		case d >= r && d >= wait:
			if first {
				return "deserialize", fmt.Sprintf("%s of its %s went to deserialising the task before it ran, one of its executor's first tasks (they load classes and broadcasts)",
						english.Millis(d), english.Millis(dur)),
					"a new executor's first tasks start slow: keep executors longer (spark.dynamicAllocation.executorIdleTimeout), and broadcast large variables once", true
			}
			return "deserialize", fmt.Sprintf("%s of its %s went to deserialising the task before it ran", english.Millis(d), english.Millis(dur)),
				"a large closure or task binary: broadcast large variables once instead of shipping them with each task", true
		case r >= wait:
			return "result", fmt.Sprintf("%s of its %s went to fetching its result to the driver", english.Millis(r), english.Millis(dur)),
				"bring less back to the driver (collect, take, large accumulators); or raise spark.driver.maxResultSize only if it must", true
		default:
			return "scheduler-delay", fmt.Sprintf("%s of its %s was scheduler delay: sending the task and its result", english.Millis(wait), english.Millis(dur)),
				"a large task binary or result, or a busy driver: broadcast large closures, check the driver's CPU and GC", true
		}
	}
	read := func(t *spark.Task) int64 { return t.Metrics.InputBytes + t.Metrics.ShuffleReadBytes() }
	records := func(t *spark.Task) int64 { return t.Metrics.InputRecords + t.Metrics.ShuffleReadRecords }
	medianOf := func(f func(*spark.Task) int64) int64 {
		xs := make([]int64, len(others))
		for i, o := range others {
			xs[i] = f(o)
		}
		return median(xs)
	}
	if r, med := read(t), medianOf(read); med > 0 && r >= th.SkewMinBytes && float64(r) >= th.SkewRatio*float64(med) {
		return "skew", fmt.Sprintf("it read %.1fx the median task's data (%s against %s): data skew",
				float64(r)/float64(med), english.Bytes(r), english.Bytes(med)),
			skewSuggestion, true
	}
	if r, med := records(t), medianOf(records); med > 0 && float64(r) >= th.SkewRatio*float64(med) {
		return "skew", fmt.Sprintf("it read %.1fx the median task's records (%d against %d): data skew", float64(r)/float64(med), r, med),
			skewSuggestion, true
	}
	// Its GC time is its JVM's while it ran, against its whole time (GC
	// while it deserialised counts too).
	if g := share(m.GCTimeMs, t.DurationMs()); g >= 2*th.GCShare {
		return "gc", fmt.Sprintf("its JVM spent %.0f%% of its time in GC (%s)", 100*g, english.Millis(m.GCTimeMs)),
			"the partition holds more live data than the others: more memory per task, or more partitions", true
	}
	if w := share(m.ShuffleFetchWaitMs, m.RunTimeMs); w >= th.ShuffleWaitShare {
		return "shuffle-wait", fmt.Sprintf("it waited %.0f%% of its run time for shuffle data (%s)", 100*w, english.Millis(m.ShuffleFetchWaitMs)),
			"check the hosts it fetched from (a slow or lost node) and the network", true
	}
	if m.DiskSpilled > 0 && medianOf(func(t *spark.Task) int64 { return t.Metrics.DiskSpilled }) == 0 {
		return "spill", fmt.Sprintf("it spilled %s to disk, the median task nothing", english.Bytes(m.DiskSpilled)),
			"give the partition more memory, or use more partitions so each holds less", true
	}
	if t.Host != "" {
		var there []int64
		for _, o := range others {
			if o.Host == t.Host {
				there = append(there, o.DurationMs())
			}
		}
		if all := medianOf(func(t *spark.Task) int64 { return t.DurationMs() }); len(there) >= 2 && all > 0 &&
			float64(median(there)) >= 2*float64(all) {
			return "slow-host", fmt.Sprintf("the other tasks on its host %s ran %.1fx the median too: a slow node", t.Host, float64(median(there))/float64(all)),
				"look at the node (disk, CPU steal, noisy neighbours); exclude it or enable speculation (spark.speculation)", true
		}
	}
	if m.CPUTimeNs > 0 {
		if c := share(m.CPUTimeNs/1e6, m.RunTimeMs); c < 0.5 {
			return "off-cpu", fmt.Sprintf("its data and host were like the others', and it ran on a CPU %.0f%% of its run time: it waited (I/O, locks, an external call)", 100*c),
				"the wall-clock flame graph of this task shows what it waited for", true
		}
	}
	return "compute", "its data and host were like the others': its own work took the time (a costly record or code path)",
		"the flame graph of this task shows where its time went", true
}
