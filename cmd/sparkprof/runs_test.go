package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/internal/english"
)

// plantedChanges are the changes the test jobs' runs mode plants between
// the first run of its job and each later one, and the cause compare must
// name for each.
var plantedChanges = []struct {
	change string
	kind   compare.Kind
}{
	{"input", compare.KindInput},
	{"skew", compare.KindSkew},
	{"slower", compare.KindCode},
	{"executors", compare.KindExecutors},
	{"partitions", compare.KindConfig},
}

var jobsRunLine = regexp.MustCompile(`JOBS RUN (\S+) (app-[0-9]+-[0-9]+)`)

// sparkRunOverRun runs seven runs of one job, a warm-up, the first and one
// for each planted change, with the plugin sending to the test's server,
// which reads their event logs. For each change against the first run,
// compare (the CLI on the two event logs, and the server's
// /api/v1/compare, which also reads the runs' samples) must match every
// stage exactly, as the code is the same, and name the planted change as
// the cause that slowed the run most: more data, a skewed key, the
// function made slower (by name, from the samples), fewer executors, and
// spark.sql.shuffle.partitions. The load of the shared machine, which
// compare names hosts, is left out of that ranking.
func sparkRunOverRun(t *testing.T, e realSpark) {
	j := e.job("runs", nil)
	j.Jar = e.spark.JobsJar(t)
	r := e.spark.Start(t, j)
	r.Wait(t)
	if !strings.Contains(r.Log, "JOBS DONE runs") {
		t.Fatalf("the runs did not finish:\n%s", r.Log)
	}
	apps := map[string]string{}
	for _, m := range jobsRunLine.FindAllStringSubmatch(r.Log, -1) {
		apps[m[1]] = m[2]
		t.Cleanup(func() { os.RemoveAll(filepath.Join(e.spark.Home, "work", m[2])) })
	}
	for _, app := range apps {
		e.waitFinished(t, app)
	}
	var table []string
	for _, pc := range plantedChanges {
		t.Run(pc.change, func(t *testing.T) {
			var served comparison
			e.get(t, "/api/v1/compare?old="+apps["first"]+"&new="+apps[pc.change], &served)
			offline := compareRuns(t, e.bin, eventLogOf(t, e.eventDir, apps["first"]), eventLogOf(t, e.eventDir, apps[pc.change]))
			for _, c := range []struct {
				how string
				c   comparison
			}{{"served", served}, {"offline", offline}} {
				top := checkPlantedChange(t, c.how, c.c, pc.kind)
				if c.how == "served" {
					table = append(table, fmt.Sprintf("%-10s %-9s %+6.0f %%  %6.2f×  %s", pc.change, top.Kind, 100*top.Share, c.c.DurationRatio, causeText(top)))
				}
			}
		})
	}
	t.Logf("planted change → named cause (its share of the change, the job's ratio), from the server:\n%s", strings.Join(table, "\n"))
}

// checkPlantedChange checks a comparison of a run with one planted change
// against the first run, and returns the cause but hosts that slowed it most.
func checkPlantedChange(t *testing.T, how string, c comparison, want compare.Kind) compare.Cause {
	t.Helper()
	for _, s := range c.Stages {
		if s.Old == nil || s.New == nil || s.Confidence != 1 {
			t.Errorf("%s: stage %s of the same code matched with confidence %v (%s), want 1", how, stageID(s.New), s.Confidence, s.MatchedBy)
		}
	}
	// hosts is the machine's load, which a test on a shared machine does
	// not control: the planted cause must be the largest slowing part
	// of the others, and a quarter of all the slowing parts at least.
	var top compare.Cause
	var slowing int64
	t.Logf("%s: %s → %s (%.2f×); causes:", how, english.Millis(c.Old.DurationMs), english.Millis(c.New.DurationMs), c.DurationRatio)
	for _, k := range c.Causes {
		t.Logf("  %-9s %6d ms %5.0f %%  %s", k.Kind, k.ChangeMs, 100*k.Share, causeText(k))
		slowing += max(k.ChangeMs, 0)
		if k.Kind != compare.KindHosts && k.ChangeMs > top.ChangeMs {
			top = k
		}
	}
	if top.Kind != want || 4*top.ChangeMs < slowing {
		t.Errorf("%s: the largest slowing cause but hosts is %s (%d ms of %d ms slowing), want %s, a quarter at least", how, top.Kind, top.ChangeMs, slowing, want)
	}
	switch want {
	case compare.KindCode:
		if how == "served" && !slices.ContainsFunc(top.Functions, func(f compare.FunctionChange) bool { return strings.HasSuffix(f.Name, "Jobs.parseDate") }) {
			t.Errorf("%s: the code cause names %v, not Jobs.parseDate", how, top.Functions)
		}
	case compare.KindConfig:
		if !slices.Contains(top.Settings, "spark.sql.shuffle.partitions") {
			t.Errorf("%s: the config cause names %v, not spark.sql.shuffle.partitions", how, top.Settings)
		}
	}
	return top
}

// eventLogOf returns the path of the app's event log in dir: a file or a
// rolling log's directory.
func eventLogOf(t *testing.T, dir, app string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*"+app+"*"))
	if len(logs) != 1 {
		t.Fatalf("event logs of %s in %s: %v, want one", app, dir, logs)
	}
	return logs[0]
}

// compareRuns runs sparkprof compare --json on two runs.
func compareRuns(t *testing.T, bin, old, new string) comparison {
	t.Helper()
	out, err := exec.Command(bin, "compare", "--json", old, new).Output()
	if err != nil {
		t.Fatalf("compare %s %s: %v\n%s", old, new, err, exitStderr(err))
	}
	var c comparison
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("compare --json: %v\n%s", err, out)
	}
	return c
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
