package query

import (
	"context"
	"slices"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// JobRuns is a job (the apps of one spark.sparkprof.job, else of one name)
// and its runs, oldest first.
type JobRuns struct {
	Name string   `json:"name"`
	Runs []RunRow `json:"runs"`
}

// RunRow is one run of a job: its app attempt, duration and cost.
type RunRow struct {
	AppID      string       `json:"appId"`
	AttemptID  string       `json:"attemptId,omitempty"`
	StartMs    int64        `json:"startMs"`
	DurationMs int64        `json:"durationMs"`
	Executors  int          `json:"executors"`
	Running    bool         `json:"running,omitempty"`
	Cost       compare.Cost `json:"cost"`
}

// Jobs lists the tenant's jobs with their runs (each app's latest attempt),
// the most recently run job first; opt prices the runs.
func (e *Engine) Jobs(_ context.Context, tenant string, opt compare.Options) []JobRuns {
	byApp := map[*spark.App]*analysis.Report{}
	var apps []*spark.App
	for _, rep := range e.latestReports(tenant) {
		a := modelOf(rep)
		byApp[a] = rep
		apps = append(apps, a)
	}
	out := []JobRuns{}
	for _, j := range compare.Jobs(apps, e.jobOf) {
		jr := JobRuns{Name: j.Name}
		for _, a := range j.Runs {
			s := compare.Summarize(a, opt)
			jr.Runs = append(jr.Runs, RunRow{AppID: a.ID, AttemptID: a.AttemptID, StartMs: a.StartMs, DurationMs: s.DurationMs,
				Executors: s.Executors, Running: a.EndMs == 0, Cost: s.Cost})
		}
		out = append(out, jr)
	}
	last := func(j JobRuns) int64 { return j.Runs[len(j.Runs)-1].StartMs }
	slices.SortStableFunc(out, func(a, b JobRuns) int { return int(max(-1, min(1, last(b)-last(a)))) })
	return out
}

// Comparison is a run compared with an earlier run of its job.
type Comparison struct {
	Job string `json:"job"`
	*compare.Result
}

// Compare compares the tenant's app attempt new with old, or with the
// previous run of its job when old's ID is "". The runs' samples in the
// store name the functions of a code cause.
func (e *Engine) Compare(ctx context.Context, tenant string, old, new AppAttempt, opt compare.Options) (*Comparison, error) {
	nrep, err := e.report(tenant, new)
	if err != nil {
		return nil, err
	}
	n := modelOf(nrep)
	job := e.jobOf(n)
	var orep *analysis.Report
	if old.ID != "" {
		if orep, err = e.report(tenant, old); err != nil {
			return nil, err
		}
	} else if orep = e.previousRun(tenant, job, nrep); orep == nil {
		return nil, errkind.Errorf(errkind.NotFound, "application %q is the first run of job %q the server has read: nothing to compare it with", new.ID, job)
	}
	o := modelOf(orep)
	r := compare.Compare(compare.Run{App: o, Profiles: e.stageProfiles(ctx, tenant, o.ID)},
		compare.Run{App: n, Profiles: e.stageProfiles(ctx, tenant, n.ID)}, opt)
	return &Comparison{Job: job, Result: r}, nil
}

// previousRun is the report of the latest run of job that started before
// rep's, nil without one.
func (e *Engine) previousRun(tenant, job string, rep *analysis.Report) *analysis.Report {
	var prev *analysis.Report
	for _, r := range e.latestReports(tenant) {
		if r.App.ID == rep.App.ID || r.App.StartMs >= rep.App.StartMs || e.jobOf(modelOf(r)) != job {
			continue
		}
		if prev == nil || r.App.StartMs > prev.App.StartMs {
			prev = r
		}
	}
	return prev
}

// regression returns the regression finding of rep's app against the
// previous run of its job, if it regressed.
func (e *Engine) regression(tenant string, rep *analysis.Report) (analysis.Finding, bool) {
	a := modelOf(rep)
	job := e.jobOf(a)
	prev := e.previousRun(tenant, job, rep)
	if prev == nil {
		return analysis.Finding{}, false
	}
	r := compare.Compare(compare.Run{App: modelOf(prev)}, compare.Run{App: a}, compare.Options{})
	return analysis.Regression(job, r, e.apps.Thresholds())
}

// stageProfiles returns the app's CPU samples in the store by stage, nil
// when it holds none or the read fails.
func (e *Engine) stageProfiles(ctx context.Context, tenant, app string) []*profile.Profile {
	m, err := profile.NewMatcher(profile.LabelAppID, profile.MatchEqual, app)
	if err != nil {
		return nil
	}
	req := NewRequest([]profile.Matcher{m}, "", 0, 0)
	req.Keep = KeepCoarse
	p, err := e.Merge(ctx, tenant, req)
	if err != nil {
		e.log.Warn("compare: reading the app's samples failed", "app", app, "err", err)
		return nil
	}
	if len(p.Samples) == 0 {
		return nil
	}
	return []*profile.Profile{p}
}

// latestReports returns the report of each of the tenant's apps' latest
// attempt.
func (e *Engine) latestReports(tenant string) []*analysis.Report {
	seen := map[string]bool{}
	var out []*analysis.Report
	for _, r := range e.apps.Reports(tenant) {
		if !seen[r.App.ID] {
			seen[r.App.ID] = true
			if latest := e.apps.Report(tenant, r.App.ID); latest != nil {
				out = append(out, latest)
			}
		}
	}
	return out
}

// modelOf is the application model a report holds.
func modelOf(rep *analysis.Report) *spark.App {
	return &spark.App{Summary: rep.App, Executors: rep.Executors, Jobs: rep.Jobs, Stages: rep.Stages, Tasks: rep.Tasks,
		SQL: rep.SQL, Environment: rep.Environment}
}
