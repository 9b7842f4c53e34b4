package analysis

import (
	"fmt"
	"strings"

	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

// RegressionEvidence is a regression finding's: the comparison of the run
// with its job's previous run (compare.Result's JSON).
type RegressionEvidence struct {
	Job string `json:"job"`
	*compare.Result
}

func (*RegressionEvidence) evidence() {}

// Regression returns the finding of a run that took longer than the
// previous run of its job past the thresholds, given their comparison:
// how much longer, and its main causes.
func Regression(job string, r *compare.Result, th Thresholds) (Finding, bool) {
	// Apps that share a name (a shell's default, "Spark shell") but not
	// their stages are not runs of one job.
	if r.DurationRatio < th.RegressionRatio || r.ChangeMs < th.RegressionMinMs || r.MatchedShare < 0.5 {
		return Finding{}, false
	}
	msg := fmt.Sprintf("%s took %s, %.2f× its previous run (%s on %s)", job, english.Millis(r.New.DurationMs),
		r.DurationRatio, english.Millis(r.Old.DurationMs), r.Old.AppID)
	var why []string
	for _, c := range r.Causes {
		if c.Share >= 0.1 && len(why) < 3 {
			why = append(why, fmt.Sprintf("%s %.0f %% (%s)", c.Kind, 100*c.Share, c.Evidence))
		}
	}
	if len(why) > 0 {
		msg += "; mainly " + strings.Join(why, "; ")
	}
	sev := Warning
	if r.DurationRatio >= 2*th.RegressionRatio {
		sev = Critical
	}
	return Finding{Kind: KindRegression, Severity: sev, Message: msg,
		Suggestion: "compare the two runs stage by stage: sparkprof compare OLD-LOG NEW-LOG, or the Compare page of sparkprof serve",
		Evidence:   &RegressionEvidence{Job: job, Result: r}, score: float64(r.ChangeMs)}, true
}

// AddRegressions compares each app of ins that is a later run of a job
// (named by jobOf, compare.JobOf when nil) with the job's previous run
// among ins, and adds the regression finding to its report (reports[i] is
// ins[i]'s) when it regressed.
func AddRegressions(ins []Input, reports []*Report, th Thresholds, jobOf func(*spark.App) string) {
	apps := make([]*spark.App, len(ins))
	at := map[*spark.App]int{}
	for i, in := range ins {
		apps[i], at[in.App] = in.App, i
	}
	for _, j := range compare.Jobs(apps, jobOf) {
		for k := 1; k < len(j.Runs); k++ {
			r := compare.Compare(compare.Run{App: j.Runs[k-1]}, compare.Run{App: j.Runs[k]}, compare.Options{})
			if f, ok := Regression(j.Name, r, th); ok {
				rep := reports[at[j.Runs[k]]]
				rep.Findings = WithFinding(rep.Findings, f)
			}
		}
	}
}

// WithFinding returns a copy of fs with f among them, in order of
// importance.
func WithFinding(fs []Finding, f Finding) []Finding {
	out := append(append(make([]Finding, 0, len(fs)+1), fs...), f)
	byImportance(out)
	return out
}
