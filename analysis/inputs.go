package analysis

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
		return []Input{{App: spark.FromLogs(in.Logs), Logs: in.Logs, Warnings: in.Warnings, Profiles: in.Profiles}}
	}
	out := make([]Input, len(in.EventLogs))
	for i, a := range in.EventLogs {
		a.Logs = in.Logs
		a.Warnings = append(a.Warnings, in.Warnings...)
		a.Profiles = in.Profiles
		out[i] = a
	}
	return out
}

// ReadInputs classifies and reads every path: event logs (files or rolling
// directories), container logs (files, YARN log directories, yarn logs
// output) and profiler records. A directory of neither kind is walked as
// Expand does; a bad event log or profile found by such a walk becomes a
// warning instead of failing the whole read.
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
		x, err := expandPath(path)
		if err != nil {
			return nil, err
		}
		if len(x.skipped) > 0 {
			in.Warnings = append(in.Warnings, path+": "+SkippedSummary(path, x.skipped))
		}
		// Inside a walked directory, one bad file is a warning.
		failed := func(err error) error {
			if x.walked {
				in.Warnings = append(in.Warnings, err.Error())
				return nil
			}
			return err
		}
		var profiles []string
		for _, src := range x.sources {
			switch src.Kind {
			case "eventlog":
				a, err := readEventLog(src.Path, opt.Detail)
				if err != nil {
					if err := failed(err); err != nil {
						return nil, err
					}
					continue
				}
				in.EventLogs = append(in.EventLogs, a)
			case "logs":
				logs, err := applog.OpenAll(src.Path, applog.Options{})
				if err == nil && !slices.ContainsFunc(logs, func(l *applog.Log) bool { return l.Layout != "" }) {
					err = errors.New("no line in a layout of Spark's logs (log4j, JSON): not a driver or executor log, an event log or a profile")
				}
				if err != nil {
					if err := failed(fmt.Errorf("container logs %s: %w", src.Path, err)); err != nil {
						return nil, err
					}
					continue
				}
				in.Logs = append(in.Logs, logs...)
			case "profile":
				profiles = append(profiles, src.Path)
			}
			in.Sources = append(in.Sources, src)
		}
		if len(profiles) == 0 {
			continue
		}
		err = format.LoadAll(profiles, format.Options{}, func(r format.Result) error {
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
	if len(in.EventLogs) == 0 && len(in.Logs) == 0 {
		return nil, fmt.Errorf("no event log or container log among the inputs; analyze needs one (use flame or top for profiles alone)")
	}
	return in, nil
}

// readEventLog builds the application model of one event log.
func readEventLog(path string, detail func(string)) (Input, error) {
	r, err := eventlog.Open(path)
	if err != nil {
		return Input{}, fmt.Errorf("event log %s: %w", path, err)
	}
	defer r.Close()
	app, rep, err := spark.BuildWith(r, spark.Options{Progress: func(n int64) {
		detail(fmt.Sprintf("%s: %d MB", path, n>>20))
	}})
	if err != nil {
		return Input{}, fmt.Errorf("event log %s: %w", path, err)
	}
	return Input{App: app, Report: rep}, nil
}

// Expand turns paths into the inputs they hold. An event log (a file or a
// rolling directory), a container log directory and any file stay one
// source each. Any other directory is walked, the way a History Server
// lists spark.eventLog.dir, for event logs, rolling event log and container
// log directories, and files that hold a profile; hidden files are passed
// over, and the other files are returned in skipped. A walk that finds
// nothing is an error.
func Expand(paths []string) (sources []Source, skipped []string, err error) {
	for _, path := range paths {
		x, err := expandPath(path)
		if err != nil {
			return nil, nil, err
		}
		sources = append(sources, x.sources...)
		skipped = append(skipped, x.skipped...)
	}
	return sources, skipped, nil
}

// expansion is what one input path holds.
type expansion struct {
	sources []Source
	skipped []string
	walked  bool // path is a directory that was walked
}

func expandPath(path string) (expansion, error) {
	kind, err := Classify(path)
	if err != nil {
		return expansion{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return expansion{}, err
	}
	if kind != "profile" || !st.IsDir() {
		return expansion{sources: []Source{{Path: path, Kind: kind}}}, nil
	}
	x := expansion{walked: true}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == path {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			// Hadoop's .crc checksums, editors' and the OS's files.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			kind, err := Classify(p)
			if err != nil {
				return err
			}
			if kind != "profile" {
				x.sources = append(x.sources, Source{Path: p, Kind: kind})
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if format.IsLabelsName(d.Name()) && format.JFRBeside(p) != "" {
			return nil // read with its JFR
		}
		kind, err := classifyWalked(p)
		if err != nil {
			return err
		}
		if kind == "" {
			x.skipped = append(x.skipped, p)
			return nil
		}
		x.sources = append(x.sources, Source{Path: p, Kind: kind})
		return nil
	})
	if err != nil {
		return expansion{}, fmt.Errorf("walk %s: %w", path, err)
	}
	if len(x.sources) == 0 {
		return expansion{}, fmt.Errorf("%s: no event logs, logs (*.log, stderr, container log directories) or profiles (*.jfr, *.pprof, *.folded, *.json, optionally .gz) in directory", path)
	}
	return x, nil
}

// classifyWalked tells what a file found by a directory walk holds:
// "profile" for a profile file name whose content is a known format,
// "eventlog" for a Spark event log in any codec, "logs" for a file named as
// logs are (driver.log, stderr, spark.log.1.gz), "" for anything else (a
// walk does not take a stray text file for a container log).
func classifyWalked(path string) (string, error) {
	if format.HasProfileName(filepath.Base(path)) {
		head, err := readHead(path)
		if err != nil {
			return "", err
		}
		if _, ok := format.Detect(head); ok {
			return "profile", nil
		}
	}
	if isEventLog(path) {
		return "eventlog", nil
	}
	if isLogName(filepath.Base(path)) {
		return "logs", nil
	}
	return "", nil
}

// isLogName reports whether name is a log file's, plain or as applog
// reads it compressed (gzip, zstd): *.log, a rotated *.log.N, or a
// container's stderr or stdout.
func isLogName(name string) bool {
	for _, ext := range []string{".gz", ".zst"} {
		name = strings.TrimSuffix(name, ext)
	}
	if base, n, ok := strings.Cut(name, ".log."); ok && base != "" && n != "" && strings.Trim(n, "0123456789") == "" {
		return true
	}
	return (len(name) > len(".log") && strings.HasSuffix(name, ".log")) || name == "stderr" || name == "stdout"
}

// SkippedSummary says which files a walk passed over, naming the first
// three relative to dir when dir is not "".
func SkippedSummary(dir string, skipped []string) string {
	const shown = 3
	names := make([]string, 0, shown)
	for _, p := range skipped[:min(shown, len(skipped))] {
		if rel, err := filepath.Rel(dir, p); dir != "" && err == nil {
			p = rel
		}
		names = append(names, p)
	}
	more := ""
	if len(skipped) > shown {
		more = fmt.Sprintf(" and %d more", len(skipped)-shown)
	}
	what := "files that are neither event logs nor profiles"
	if len(skipped) == 1 {
		what = "file that is neither an event log nor a profile"
	}
	return fmt.Sprintf("skipped %d %s (%s%s); name container logs on their own", len(skipped), what, strings.Join(names, ", "), more)
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
