package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/report"
	"github.com/sparkprof/sparkprof/spark"
)

func init() {
	register(&command{
		name:    "analyze",
		usage:   "[--json] [--html out.html] [threshold flags] PATH...",
		summary: "explain a Spark application from its event log, container logs and profiler records",
		run:     runAnalyze,
	})
}

func runAnalyze(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "analyze")
	// The model grows by a record per task and stays live to the end, so
	// a collection each time the heap doubles rescans it for little gain:
	// collecting at 4x takes ~15 % less CPU for ~60 % more peak memory
	// (BENCHMARKS.md). GOGC in the environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(300)
	}
	asJSON := fs.Bool("json", false, "print the report as JSON (schema: docs/analyze-json.md)")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report with the timeline to this file")
	th := analysis.DefaultThresholds
	thresholdFlags(fs, &th)
	full := fs.Bool("full", false, "with several applications, print each one's full report after the summary table")
	appID := fs.String("app", "", "report only the application of this id (as the summary table lists them)")
	jobKey := jobKeyFlag(fs)
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	prog := newProgress(e.stderr, "reading", fs.NArg())
	in, err := input.Read(fs.Args(), input.Options{Step: prog.step, Detail: prog.detail, Partial: true})
	prog.done()
	if err != nil {
		return err
	}
	for _, err := range in.Unreadable {
		fmt.Fprintf(e.stderr, "sparkprof: skipping %v\n", err)
	}
	reports := in.Reports(th, compare.JobBy(*jobKey))
	if *appID != "" {
		if reports, err = selectApp(reports, *appID); err != nil {
			return err
		}
	}
	if *htmlOut != "" {
		if err := writeHTMLReports(e, *htmlOut, reports); err != nil {
			return err
		}
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if len(reports) == 1 {
			return enc.Encode(reports[0])
		}
		return enc.Encode(reports)
	case len(reports) == 1:
		printReport(e.stdout, reports[0], nil)
		return nil
	}
	// Several apps: what went wrong reading the inputs once, then a line
	// per app, and the full reports when asked for, without it again.
	said := map[string]bool{}
	for _, w := range in.Warnings {
		said[w] = true
		fmt.Fprintf(e.stderr, "sparkprof: warning: %s\n", truncate(w, 300))
	}
	printSummary(e.stdout, reports, said)
	if !*full {
		fmt.Fprintf(e.stdout, "\nFull reports: --full for all, --app ID for one.\n")
		return nil
	}
	for _, r := range reports {
		fmt.Fprintln(e.stdout)
		printReport(e.stdout, r, said)
	}
	return nil
}

// thresholdFlags defines on fs a flag for each of th's thresholds: the
// flags of analyze, and the names serve's --threshold takes.
func thresholdFlags(fs *flag.FlagSet, th *analysis.Thresholds) {
	fs.Float64Var(&th.StragglerRatio, "straggler-ratio", th.StragglerRatio, "a task this many times longer than its stage's median is a straggler")
	fs.Int64Var(&th.StragglerMinMs, "straggler-min-ms", th.StragglerMinMs, "stragglers must run at least this long (ms)")
	fs.Float64Var(&th.SkewRatio, "skew-ratio", th.SkewRatio, "a task reading this many times the median is skew")
	fs.Int64Var(&th.SkewMinBytes, "skew-min-bytes", th.SkewMinBytes, "a skewed task must read at least this much (bytes)")
	fs.Float64Var(&th.GCShare, "gc-share", th.GCShare, "share of the executors' time in GC that is a finding (twice it is critical)")
	fs.Int64Var(&th.GCMinMs, "gc-min-ms", th.GCMinMs, "the executors' GC must come to at least this (ms) for a GC finding")
	fs.Float64Var(&th.GCAppShare, "gc-app-share", th.GCAppShare, "a stage's GC under this share of the executors' busy time in the app is only info")
	fs.Float64Var(&th.GCRate, "gc-rate", th.GCRate, "young collections a second (from JVM records) that are allocation churn")
	fs.Float64Var(&th.ShuffleWaitShare, "shuffle-wait-share", th.ShuffleWaitShare, "share of task time waiting for shuffle data that is a finding")
	fs.Float64Var(&th.OverheadShare, "overhead-share", th.OverheadShare, "share of task time in scheduling and (de)serialisation that is a finding")
	fs.Int64Var(&th.TinyTaskMs, "tiny-task-ms", th.TinyTaskMs, "a stage's median task under this (ms) is tiny")
	fs.IntVar(&th.TinyTaskCount, "tiny-task-count", th.TinyTaskCount, "a stage of at least this many tiny tasks has too many")
	fs.Int64Var(&th.FewTasksMinMs, "few-tasks-min-ms", th.FewTasksMinMs, "a stage with fewer tasks than free slots has too few when its median task ran this long (ms)")
	fs.Int64Var(&th.FewTasksMinBytes, "few-tasks-min-bytes", th.FewTasksMinBytes, "... and read at least this much (bytes)")
	fs.Float64Var(&th.IdleShare, "idle-share", th.IdleShare, "share of allocated executor core time without tasks that is a finding")
	fs.Int64Var(&th.IdleMinCoreMs, "idle-min-core-ms", th.IdleMinCoreMs, "the idle core time must come to at least this (core-ms) for an idle-executors finding")
	fs.Float64Var(&th.DriverShare, "driver-share", th.DriverShare, "share of the run without any task that is a finding")
	fs.Int64Var(&th.DriverMinMs, "driver-min-ms", th.DriverMinMs, "the time without any task must come to at least this (ms) for a driver-time finding")
	fs.Int64Var(&th.MinStageMs, "min-stage-ms", th.MinStageMs, "stages shorter than this (ms) get no verdict but a straggler")
	fs.Float64Var(&th.SpeculationWasteShare, "speculation-waste-share", th.SpeculationWasteShare, "share of task time on attempts that lost a speculation race that makes speculation a warning")
	fs.Float64Var(&th.PatternShare, "pattern-share", th.PatternShare, "share of a stage's or the app's profile samples a code pattern must cost to be recommended on")
	fs.Int64Var(&th.PatternMinSamples, "pattern-min-samples", th.PatternMinSamples, "... in at least this many samples")
	fs.Float64Var(&th.RegressionRatio, "regression-ratio", th.RegressionRatio, "a run this many times longer than its job's previous run regressed")
	fs.Int64Var(&th.RegressionMinMs, "regression-min-ms", th.RegressionMinMs, "... when it is at least this much (ms) longer")
	fs.Float64Var(&th.PythonShare, "python-share", th.PythonShare, "share of a stage's task time in Python UDFs that is a finding")
	fs.Int64Var(&th.PythonMinMs, "python-min-ms", th.PythonMinMs, "... when the Python time comes to at least this (ms)")
}

