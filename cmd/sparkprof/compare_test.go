package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
)

// twoRuns writes a real event log and a later run of it, each duration
// 1.5 times as long, into a directory, and returns their paths.
func twoRuns(t *testing.T) (dir, first, later string) {
	t.Helper()
	dir = t.TempDir()
	const id = "local-1532512550423"
	log := corpus.Read(t, "eventlogs", "sparklens", id)
	first, later = filepath.Join(dir, id), filepath.Join(dir, "local-1532512550424")
	if err := os.WriteFile(first, log, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(later, synth.LaterRun(log, id, "local-1532512550424", 1.5), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, first, later
}

// TestCompareText compares two runs, as two logs and as a directory of a
// job's runs, against the golden text; --json's causes add up to the
// change; --html writes a page.
func TestCompareText(t *testing.T) {
	dir, first, later := twoRuns(t)
	code, out, errOut := sparkprof(t, "compare", first, later)
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errOut)
	}
	checkGolden(t, "compare.txt", out, "CompareText")
	if code, byJob, errOut := sparkprof(t, "compare", dir); code != 0 || byJob != out {
		t.Errorf("compare DIR: exit %d (%s), output differs from compare OLD NEW:\n%s", code, errOut, byJob)
	}
	code, js, _ := sparkprof(t, "compare", "--json", "--html", filepath.Join(dir, "compare.html"), first, later)
	var c comparison
	if err := json.Unmarshal([]byte(js), &c); code != 0 || err != nil {
		t.Fatalf("compare --json: exit %d, %v", code, err)
	}
	var sum int64
	for _, k := range c.Causes {
		sum += k.ChangeMs
	}
	if sum != c.ChangeMs || c.DurationRatio != 1.5 {
		t.Errorf("causes add up to %d ms of %d, ratio %v, want 1.5", sum, c.ChangeMs, c.DurationRatio)
	}
	if page, err := os.ReadFile(filepath.Join(dir, "compare.html")); err != nil || !strings.Contains(string(page), "local-1532512550424") {
		t.Errorf("compare --html: %v", err)
	}
}

// TestCompareErrors: what cannot be compared says why and what to give.
func TestCompareErrors(t *testing.T) {
	dir, first, _ := twoRuns(t)
	junk := filepath.Join(dir, "junk.txt")
	os.WriteFile(junk, []byte("not a log\n"), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{first}, "no job has two runs"},
		{[]string{"--job", "nope", dir}, `job "nope" has fewer than two runs`},
		{[]string{first, junk}, "new run"},
		{[]string{}, "no input paths"},
	} {
		code, _, errOut := sparkprof(t, append([]string{"compare"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("compare %v: exit %d, %q; want an error saying %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestAnalyzeRegression: analyze of a job's runs gives the later run a
// regression finding that names its causes.
func TestAnalyzeRegression(t *testing.T) {
	dir, _, _ := twoRuns(t)
	code, out, errOut := sparkprof(t, "analyze", "--full", "--regression-min-ms", "1000", dir)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, errOut)
	}
	// The full report's line (the summary table's is cut).
	if n := len(regexp.MustCompile(`(?m)^\[WARNING\] regression: .* 1\.50× its previous run`).FindAllString(out, -1)); n != 1 {
		t.Errorf("%d regression findings, want one, 1.5×:\n%s", n, out)
	}
}
