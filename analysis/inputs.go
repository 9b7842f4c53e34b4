package analysis

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// Inputs is everything read for an analysis, sorted by kind.
type Inputs struct {
	EventLogs []Input // one per event log
	Logs      []*applog.Log
	Profiles  []*profile.Profile
	Sources   []Source
	Warnings  []string
}

// ReadOptions reports the progress of ReadInputs.
type ReadOptions struct {
	Step   func(path string)   // called as each input path starts
	Detail func(status string) // called during long reads
}

// Reports analyses every application of in with the thresholds th.
func (in *Inputs) Reports(th Thresholds) []*Report {
	var out []*Report
	for _, input := range in.Apps() {
		out = append(out, NewReport(input, Analyze(input, th), in.Sources, in.Profiles))
	}
	return out
}

// Apps returns one analysis input per application: each event log with the
// container logs and profiles, or, without event logs, the app the
// container logs describe.
func (in *Inputs) Apps() []Input {
	if len(in.EventLogs) == 0 {
		return []Input{{App: FromLogs(in.Logs), Logs: in.Logs, Warnings: in.Warnings}}
	}
	out := make([]Input, len(in.EventLogs))
	for i, a := range in.EventLogs {
		a.Logs = in.Logs
		a.Warnings = append(a.Warnings, in.Warnings...)
		out[i] = a
	}
	return out
}

// ReadInputs classifies and reads every path: event logs (files or rolling
// directories), container logs (files, YARN log directories, yarn logs
// output) and profiler records.
func ReadInputs(paths []string, opt ReadOptions) (*Inputs, error) {
	in := &Inputs{}
	if opt.Step == nil {
		opt.Step = func(string) {}
	}
	if opt.Detail == nil {
		opt.Detail = func(string) {}
	}
	for _, path := range paths {
		opt.Step(path)
		kind, err := Classify(path)
		if err != nil {
			return nil, err
		}
		in.Sources = append(in.Sources, Source{Path: path, Kind: kind})
		switch kind {
		case "eventlog":
			r, err := eventlog.Open(path)
			if err != nil {
				return nil, fmt.Errorf("event log %s: %w", path, err)
			}
			app, rep, err := spark.BuildWith(r, spark.Options{Progress: func(n int64) {
				opt.Detail(fmt.Sprintf("%s: %d MB", path, n>>20))
			}})
			r.Close()
			if err != nil {
				return nil, fmt.Errorf("event log %s: %w", path, err)
			}
			in.EventLogs = append(in.EventLogs, Input{App: app, Report: rep})
		case "logs":
			logs, err := applog.OpenAll(path, applog.Options{})
			if err != nil {
				return nil, fmt.Errorf("container logs %s: %w", path, err)
			}
			in.Logs = append(in.Logs, logs...)
		case "profile":
			files, err := format.Expand([]string{path})
			if err != nil {
				return nil, err
			}
			err = format.LoadAll(files, format.Options{}, func(r format.Result) error {
				if r.Err != nil {
					in.Warnings = append(in.Warnings, r.Err.Error())
					return nil
				}
				in.Profiles = append(in.Profiles, r.Profile)
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	if len(in.EventLogs) == 0 && len(in.Logs) == 0 {
		return nil, fmt.Errorf("no event log or container log among the inputs; analyze needs one (use flame or top for profiles alone)")
	}
	return in, nil
}

// Classify tells what a path holds by its content: "eventlog", "logs" or
// "profile".
func Classify(path string) (string, error) {
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