// selectApp keeps the reports of the app of id id.
func selectApp(reports []*analysis.Report, id string) ([]*analysis.Report, error) {
	var ids []string
	var out []*analysis.Report
	for _, r := range reports {
		if r.App.ID == id {
			out = append(out, r)
		}
		ids = append(ids, r.App.ID)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: --app %s: no such application among the inputs' (%s)", errUsage, id, english.Truncate(strings.Join(ids, ", "), 200))
	}
	return out, nil
}

// writeHTMLReports writes each report's HTML page: to path for one, to
// path-1, path-2, ... (before the extension) for several.
func writeHTMLReports(e *env, path string, reports []*analysis.Report) error {
	for i, r := range reports {
		p := path
		if len(reports) > 1 {
			ext := filepath.Ext(path)
			p = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), i+1, ext)
		}
		if err := writeOutput(e, p, func(w io.Writer) error { return report.WriteHTML(w, r) }); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "wrote %s\n", p)
	}
	return nil
}

// printSummary writes a line per report: the app's id (and attempt),
// name, duration, tasks and worst finding, leaving out the input warnings
// said already.
func printSummary(w io.Writer, reports []*analysis.Report, said map[string]bool) {
	fmt.Fprintf(w, "%s\n\n", english.Plural(len(reports), "application"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "app id\tname\tduration\ttasks\tworst finding")
	for _, r := range reports {
		a := r.App
		worst := "none"
		if fs := unsaid(r.Findings, said); len(fs) > 0 {
			f := fs[0] // most severe first
			worst = fmt.Sprintf("[%s] %s: %s", strings.ToUpper(string(f.Severity)), f.Kind, f.Message)
		}
		id := cmp.Or(a.ID, "-")
		if a.AttemptID != "" {
			id += " (attempt " + a.AttemptID + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", id, truncate(cmp.Or(a.Name, "(unnamed)"), 30), appDuration(a, false), a.TaskCount, truncate(worst, 90))
	}
	tw.Flush()
}

// appDuration says how long an app ran, or that it is unknown (and, when
// why, why).
func appDuration(a spark.Summary, why bool) string {
	switch {
	case a.EndMs != 0:
		return english.Millis(a.DurationMs)
	case why:
		return "unknown (no ApplicationEnd: still running, or the log was cut)"
	}
	return "unknown"
}

// printReport writes the terminal form of a report, without the input
// warnings said already.
func printReport(w io.Writer, r *analysis.Report, said map[string]bool) {
	a := r.App
	name := a.Name
	if name == "" {
		name = "(unnamed)"
	}
	head := []string{name}
	if a.ID != "" {
		head = append(head, a.ID)
	}
	if a.SparkVersion != "" {
		head = append(head, "Spark "+a.SparkVersion)
	}
	fmt.Fprintln(w, strings.Join(head, "  "))
	skipped := 0
	for _, st := range r.Stages {
		if st.Status == "SKIPPED" {
			skipped++
		}
	}
	duration := appDuration(a, true)
	executors := english.Plural(a.ExecutorCount, "executor")
	if a.ExecutorCount == 0 && a.TaskCount > 0 {
		executors = "tasks ran on the driver (local mode)"
	}
	fmt.Fprintf(w, "duration %s, %s (%d not successful), %s, %s, %s (%s skipped), %s\n\n",
		duration, english.Plural(a.TaskCount, "task"), a.FailedTaskCount, executors, english.Plural(a.JobCount, "job"),
		english.Plural(len(r.Stages)-skipped, "stage attempt"), english.Plural(skipped, "stage"), english.Plural(a.SQLCount, "SQL execution"))
	findings := unsaid(r.Findings, said)
	if len(findings) == 0 {
		fmt.Fprintln(w, "No findings: nothing stands out.")
	}
	for _, f := range findings {
		fmt.Fprintf(w, "[%s] %s: %s\n", strings.ToUpper(string(f.Severity)), f.Kind, f.Message)
		for _, a := range f.Also() {
			fmt.Fprintf(w, "    also %s\n", a)
		}
		if f.Suggestion != "" {
			fmt.Fprintf(w, "    → %s\n", f.Suggestion)
		}
		switch ev := f.Evidence.(type) {
		case *analysis.FailuresEvidence:
			for _, g := range ev.Groups {
				fmt.Fprintf(w, "    %5d × %s  %s\n", g.Count, g.Reason, truncate(g.Detail, 100))
			}
		case *analysis.WarningsEvidence:
			for _, s := range ev.Warnings {
				fmt.Fprintf(w, "    - %s\n", truncate(s, 160))
			}
		}
	}
	printRecommendations(w, r.Recommendations)
	printLongestStages(w, r.Stages)
}

// unsaid returns findings without the input warnings said already: a
// warnings finding keeps the others, or goes when none is left.
func unsaid(findings []analysis.Finding, said map[string]bool) []analysis.Finding {
	if len(said) == 0 {
		return findings
	}
	var out []analysis.Finding
	for _, f := range findings {
		if ev, ok := f.Evidence.(*analysis.WarningsEvidence); ok {
			rest := slices.DeleteFunc(slices.Clone(ev.Warnings), func(w string) bool { return said[w] })
			if len(rest) == 0 {
				continue
			}
			f.Message = english.Plural(len(rest), "other problem") + " with the inputs; results cover what could be read"
			f.Evidence = &analysis.WarningsEvidence{Warnings: rest}
		}
		out = append(out, f)
	}
	return out
}

// printLongestStages lists the ten longest stages that ran: those skipped
// or never started (no duration) are left out.
func printLongestStages(w io.Writer, all []*spark.Stage) {
	stages := slices.DeleteFunc(slices.Clone(all), func(s *spark.Stage) bool {
		return s.DurationMs <= 0 && s.Status != "COMPLETE" && s.Status != "FAILED"
	})
	if len(stages) > 0 {
		fmt.Fprintln(w, "\nlongest stages:")
		slices.SortStableFunc(stages, func(a, b *spark.Stage) int { return cmp.Compare(b.DurationMs, a.DurationMs) })
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  stage\ttasks\tfailed\tduration\tstatus\tname")
		for _, s := range stages[:min(10, len(stages))] {
			// Tasks are distinct task attempts, as a stage's task table
			// lists them: the second ends of resubmitted tasks left out.
			r := s.ResubmittedTaskCount
			failed := strconv.Itoa(s.FailedTaskCount - r)
			if r > 0 {
				failed += fmt.Sprintf(" (+%d resubmitted)", r)
			}
			fmt.Fprintf(tw, "  %d.%d\t%d\t%s\t%s\t%s\t%s\n", s.ID, s.Attempt, s.TaskCount-r, failed, english.Millis(s.DurationMs), s.Status, truncate(s.Name, 60))
		}
		tw.Flush()
	}
}

// printRecommendations writes the code patterns the profiles show, each
// with its frames and the flame graph that focuses on them.
func printRecommendations(w io.Writer, rs []analysis.Recommendation) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nrecommendations from the profiles:")
	for _, r := range rs {
		fmt.Fprintf(w, "[%s] %s: %s\n", strings.ToUpper(string(r.Severity)), r.Pattern, r.Message)
		fmt.Fprintf(w, "    → %s\n", r.Suggestion)
		for _, f := range r.Frames {
			caller := ""
			if f.Caller != "" {
				caller = " ← " + f.Caller
			}
			fmt.Fprintf(w, "    %4.0f%%  %s%s\n", 100*f.Share, truncate(f.Frame, 100), caller)
		}
		fmt.Fprintf(w, "    flame graph: sparkprof flame --type %s --focus '%s' PATH...\n", flameType(r.Type), r.Focus)
	}
}

// flameType is the --type of a recommendation's sample type.
func flameType(typ string) string {
	switch typ {
	case "blocked":
		return "samples --state BLOCKED"
	case "lock_delay":
		return "lock"
	}
	return typ
}

// truncate cuts s to its first line, and that to n characters.
func truncate(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	return english.Truncate(s, n)
}
