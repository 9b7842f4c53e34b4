package compare

import (
	"cmp"
	"slices"

	"github.com/sparkprof/sparkprof/spark"
)

// JobProperty is the Spark property that names the job an app is a run of
// (spark.sparkprof.job); without it, an app's name does.
const JobProperty = "spark.sparkprof.job"

// JobOf names the job app is a run of: its JobProperty, else its name.
func JobOf(app *spark.App) string { return JobBy("")(app) }

// JobBy returns a function naming the job an app is a run of by the Spark
// property prop, when the app has it (a tag a scheduler sets, say), else
// as JobOf does.
func JobBy(prop string) func(*spark.App) string {
	return func(app *spark.App) string {
		props := sparkProps(app)
		for _, p := range []string{prop, JobProperty} {
			if v := props[p]; p != "" && v != "" {
				return v
			}
		}
		return app.Name
	}
}

// Job is the runs of one job, oldest first.
type Job struct {
	Name string
	Runs []*spark.App
}

// Jobs groups apps into jobs by key (JobOf when key is nil), each job's
// runs ordered by their start, the jobs by name.
func Jobs(apps []*spark.App, key func(*spark.App) string) []Job {
	if key == nil {
		key = JobOf
	}
	byName := map[string]*Job{}
	var out []*Job
	for _, a := range apps {
		k := key(a)
		j := byName[k]
		if j == nil {
			j = &Job{Name: k}
			byName[k] = j
			out = append(out, j)
		}
		j.Runs = append(j.Runs, a)
	}
	jobs := make([]Job, len(out))
	for i, j := range out {
		slices.SortStableFunc(j.Runs, func(a, b *spark.App) int {
			return cmp.Or(cmp.Compare(a.StartMs, b.StartMs), cmp.Compare(a.ID, b.ID), cmp.Compare(a.AttemptID, b.AttemptID))
		})
		jobs[i] = *j
	}
	slices.SortFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Name, b.Name) })
	return jobs
}
