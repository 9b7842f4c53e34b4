// Package input gathers what an analysis reads from files: it walks
// directories for inputs, tells event logs, container logs and profiler
// records apart by their content, and reads them into the analyses'
// inputs, one per application.
package input

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/containerlog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// Set is everything read for an analysis, sorted by kind.
type Set struct {
	EventLogs []analysis.Input // one per event log
	Logs      []*containerlog.Log
	Profiles  []*profile.Profile
	Sources   []analysis.Source
	// Warnings are the problems met reading the inputs: files a walk
	// passed over or could not read, and with Options.Partial the inputs
	// that could not be read.
	Warnings []string
	// Unreadable are the inputs named by Read's paths that could not be
	// read, each with why (with Options.Partial).
	Unreadable []error
}

// Options control Read.
type Options struct {
	Step   func(path string)   // called as each input path starts
	Detail func(status string) // called during long reads
	// Partial reads what can be read: a path that cannot be read is
	// skipped (in Set.Unreadable and Set.Warnings) instead of failing the
	// read, which fails only when no event log or container log could be
	// read.
	Partial bool
	// Memory, if not nil, is drawn from as event logs are read and
	// decoded (eventlog.Reader's Memory); the read fails when it refuses.
	Memory eventlog.Memory
}

// Reports analyses every application of s with the thresholds th; a later
// run of a job (named by jobOf, compare.JobOf when nil) that regressed
// from its previous run among them gets a regression finding.
func (s *Set) Reports(th analysis.Thresholds, jobOf func(*spark.App) string) []*analysis.Report {
	var out []*analysis.Report
	ins := s.Apps()
	for _, in := range ins {
		r := analysis.NewReport(in, analysis.Analyze(in, th), s.Sources, s.Profiles)
		r.Recommendations = analysis.Recommend(in, th)
		r.Python = analysis.Python(in.Profiles, in.App)
		r.Findings = analysis.WithPython(r.Findings, r.Python, in.App, th)
		out = append(out, r)
	}
	if len(s.EventLogs) > 1 {
		analysis.AddRegressions(ins, out, th, jobOf)
	}
	return out
}

// Apps returns one analysis input per application: each event log with the
// container logs and profiles, or, without event logs, the app the
// container logs describe, or with profiles alone an app of no tasks
// named by the profiles' labels.
func (s *Set) Apps() []analysis.Input {
	if len(s.EventLogs) == 0 {
		app := spark.FromLogs(s.Logs)
		if len(s.Logs) == 0 {
			app.ID, app.Name = profilesApp(s.Profiles)
		}
		return []analysis.Input{{App: app, Logs: s.Logs, Warnings: s.Warnings, Profiles: s.Profiles}}
	}
	out := make([]analysis.Input, len(s.EventLogs))
	for i, a := range s.EventLogs {
		a.Logs = s.Logs
		a.Warnings = append(a.Warnings, s.Warnings...)
		a.Profiles = s.Profiles
		out[i] = a
	}
	return out
}

// Read classifies and reads every path: event logs (files or rolling
// directories), container logs (files, YARN log directories, yarn logs
// output) and profiler records. A directory of neither kind is walked as
// Expand does; a bad event log or profile found by such a walk becomes a
// warning instead of failing the whole read.
func Read(paths []string, opt Options) (*Set, error) {
	s := &Set{}
	if opt.Step == nil {
		opt.Step = func(string) {}
	}
	if opt.Detail == nil {
		opt.Detail = func(string) {}
	}
	for _, path := range paths {
		opt.Step(path)
		if err := s.read(path, opt); err != nil {
			if !opt.Partial {
				return nil, err
			}
			s.Unreadable = append(s.Unreadable, err)
			s.Warnings = append(s.Warnings, err.Error())
		}
	}
	if len(s.EventLogs) == 0 && len(s.Logs) == 0 && len(s.Profiles) == 0 {
		if len(s.Unreadable) > 0 {
			return nil, fmt.Errorf("none of the inputs could be read as an event log, container log or profile: %w", errors.Join(s.Unreadable...))
		}
		return nil, errors.New("no event log, container log or profile among the inputs")
	}
	return s, nil
}

// read adds the inputs path holds to s.
func (s *Set) read(path string, opt Options) error {
	x, err := expandPath(path, opt.Memory)
	if err != nil {
		return err
	}
	if len(x.skipped) > 0 {
		s.Warnings = append(s.Warnings, path+": "+SkippedSummary(path, x.skipped))
	}
	// Inside a walked directory, one bad file is a warning.
	failed := func(err error) error {
		if x.walked {
			s.Warnings = append(s.Warnings, err.Error())
			return nil
		}
		return err
	}
	var profiles []string
	for _, src := range x.sources {
		switch src.Kind {
		case EventLog:
			a, err := readEventLog(src.Path, opt)
			if err != nil {
				if err := failed(err); err != nil {
					return err
				}
				continue
			}
			s.EventLogs = append(s.EventLogs, a)
		case Logs:
			logs, err := applog.OpenAll(src.Path, applog.Options{})
			if err == nil && !slices.ContainsFunc(logs, func(l *containerlog.Log) bool { return l.Layout != "" }) {
				err = errors.New("no line in a layout of Spark's logs (log4j, JSON): not a driver or executor log, an event log or a profile")
			}
			if err != nil {
				if err := failed(fmt.Errorf("container logs %s: %w", src.Path, err)); err != nil {
					return err
				}
				continue
			}
			s.Logs = append(s.Logs, logs...)
		case Profile:
			profiles = append(profiles, src.Path)
		}
		s.Sources = append(s.Sources, src)
	}
	if len(profiles) == 0 {
		return nil
	}
	return format.LoadAll(profiles, format.Options{}, func(r format.Result) error {
		if r.Err != nil {
			s.Warnings = append(s.Warnings, r.Err.Error())
			return nil
		}
		s.Profiles = append(s.Profiles, r.Profile)
		return nil
	})
}

// profilesApp returns the Spark app id and the service name the profiles'
// labels agree on, each empty when they name none or several.
func profilesApp(ps []*profile.Profile) (id, name string) {
	one := func(label string) string {
		var v string
		for _, p := range ps {
			x, ok := p.Labels.Get(label)
			if !ok || x == "" {
				continue
			}
			if v != "" && x != v {
				return ""
			}
			v = x
		}
		return v
	}
	return one(profile.LabelAppID), one(profile.LabelServiceName)
}

// readEventLog builds the application model of one event log.
func readEventLog(path string, opt Options) (analysis.Input, error) {
	r, err := eventlog.Open(path)
	if err != nil {
		return analysis.Input{}, fmt.Errorf("event log %s: %w", path, err)
	}
	defer r.Close()
	r.Memory = opt.Memory
	app, rep, err := spark.BuildWith(r, spark.Options{Progress: func(n int64) {
		opt.Detail(fmt.Sprintf("%s: %d MB", path, n>>20))
	}})
	if err != nil {
		return analysis.Input{}, fmt.Errorf("event log %s: %w", path, err)
	}
	return analysis.Input{App: app, Report: rep}, nil
}
