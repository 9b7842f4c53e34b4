package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"html/template"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/spark"
)

func init() {
	register(&command{
		name:  "compare",
		usage: "[--json] [--html out.html] [--job NAME] [--price-core-hour P] [--price-gib-hour P] OLD NEW | PATH...",
		summary: "why a run of a job got slower: match its stages to an earlier run's and split the change over its causes" +
			" (two runs, or the last two runs of each job the paths hold)",
		run: runCompare,
	})
}

// jobKeyFlag defines --job-key, the Spark property that names an app's
// job.
func jobKeyFlag(fs *flag.FlagSet) *string {
	return fs.String("job-key", "", "the Spark property whose value names the job an app is a run of (default: "+
		compare.JobProperty+", else the app's name)")
}

// comparison is one run compared with an earlier run of its job.
type comparison struct {
	Job string `json:"job"`
	*compare.Result
}

func runCompare(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "compare")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	htmlOut := fs.String("html", "", "also write the comparison as a self-contained HTML page to this file")
	job := fs.String("job", "", "compare the last two runs of this job only")
	jobKey := jobKeyFlag(fs)
	var opt compare.Options
	fs.Float64Var(&opt.PricePerCoreHour, "price-core-hour", 0, "price of an executor core-hour, to cost each run")
	fs.Float64Var(&opt.PricePerGiBHour, "price-gib-hour", 0, "price of an executor memory GiB-hour, to cost each run")
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	cs, err := comparisons(e, fs.Args(), *job, compare.JobBy(*jobKey), opt)
	if err != nil {
		return err
	}
	if *htmlOut != "" {
		if err := writeOutput(e, *htmlOut, func(w io.Writer) error { return compareHTML.Execute(w, cs) }); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if len(cs) == 1 {
			return enc.Encode(cs[0])
		}
		return enc.Encode(cs)
	}
	for i, c := range cs {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printComparison(e.stdout, c)
	}
	return nil
}

// comparisons reads the paths and compares: OLD with NEW when there are two
// paths of one app each, else the last run of each job with the run before.
func comparisons(e *env, paths []string, job string, jobOf func(*spark.App) string, opt compare.Options) ([]comparison, error) {
	if len(paths) == 2 && job == "" {
		old, err1 := readRun(e, paths[0])
		new, err2 := readRun(e, paths[1])
		if err1 == nil && err2 == nil {
			r := compare.Compare(old, new, opt)
			return []comparison{{Job: jobOf(new.App), Result: r}}, nil
		}
		if !errorIsSeveralApps(err1) || !errorIsSeveralApps(err2) {
			if err1 != nil {
				return nil, fmt.Errorf("old run %s: %w", paths[0], err1)
			}
			return nil, fmt.Errorf("new run %s: %w", paths[1], err2)
		}
	}
	prog := newProgress(e.stderr, "reading", len(paths))
	in, err := input.Read(paths, input.Options{Step: prog.step, Detail: prog.detail, Partial: true})
	prog.done()
	if err != nil {
		return nil, err
	}
	var apps []*spark.App
	for _, a := range in.EventLogs {
		apps = append(apps, a.App)
	}
	var out []comparison
	var single []string
	for _, j := range compare.Jobs(apps, jobOf) {
		if job != "" && j.Name != job {
			continue
		}
		if len(j.Runs) < 2 {
			single = append(single, j.Name)
			continue
		}
		old, new := j.Runs[len(j.Runs)-2], j.Runs[len(j.Runs)-1]
		r := compare.Compare(compare.Run{App: old}, compare.Run{App: new}, opt)
		out = append(out, comparison{Job: j.Name, Result: r})
	}
	if len(out) == 0 {
		if job != "" {
			return nil, fmt.Errorf("job %q has fewer than two runs among the inputs (jobs with one run: %s)", job, strings.Join(single, ", "))
		}
		return nil, fmt.Errorf("no job has two runs among the inputs: give two event logs (OLD NEW), or logs of "+
			"several runs of a job (same app name or %s); jobs with one run: %s", compare.JobProperty, strings.Join(single, ", "))
	}
	return out, nil
}

// errSeveralApps says that a path holds more than one application.
type errSeveralApps struct{ n int }

func (e errSeveralApps) Error() string {
	return fmt.Sprintf("holds %d applications, not one: give one event log a side, or the logs of a job's runs with --job", e.n)
}

func errorIsSeveralApps(err error) bool {
	_, ok := err.(errSeveralApps)
	return ok
}

