package analysis

import (
	"cmp"
	"slices"
	"sort"

	"github.com/sparkprof/sparkprof/spark"
)

// taskLoad is what the app's tasks say of their executors' time. A task's
// GC time is its JVM's: every collection while it ran, which the tasks
// running beside it on the same executor count too. Dividing a task's GC
// time by how many tasks ran there on average while it ran counts each
// collection about once.
type taskLoad struct {
	// conc is, for each task that reported GC time, the mean number of
	// tasks (its own included) running on its executor while it ran.
	conc map[*spark.Task]float64
	// busyMs is the executors' busy time: over each executor, the time
	// at least one task ran there.
	busyMs int64
}

// newTaskLoad sweeps each executor's task intervals.
func newTaskLoad(tasks []*spark.Task) *taskLoad {
	byExec := map[string][]*spark.Task{}
	for _, t := range tasks {
		if t.FinishMs > t.LaunchMs {
			byExec[t.ExecutorID] = append(byExec[t.ExecutorID], t)
		}
	}
	l := &taskLoad{conc: map[*spark.Task]float64{}}
	for _, ts := range byExec {
		l.sweep(ts)
	}
	return l
}

// sweep adds the tasks of one executor: the step function of how many ran
// at each time, its integral, and from it each task's mean concurrency.
func (l *taskLoad) sweep(ts []*spark.Task) {
	type change struct {
		at    int64
		delta int
	}
	cs := make([]change, 0, 2*len(ts))
	for _, t := range ts {
		cs = append(cs, change{t.LaunchMs, 1}, change{t.FinishMs, -1})
	}
	slices.SortFunc(cs, func(a, b change) int { return cmp.Compare(a.at, b.at) })
	// times[i] is a distinct time; integral[i] the task-ms run before it.
	times := make([]int64, 0, len(cs))
	integral := make([]int64, 0, len(cs))
	var running, area int64
	for i, c := range cs {
		if i > 0 && c.at != cs[i-1].at {
			d := c.at - cs[i-1].at
			area += running * d
			if running > 0 {
				l.busyMs += d
			}
		}
		if len(times) == 0 || times[len(times)-1] != c.at {
			times = append(times, c.at)
			integral = append(integral, area)
		}
		running += int64(c.delta)
	}
	at := func(t int64) int64 {
		return integral[sort.Search(len(times), func(i int) bool { return times[i] >= t })]
	}
	for _, t := range ts {
		if t.Metrics.GCTimeMs > 0 {
			l.conc[t] = float64(at(t.FinishMs)-at(t.LaunchMs)) / float64(t.FinishMs-t.LaunchMs)
		}
	}
}

// executorGC estimates, for tasks of one stage attempt, the executors'
// time in GC while they ran and the executors' time they ran in (on each
// executor the union of its tasks' intervals): each task's GC time
// divided by the tasks that ran beside it, on each executor at most the
// time its tasks ran. The share of the two is at most 1.
func (l *taskLoad) executorGC(tasks []*spark.Task) (gcMs, execMs int64) {
	byExec := map[string][]*spark.Task{}
	for _, t := range tasks {
		if t.FinishMs > t.LaunchMs {
			byExec[t.ExecutorID] = append(byExec[t.ExecutorID], t)
		}
	}
	for _, ts := range byExec {
		iv := make([][2]int64, len(ts))
		var gc float64
		for i, t := range ts {
			iv[i] = [2]int64{t.LaunchMs, t.FinishMs}
			if c := l.conc[t]; c > 0 {
				gc += float64(t.Metrics.GCTimeMs) / c
			}
		}
		u := unionMs(iv)
		execMs += u
		gcMs += min(int64(gc+0.5), u)
	}
	return gcMs, execMs
}

// unionMs returns the length of the union of the intervals iv (sorted in
// place).
func unionMs(iv [][2]int64) int64 {
	slices.SortFunc(iv, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	var total, from, until int64
	for i, x := range iv {
		if i == 0 || x[0] > until {
			total += until - from
			from, until = x[0], x[1]
			continue
		}
		until = max(until, x[1])
	}
	return total + until - from
}
