package report

import (
	"cmp"
	"slices"

	"github.com/sparkprof/sparkprof/spark"
)

// longestTasks returns the n longest tasks, in their original order.
func longestTasks(tasks []*spark.Task, n int) []*spark.Task {
	idx := make([]int, len(tasks))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(tasks[b].DurationMs(), tasks[a].DurationMs()) })
	idx = idx[:n]
	slices.Sort(idx)
	out := make([]*spark.Task, n)
	for i, j := range idx {
		out[i] = tasks[j]
	}
	return out
}
