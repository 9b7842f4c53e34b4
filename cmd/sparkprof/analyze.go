package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
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
	asJSON := fs.Bool("json", false, "print the report as JSON (schema: docs/analyze-json.md)")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report with the timeline to this file")
	th := analysis.DefaultThresholds
	fs.Float64Var(&th.StragglerRatio, "straggler-ratio", th.StragglerRatio, "a task this many times longer than its stage's median is a straggler")
	fs.Int64Var(&th.StragglerMinMs, "straggler-min-ms", th.StragglerMinMs, "stragglers must run at least this long (ms)")
	fs.Float64Var(&th.SkewRatio, "skew-ratio", th.SkewRatio, "a task reading this many times the median is skew")
	fs.Float64Var(&th.GCShare, "gc-share", th.GCShare, "share of task time in GC that is a finding (twice it is critical)")
	fs.Float64Var(&th.ShuffleWaitShare, "shuffle-wait-share", th.ShuffleWaitShare, "share of task time waiting for shuffle data that is a finding")
	fs.Float64Var(&th.OverheadShare, "overhead-share", th.OverheadShare, "share of task time in scheduling and (de)serialisation that is a finding")
	fs.Float64Var(&th.IdleShare, "idle-share", th.IdleShare, "share of allocated executor core time without tasks that is a finding")
	fs.Float64Var(&th.DriverShare, "driver-share", th.DriverShare, "share of the run without any task that is a finding")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: no input paths", errUsage)
	}
	in, err := readInputs(e, fs.Args())
	if err != nil {
		return err
	}
	var reports []*analysis.Report
	for _, input := range in.apps() {
		findings := analysis.Analyze(input, th)
		reports = append(reports, analysis.NewReport(input, findings, in.sources, in.profiles))
	}
	if *htmlOut != "" {
		for i, r := range reports {
			path := *htmlOut
			if len(reports) > 1 {
				ext := filepath.Ext(path)
				path = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(path, ext), i+1, ext)
			}
			if err := writeOutput(e, path, func(w io.Writer) error { return analysis.WriteHTML(w, r) }); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "wrote %s\n", path)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if len(reports) == 1 {
			return enc.Encode(reports[0])
		}
		return enc.Encode(reports)
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printReport(e.stdout, r)
	}
	return nil
}

// inputs is everything analyze read, sorted by kind.
type inputs struct {
	apps_    []analysis.Input // one per event log
	logs     []*applog.Log
	profiles []*profile.Profile
	sources  []analysis.Source
	warnings []string
}

// apps returns one analysis input per application: each event log with the
// container logs and profiles, or, without event logs, the app the
// container logs describe.
func (in *inputs) apps() []analysis.Input {
	if len(in.apps_) == 0 {
		return []analysis.Input{{App: analysis.FromLogs(in.logs), Logs: in.logs, Warnings: in.warnings}}
	}
	out := make([]analysis.Input, len(in.apps_))
	for i, a := range in.apps_ {
		a.Logs = in.logs
		a.Warnings = append(a.Warnings, in.warnings...)
		out[i] = a
	}
	return out
}

