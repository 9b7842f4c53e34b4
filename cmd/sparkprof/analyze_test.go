package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// TestAnalyzeManyApps analyses a History Server directory of several apps
// and a stray file: a table of the apps comes first, the directory's
// warning is said once, and the full reports come with --full (without the
// warning again) or one with --app.
func TestAnalyzeManyApps(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"app-20161116163331-0000", "local-1642039451826", "local-1430917381535_1"} {
		data := corpus.Read(t, "eventlogs", "apache", name)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a log\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, stderr := sparkprof(t, "analyze", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	header := regexp.MustCompile(`(?m)^app id +name +duration +tasks +worst finding$`)
	row := regexp.MustCompile(`(?m)^local-1642039451826 +Spark shell +1\.4 min +35 +\[WARNING\] driver-time: `)
	if !strings.HasPrefix(out, "3 applications\n") || !header.MatchString(out) || !row.MatchString(out) ||
		!strings.Contains(out, "local-1430917381535 (attempt 1)") || strings.Contains(out, "longest stages") {
		t.Errorf("summary:\n%s", out)
	}
	if strings.Count(stderr, "notes.txt") != 1 || strings.Contains(out, "notes.txt") {
		t.Errorf("the skipped file is not said once, on stderr:\nstdout:\n%s\nstderr:\n%s", out, stderr)
	}

	code, full, stderr := sparkprof(t, "analyze", "--full", dir)
	if code != 0 || !strings.HasPrefix(full, out[:strings.Index(out, "Full reports")]) || strings.Count(full, "\nSpark shell  ") != 3 ||
		strings.Contains(full, "notes.txt") || strings.Count(stderr, "notes.txt") != 1 {
		t.Errorf("--full: exit %d\n%s\nstderr:\n%s", code, full, stderr)
	}

	code, one, stderr := sparkprof(t, "analyze", "--app", "local-1642039451826", dir)
	if code != 0 || !strings.HasPrefix(one, "Spark shell  local-1642039451826") || strings.Contains(one, "app-20161116163331-0000") {
		t.Errorf("--app: exit %d\n%s\nstderr:\n%s", code, one, stderr)
	}
	if code, _, stderr := sparkprof(t, "analyze", "--app", "app-none", dir); code != 2 || !strings.Contains(stderr, "no such application") {
		t.Errorf("--app of no app: exit %d, %s", code, stderr)
	}
}

// TestAnalyzePartial analyses a good log with a bad file and a missing
// one: the report of what could be read, and a warning naming each of the
// others; only when nothing could be read does it fail.
func TestAnalyzePartial(t *testing.T) {
	good := corpus.Path(t, "eventlogs", "apache", "local-1642039451826")
	bad := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(bad, []byte("a shopping list\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "gone.zstd")
	code, out, stderr := sparkprof(t, "analyze", good, bad, missing)
	if code != 0 || !strings.Contains(out, "local-1642039451826") ||
		!regexp.MustCompile(`sparkprof: skipping .*notes\.txt`).MatchString(stderr) || !regexp.MustCompile(`sparkprof: skipping .*gone\.zstd`).MatchString(stderr) {
		t.Errorf("a good log among bad inputs: exit %d\n%s\nstderr:\n%s", code, out, stderr)
	}
	if code, _, stderr := sparkprof(t, "analyze", bad, missing); code != 1 || !strings.Contains(stderr, "none of the inputs could be read") {
		t.Errorf("no good input: exit %d, %s", code, stderr)
	}
}

// TestAnalyzeLongestStages lists the stages that ran: not those skipped,
// or cut by the end of the log before they ran for any time.
func TestAnalyzeLongestStages(t *testing.T) {
	for _, rel := range [][]string{
		{"eventlogs", "apache", "local-1642039451826"},
		{"eventlogs", "nvidia", "truncated_eventlog"},
	} {
		code, out, stderr := sparkprof(t, "analyze", corpus.Path(t, rel...))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", rel[len(rel)-1], code, stderr)
		}
		_, stages, ok := strings.Cut(out, "longest stages:\n")
		if !ok || regexp.MustCompile(`(?m) 0 ms +(SKIPPED|PENDING|ACTIVE) `).MatchString(stages) || strings.Count(stages, "\n") < 2 {
			t.Errorf("%s: longest stages:\n%s", rel[len(rel)-1], stages)
		}
	}
}

// TestAnalyzeResubmittedStage counts a stage's tasks as its task table
// lists them: stage 238 of application_1603128018386_7846 ran 230 task
// attempts, 3 failed; Spark posted 50 of them again as Resubmitted when
// their executor was lost, which are said apart, not counted as 50 more.
func TestAnalyzeResubmittedStage(t *testing.T) {
	code, out, stderr := sparkprof(t, "analyze", corpus.Path(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^  238\.0 +230 +3 \(\+50 resubmitted\) +386 ms +FAILED `).MatchString(out) {
		t.Errorf("stage 238's line, want 230 tasks, 3 failed (+50 resubmitted):\n%s", out)
	}
}
