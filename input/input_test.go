package input

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/containerlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

// A History Server's log directory expands to its logs: files in every
// codec and a rolling eventlog_v2_ directory, which stays one source.
func TestExpandEventLogDirectory(t *testing.T) {
	dir := corpus.Path(t, "eventlogs", "apache")
	sources, skipped, err := Expand([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"app-20161116163331-0000",
		"application_1536831636016_59384_1",
		"eventlog_v2_local-1766844910796",
		"local-1430917381535_1",
		"local-1430917381535_2",
		"local-1642039451826",
	}
	if len(sources) != len(want) || len(skipped) != 0 {
		t.Fatalf("got %v, skipped %v; want the %d logs %v", sources, skipped, len(want), want)
	}
	for i, s := range sources {
		if filepath.Base(s.Path) != want[i] || s.Kind != EventLog {
			t.Errorf("source %d = %+v, want event log %s", i, s, want[i])
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A directory of Spark's outputs mixed with other files: the walk keeps the
// event logs, rolling logs, container log directories and profiles, passes
// over hidden files, and names what it skipped.
func TestExpandMixedDirectory(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, corpus.Path(t, "eventlogs", "nvidia", "rp_sql_eventlog.zstd"), filepath.Join(dir, "spark-events", "rp_sql_eventlog.zstd"))
	copyFile(t, corpus.Path(t, "eventlogs", "apache", "local-1642039451826"), filepath.Join(dir, "spark-events", "local-1642039451826"))
	rolling := corpus.Path(t, "eventlogs", "apache", "eventlog_v2_local-1766844910796")
	for _, name := range []string{"appstatus_local-1766844910796", "events_1_local-1766844910796"} {
		copyFile(t, filepath.Join(rolling, name), filepath.Join(dir, "spark-events", "eventlog_v2_local-1766844910796", name))
	}
	copyFile(t, corpus.Path(t, "jfr", "dump1.jfr.gz"), filepath.Join(dir, "profiles", "app-1", "profile-exec-1.jfr.gz"))
	copyFile(t, corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"), filepath.Join(dir, "uber", "Stacktrace.json.gz"))
	copyFile(t, corpus.Path(t, "eventlogs", "golden", "apache", "app_environment_expectation.json"), filepath.Join(dir, "expected.json"))
	copyFile(t, corpus.Path(t, "applogs", "nvidia", "driverlog"), filepath.Join(dir, "yarn", "application_1_0001", "container_1_0001_01_000001", "stderr"))
	copyFile(t, corpus.Path(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"), filepath.Join(dir, "console", "JobStraggler.log.gz"))
	for name, text := range map[string]string{
		"notes.txt":                              "not an input\n",
		"console/build.log":                      "BUILD SUCCESSFUL\n",
		"spark-events/.local-1642039451826.crc":  "crc",
		".git/config":                            "[core]\n",
		"spark-events/.eventlog_v2_x/events_1_x": "{}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	sources, skipped, err := Expand([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sources {
		rel, _ := filepath.Rel(dir, s.Path)
		got = append(got, s.Kind+" "+filepath.ToSlash(rel))
	}
	want := []string{
		"logs console/JobStraggler.log.gz",
		"logs console/build.log",
		"profile profiles/app-1/profile-exec-1.jfr.gz",
		"eventlog spark-events/eventlog_v2_local-1766844910796",
		"eventlog spark-events/local-1642039451826",
		"eventlog spark-events/rp_sql_eventlog.zstd",
		"profile uber/Stacktrace.json.gz",
		"logs yarn/application_1_0001",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sources:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var gotSkipped []string
	for _, p := range skipped {
		rel, _ := filepath.Rel(dir, p)
		gotSkipped = append(gotSkipped, filepath.ToSlash(rel))
	}
	if strings.Join(gotSkipped, " ") != "expected.json notes.txt" {
		t.Errorf("skipped %v, want expected.json and notes.txt", gotSkipped)
	}

	in, err := Read([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.EventLogs) != 3 || len(in.Profiles) != 2 || len(in.Logs) == 0 {
		t.Errorf("read %d event logs, %d profiles, %d container logs; want 3, 2 and some", len(in.EventLogs), len(in.Profiles), len(in.Logs))
	}
	if !slices.ContainsFunc(in.Logs, func(l *containerlog.Log) bool { return strings.HasSuffix(l.Source, "JobStraggler.log.gz") }) {
		t.Errorf("the console log found by the walk was not read")
	}
	// The build log found by its name but in no layout of Spark's is a
	// warning, as a bad file found by a walk is.
	if len(in.Warnings) != 2 || !strings.Contains(in.Warnings[0], "skipped 2 files that are neither event logs nor profiles (expected.json, notes.txt)") ||
		!strings.Contains(in.Warnings[1], "build.log") {
		t.Errorf("warnings %q, want one naming the 2 skipped files and one the build log", in.Warnings)
	}
}

// A bad file found by a walk is a warning; named on its own it is an error.
func TestReadWalkedFailureWarns(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, corpus.Path(t, "eventlogs", "apache", "local-1642039451826"), filepath.Join(dir, "good"))
	bad := filepath.Join(dir, "bad.jfr")
	if err := os.WriteFile(bad, []byte("FLR\x00\x00\x02\x00\x01truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Read([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.EventLogs) != 1 || len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "bad.jfr") {
		t.Errorf("read %d event logs, warnings %q; want the good log and a warning naming bad.jfr", len(in.EventLogs), in.Warnings)
	}
}

// With Options.Partial a named input that cannot be read is skipped and
// named; the read fails only when nothing could be read.
func TestReadPartial(t *testing.T) {
	good := corpus.Path(t, "eventlogs", "apache", "local-1642039451826")
	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte("a shopping list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read([]string{good, bad}, Options{}); err == nil {
		t.Error("without Partial, a bad input failed nothing")
	}
	in, err := Read([]string{good, bad}, Options{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.EventLogs) != 1 || len(in.Unreadable) != 1 || !strings.Contains(in.Unreadable[0].Error(), "notes.txt") ||
		len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "notes.txt") {
		t.Errorf("read %d event logs, unreadable %v, warnings %q; want the good log and notes.txt named", len(in.EventLogs), in.Unreadable, in.Warnings)
	}
	missing := filepath.Join(t.TempDir(), "gone.zstd")
	if _, err := Read([]string{bad, missing}, Options{Partial: true}); err == nil || !strings.Contains(err.Error(), "none of the inputs") ||
		!strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "gone.zstd") {
		t.Errorf("nothing readable: %v, want an error naming both inputs", err)
	}
}

func TestExpandNothingFound(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Expand([]string{dir})
	if err == nil || !strings.Contains(err.Error(), "no event logs, logs (*.log, stderr, container log directories) or profiles") {
		t.Fatalf("err = %v, want one saying the directory holds no inputs", err)
	}
}

func TestIsLogName(t *testing.T) {
	for name, want := range map[string]bool{
		"driver.log": true, "JobStraggler.log.gz": true, "spark.log.1": true, "spark.log.12.gz": true,
		"stderr": true, "stdout.gz": true, "stderr.zst": true,
		".log": false, "log": false, "notes.txt": false, "catalog": false, "app.log.old": false, "x.logs": false,
	} {
		if got := isLogName(name); got != want {
			t.Errorf("isLogName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestClassify tells the corpus's inputs apart by their content: event
// logs in every codec and layout, container logs, profiler records, and a
// directory of profiler records to walk.
func TestClassify(t *testing.T) {
	tests := []struct {
		rel  []string
		want string
	}{
		{[]string{"eventlogs", "nvidia", "rp_sql_eventlog.zstd"}, EventLog},
		{[]string{"eventlogs", "nvidia", "db_sim_eventlog", "eventlog-2021-06-15--15-00.gz"}, EventLog},
		{[]string{"eventlogs", "apache", "local-1642039451826"}, EventLog},
		{[]string{"eventlogs", "apache", "eventlog_v2_local-1766844910796"}, EventLog},
		{[]string{"eventlogs", "nvidia", "db_sim_eventlog"}, EventLog},
		{[]string{"applogs", "nvidia", "driverlog"}, Logs},
		{[]string{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"}, Logs},
		{[]string{"jfr", "dump1.jfr.gz"}, Profile},
		{[]string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"}, Profile},
		{[]string{"jvm-profiler", "phil_stopwatch", "ProfileStraggler"}, Profile},
		// Folded stacks, as phil_stopwatch's fold_stacks.py and grafana's
		// jfr-parser write them, whatever the file's name.
		{[]string{"jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz"}, Profile},
		{[]string{"jfr", "golden", "dump2_2_process_cpu_cpu__nanoseconds_expected_collapsed.txt.gz"}, Profile},
	}
	for _, tt := range tests {
		t.Run(filepath.Join(tt.rel...), func(t *testing.T) {
			got, err := Classify(corpus.Path(t, tt.rel...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Classify = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := Classify(filepath.Join(t.TempDir(), "missing"), nil); err == nil {
		t.Error("Classify of a missing path: no error")
	}
}
