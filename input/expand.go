package input

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
)

// The kinds of input Classify tells apart, as analysis.Source records them.
const (
	EventLog = "eventlog" // a Spark event log: a file in any codec, or a rolling log's directory
	Logs     = "logs"     // container logs: a driver or executor log, a YARN log directory
	Profile  = "profile"  // profiler records, or a directory to walk for inputs
)

// Expand turns paths into the inputs they hold. An event log (a file or a
// rolling directory), a container log directory and any file stay one
// source each. Any other directory is walked, the way a History Server
// lists spark.eventLog.dir, for event logs, rolling event log and container
// log directories, and files that hold a profile; hidden files are passed
// over, and the other files are returned in skipped. A walk that finds
// nothing is an error.
func Expand(paths []string) (sources []analysis.Source, skipped []string, err error) {
	for _, path := range paths {
		x, err := expandPath(path, nil)
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
	sources []analysis.Source
	skipped []string
	walked  bool // path is a directory that was walked
}

// expandPath returns what path holds, telling event logs with memory
// drawn from mem, if not nil.
func expandPath(path string, mem eventlog.Memory) (expansion, error) {
	kind, err := Classify(path, mem)
	if err != nil {
		return expansion{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return expansion{}, err
	}
	if kind != Profile || !st.IsDir() {
		return expansion{sources: []analysis.Source{{Path: path, Kind: kind}}}, nil
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
			kind, err := Classify(p, mem)
			if err != nil {
				return err
			}
			if kind != Profile {
				x.sources = append(x.sources, analysis.Source{Path: p, Kind: kind})
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
		kind, err := classifyWalked(p, mem)
		if err != nil {
			return err
		}
		if kind == "" {
			x.skipped = append(x.skipped, p)
			return nil
		}
		x.sources = append(x.sources, analysis.Source{Path: p, Kind: kind})
		return nil
	})
	if err != nil {
		return expansion{}, fmt.Errorf("walk %s: %w", path, err)
	}
	if len(x.sources) == 0 {
		return expansion{}, fmt.Errorf("%s: no event logs, logs (*.log, stderr, container log directories) or profiles (*.jfr, *.pprof, *.folded, *.json, *.pstats, optionally .gz) in directory", path)
	}
	return x, nil
}

// classifyWalked tells what a file found by a directory walk holds:
// Profile for a profile file name whose content is a known format,
// EventLog for a Spark event log in any codec, Logs for a file named as
// logs are (driver.log, stderr, spark.log.1.gz), "" for anything else (a
// walk does not take a stray text file for a container log).
func classifyWalked(path string, mem eventlog.Memory) (string, error) {
	if format.HasProfileName(filepath.Base(path)) {
		head, err := readHead(path)
		if err != nil {
			return "", err
		}
		if _, ok := format.Detect(head); ok {
			return Profile, nil
		}
	}
	if ok, err := isEventLog(path, mem); ok || err != nil {
		return EventLog, err
	}
	if isLogName(filepath.Base(path)) {
		return Logs, nil
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

// Classify tells what a path holds by its content: EventLog, Logs or
// Profile (profiler records, or a directory to walk for inputs). Reading
// a compressed event log's first line draws from mem, if not nil (a zstd
// window may take 128 MiB).
func Classify(path string, mem eventlog.Memory) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		base := filepath.Base(path)
		if strings.HasPrefix(base, "eventlog_v2_") {
			return EventLog, nil
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return "", err
		}
		for _, en := range entries {
			n := en.Name()
			switch {
			case strings.HasPrefix(n, "container_"):
				return Logs, nil
			case n == "eventlog" || strings.HasPrefix(n, "eventlog-") || strings.HasPrefix(n, "events_") || strings.HasPrefix(n, "appstatus_"):
				return EventLog, nil
			}
		}
		return Profile, nil
	}
	if ok, err := isEventLog(path, mem); ok || err != nil {
		return EventLog, err
	}
	head, err := readHead(path)
	if err != nil {
		return "", err
	}
	if f, ok := format.Detect(head); ok && (f.Name != "folded" || !looksLikeLog(head)) {
		// Folded stacks accept most text: a log whose first lines end in
		// a number reads as folded too, so folded text is a profile only
		// when it has no line of a container log's layout.
		return Profile, nil
	}
	return Logs, nil
}

// looksLikeLog reports whether head has a line in a layout package applog
// knows (log4j's, Spark's JSON).
func looksLikeLog(head []byte) bool {
	l, err := applog.Parse(bytes.NewReader(head), "head", applog.Options{})
	return err == nil && l.Layout != ""
}

// isEventLog reports whether the first line of path, in any codec the
// event-log reader knows, is a Spark listener event; reading it draws
// from mem, if not nil, and its error is mem's refusal.
func isEventLog(path string, mem eventlog.Memory) (bool, error) {
	line, err := eventlog.Head(path, 1<<10, mem)
	if eventlog.Refused(err) {
		return false, err
	}
	return err == nil && bytes.HasPrefix(bytes.TrimSpace(line), []byte(`{"Event"`)), nil
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