// readRun reads one run: an event log, or a directory of an event log and
// the profiles of its app.
func readRun(e *env, path string) (compare.Run, error) {
	in, err := input.Read([]string{path}, input.Options{})
	if err != nil {
		return compare.Run{}, err
	}
	if n := len(in.EventLogs); n != 1 {
		if n == 0 {
			return compare.Run{}, fmt.Errorf("no event log: compare reads Spark event logs")
		}
		return compare.Run{}, errSeveralApps{n}
	}
	for _, w := range in.Warnings {
		fmt.Fprintf(e.stderr, "sparkprof: warning: %s: %s\n", path, english.Truncate(w, 300))
	}
	return compare.Run{App: in.EventLogs[0].App, Profiles: in.Profiles}, nil
}

// printComparison prints c for a terminal.
func printComparison(w io.Writer, c comparison) {
	r := c.Result
	fmt.Fprintf(w, "%s: %s → %s (%s×, %s)\n", c.Job, english.Millis(r.Old.DurationMs), english.Millis(r.New.DurationMs),
		fmtRatio(r.DurationRatio), signedMs(r.ChangeMs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range []struct {
		side string
		run  compare.RunSummary
	}{{"old", r.Old}, {"new", r.New}} {
		cost := fmt.Sprintf("%.4g core-h\t%.4g GiB-h", s.run.Cost.CoreHours, s.run.Cost.MemoryGiBHours)
		if s.run.Cost.Price != nil {
			cost += fmt.Sprintf("\tcost %.4g", *s.run.Cost.Price)
		}
		execs := english.Plural(s.run.Executors, "executor")
		if s.run.Executors == 0 {
			execs = "local mode"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", s.side, s.run.AppID, time.UnixMilli(s.run.StartMs).UTC().Format("2006-01-02 15:04:05"),
			english.Millis(s.run.DurationMs), execs, cost)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nWhy (%s in all):\n", signedMs(r.ChangeMs))
	width := 0
	for _, c := range r.Causes {
		width = max(width, len(signedMs(c.ChangeMs)))
	}
	for _, c := range r.Causes {
		fmt.Fprintf(w, "  %*s  %4.0f %%  %-9s  %s\n", width, signedMs(c.ChangeMs), 100*c.Share, c.Kind, english.Truncate(causeText(c), 160))
	}
	fmt.Fprintf(w, "\nStages:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  old\tnew\tmatch\tduration\tratio\tchange\tmain cause\tname\n")
	for _, s := range r.Stages {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", stageID(s.Old), stageID(s.New), matchText(s),
			stageDurations(s), fmtRatio(s.DurationRatio), signedMs(s.ChangeMs), mainCause(s), english.Truncate(s.Name, 60))
	}
	tw.Flush()
	if len(r.Config) > 0 {
		fmt.Fprintf(w, "\nSpark properties that differ:\n")
		for _, c := range r.Config {
			fmt.Fprintf(w, "  %s: %s → %s\n", c.Name, orUnsetText(c.Old), orUnsetText(c.New))
		}
	}
}

// causeText is a cause's evidence, with the functions of a code cause.
func causeText(c compare.Cause) string {
	s := c.Evidence
	for i, f := range c.Functions {
		if i == 3 {
			break
		}
		s += fmt.Sprintf("; %s %.0f %% → %.0f %% of its CPU", f.Name, 100*f.OldShare, 100*f.NewShare)
	}
	return s
}

func stageID(s *compare.StageRef) string {
	if s == nil {
		return "–"
	}
	return fmt.Sprint(s.ID)
}

func matchText(s compare.StageChange) string {
	switch {
	case s.Old == nil:
		return "new"
	case s.New == nil:
		return "gone"
	}
	return fmt.Sprintf("%.2f", s.Confidence)
}

func stageDurations(s compare.StageChange) string {
	d := func(m *compare.StageMetrics) string {
		if m == nil {
			return "–"
		}
		return english.Millis(m.DurationMs)
	}
	return d(s.OldMetrics) + " → " + d(s.NewMetrics)
}

func mainCause(s compare.StageChange) string {
	if len(s.Causes) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%.0f %%)", s.Causes[0].Kind, 100*s.Causes[0].Share)
}

func fmtRatio(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", r)
}

func signedMs(ms int64) string {
	if ms < 0 {
		return "-" + english.Millis(-ms)
	}
	return "+" + english.Millis(ms)
}

func orUnsetText(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}

//go:embed compare.html
var compareHTMLText string

var compareHTML = template.Must(template.New("compare").Funcs(template.FuncMap{
	"millis": english.Millis, "signed": signedMs, "ratio": fmtRatio, "stage": stageID, "match": matchText,
	"durations": stageDurations, "cause": causeText, "pct": func(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) },
	"main": mainCause,
}).Parse(compareHTMLText))
