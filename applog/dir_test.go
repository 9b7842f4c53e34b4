package applog

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// yarnDir builds a YARN application log directory in a temp dir from
// real corpus logs: the NVIDIA driver log as the AM container's stderr.gz
// and a Spark executor line as a plain executor stderr.
func yarnDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	am := filepath.Join(dir, "container_1700000000000_0001_01_000001")
	ex := filepath.Join(dir, "container_1700000000000_0001_01_000002")
	for _, d := range []string{am, ex} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(corpus.Read(t, "applogs", "nvidia", "driverlog"))
	zw.Close()
	files := map[string][]byte{
		filepath.Join(am, "stderr.gz"): buf.Bytes(),
		filepath.Join(am, "stdout"):    nil,
		filepath.Join(ex, "stderr"):    []byte("24/01/02 10:00:00 INFO CoarseGrainedExecutorBackend: Started daemon\n"),
		filepath.Join(ex, "ignored"):   []byte("x"),
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestOpenDir reads the directory yarnDir builds.
func TestOpenDir(t *testing.T) {
	dir := yarnDir(t)
	logs, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 3 {
		t.Fatalf("got %d logs, want 3", len(logs))
	}
	roles := map[string]string{}
	for _, l := range logs {
		roles[filepath.Base(l.Container)+"/"+filepath.Base(l.Source)] = l.Role
	}
	want := map[string]string{
		"container_1700000000000_0001_01_000001/stderr.gz": "driver",
		"container_1700000000000_0001_01_000001/stdout":    "",
		"container_1700000000000_0001_01_000002/stderr":    "executor",
	}
	for k, v := range want {
		if roles[k] != v {
			t.Errorf("%s: role %q, want %q", k, roles[k], v)
		}
	}
	if _, err := OpenDir(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no container_") {
		t.Errorf("empty dir: err = %v", err)
	}
}

func TestExecutorEvents(t *testing.T) {
	// Generated fixture modelled on Spark 3 scheduler messages.
	const log = `24/01/02 10:00:00 ERROR TaskSchedulerImpl: Lost executor 3 on host-1: Container preempted
24/01/02 10:00:01 INFO BlockManagerMasterEndpoint: Received decommission executor message executor 5
24/01/02 10:00:02 INFO HealthTracker: Excluding executor 7 for 3600000 ms
24/01/02 10:00:03 INFO DAGScheduler: containerlog.Job 1 finished: x, took 1.0 s
`
	l, err := Parse(strings.NewReader(log), "fixture", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, exec string }{{"lost", "3"}, {"decommission", "5"}, {"excluded", "7"}}
	if len(l.ExecutorEvents) != len(want) {
		t.Fatalf("events = %+v", l.ExecutorEvents)
	}
	for i, w := range want {
		if e := l.ExecutorEvents[i]; e.Kind != w.kind || e.Executor != w.exec {
			t.Errorf("event %d = %+v, want %s executor %s", i, e, w.kind, w.exec)
		}
	}
}

// A log directory written as one yarn-logs text reads back as the same
// logs, a last line without its newline included.
func TestWriteYarnLogs(t *testing.T) {
	dir := yarnDir(t)
	third := filepath.Join(dir, "container_1700000000000_0001_01_000003")
	if err := os.Mkdir(third, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(third, "stderr"), []byte("24/01/02 10:00:00 INFO CoarseGrainedExecutorBackend: Started daemon\n24/01/02 10:00:01 INFO Executor: no newline"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteYarnLogs(&buf, dir); err != nil {
		t.Fatal(err)
	}
	got, err := ParseYarnLogs(&buf, "yarn-logs", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d logs read back, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Container != w.Container || g.Role != w.Role || g.Lines != w.Lines || g.Layout != w.Layout || len(g.Jobs) != len(w.Jobs) || g.Host != "" {
			t.Errorf("log %d read back as %s %q, %d lines, layout %q, %d jobs, host %q; want %s %q, %d lines, layout %q, %d jobs",
				i, g.Container, g.Role, g.Lines, g.Layout, len(g.Jobs), g.Host, w.Container, w.Role, w.Lines, w.Layout, len(w.Jobs))
		}
	}
}