// readInputs classifies and reads every path: event logs (files or rolling
// directories), container logs (files, YARN log directories, yarn logs
// output) and profiler records.
func readInputs(e *env, paths []string) (*inputs, error) {
	in := &inputs{}
	prog := newProgress(e.stderr, "reading", len(paths))
	defer prog.done()
	for _, path := range paths {
		prog.step(path)
		kind, err := classify(path)
		if err != nil {
			return nil, err
		}
		in.sources = append(in.sources, analysis.Source{Path: path, Kind: kind})
		switch kind {
		case "eventlog":
			r, err := eventlog.Open(path)
			if err != nil {
				return nil, fmt.Errorf("event log %s: %w", path, err)
			}
			app, rep, err := spark.BuildWith(r, spark.Options{Progress: func(n int64) {
				prog.detail(fmt.Sprintf("%s: %d MB", path, n>>20))
			}})
			r.Close()
			if err != nil {
				return nil, fmt.Errorf("event log %s: %w", path, err)
			}
			in.apps_ = append(in.apps_, analysis.Input{App: app, Report: rep})
		case "logs":
			logs, err := applog.OpenAll(path, applog.Options{})
			if err != nil {
				return nil, fmt.Errorf("container logs %s: %w", path, err)
			}
			in.logs = append(in.logs, logs...)
		case "profile":
			files, err := format.Expand([]string{path})
			if err != nil {
				return nil, err
			}
			err = format.LoadAll(files, format.Options{}, func(r format.Result) error {
				if r.Err != nil {
					in.warnings = append(in.warnings, r.Err.Error())
					return nil
				}
				in.profiles = append(in.profiles, r.Profile)
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	if len(in.apps_) == 0 && len(in.logs) == 0 {
		return nil, fmt.Errorf("no event log or container log among the inputs; analyze needs one (use flame or top for profiles alone)")
	}
	return in, nil
}

// classify tells what a path holds by its content.
func classify(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		base := filepath.Base(path)
		if strings.HasPrefix(base, "eventlog_v2_") {
			return "eventlog", nil
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return "", err
		}
		for _, en := range entries {
			n := en.Name()
			switch {
			case strings.HasPrefix(n, "container_"):
				return "logs", nil
			case n == "eventlog" || strings.HasPrefix(n, "eventlog-") || strings.HasPrefix(n, "events_") || strings.HasPrefix(n, "appstatus_"):
				return "eventlog", nil
			}
		}
		return "profile", nil
	}
	if isEventLog(path) {
		return "eventlog", nil
	}
	head, err := readHead(path)
	if err != nil {
		return "", err
	}
	if f, ok := format.Detect(head); ok && f.Name != "folded" {
		return "profile", nil
	}
	return "logs", nil
}

// isEventLog reports whether the first line of path, in any codec the
// event-log reader knows, is a Spark listener event.
func isEventLog(path string) bool {
	r, err := eventlog.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	line, _, err := r.Next()
	if err != nil {
		return false
	}
	return bytes.HasPrefix(bytes.TrimSpace(line), []byte(`{"Event"`))
}

// readHead returns up to 64 KiB of path, decompressed.
func readHead(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	data, err := format.Decompress(buf[:n], path, 0)
	if err != nil {
		// A gzip stream cut by our 1 MiB read: what decompressed is enough.
		return buf[:n], nil
	}
	return data[:min(len(data), 64<<10)], nil
}

// printReport writes the terminal form of a report.
func printReport(w io.Writer, r *analysis.Report) {
	a := r.App
	name := a.Name
	if name == "" {
		name = "(unnamed)"
	}
	fmt.Fprintf(w, "%s  %s  Spark %s\n", name, a.ID, a.SparkVersion)
	fmt.Fprintf(w, "duration %s, %d tasks (%d not successful), %d executors, %d jobs, %d stage attempts, %d SQL executions\n\n",
		fmtMs(a.DurationMs), a.TaskCount, a.FailedTaskCount, a.ExecutorCount, a.JobCount, len(r.Stages), a.SQLCount)
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "No findings: nothing stands out.")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "[%s] %s: %s\n", strings.ToUpper(f.Severity), f.Kind, f.Message)
		if f.Suggestion != "" {
			fmt.Fprintf(w, "    → %s\n", f.Suggestion)
		}
		switch f.Kind {
		case analysis.KindFailures:
			if groups, ok := f.Evidence["groups"].([]map[string]any); ok {
				for _, g := range groups {
					fmt.Fprintf(w, "    %5v × %s  %s\n", g["count"], g["reason"], truncate(fmt.Sprint(g["detail"]), 100))
				}
			}
		case analysis.KindWarnings:
			if ws, ok := f.Evidence["warnings"].([]string); ok {
				for _, s := range ws {
					fmt.Fprintf(w, "    - %s\n", truncate(s, 160))
				}
			}
		}
	}
	if len(r.Stages) > 0 {
		fmt.Fprintln(w, "\nlongest stages:")
		stages := slices.Clone(r.Stages)
		slices.SortStableFunc(stages, func(a, b *spark.Stage) int { return cmp.Compare(b.DurationMs, a.DurationMs) })
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  stage\ttasks\tfailed\tduration\tstatus\tname")
		for _, s := range stages[:min(10, len(stages))] {
			fmt.Fprintf(tw, "  %d.%d\t%d\t%d\t%s\t%s\t%s\n", s.ID, s.Attempt, s.TaskCount, s.FailedTaskCount, fmtMs(s.DurationMs), s.Status, truncate(s.Name, 60))
		}
		tw.Flush()
	}
}

func truncate(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}

func fmtMs(ms int64) string {
	return profile.FormatValue(ms*1e6, "nanoseconds")
}
