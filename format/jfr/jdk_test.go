package jfr

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/sparkthread"
)

// TestJDKRecording records testdata/SparkLike.java with the JDK's own
// Flight Recorder and checks that its Spark task threads come out with
// stage and task labels (as the format package adds them to every
// profile) and that CPU, allocation and lock samples exist.
func TestJDKRecording(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	javac, err1 := exec.LookPath("javac")
	java, err2 := exec.LookPath("java")
	if err1 != nil || err2 != nil {
		t.Skip("no JDK on PATH")
	}
	dir := t.TempDir()
	if out, err := exec.Command(javac, "-d", dir, filepath.Join("testdata", "SparkLike.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	rec := filepath.Join(dir, "rec.jfr")
	cmd := exec.Command(java, "-cp", dir,
		"-XX:StartFlightRecording=settings=profile,filename="+rec,
		"-Xlog:jfr=warning", "SparkLike", "3000")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("java: %v\n%s", err, out)
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode(data, rec)
	if err != nil {
		t.Fatal(err)
	}
	sparkthread.LabelProfile(p)
	if p.Start <= 0 || p.End <= p.Start {
		t.Errorf("Start, End = %d, %d", p.Start, p.End)
	}
	byType := map[string]int{}
	tasks := map[string]bool{}
	for _, s := range p.Samples {
		typ := p.Types[s.Type].Name
		if p.Label(s, profile.LabelThreadPool) != "task" {
			continue
		}
		byType[typ]++
		if got := p.Label(s, profile.LabelStageID); got != "2" {
			t.Fatalf("task thread %q: stage %q, want 2", p.Threads[s.Thread].Name, got)
		}
		tasks[p.Label(s, profile.LabelTaskID)] = true
		if s.Time < p.Start || s.Time > p.End {
			t.Fatalf("sample time %d outside [%d, %d]", s.Time, p.Start, p.End)
		}
	}
	for _, typ := range []string{"cpu", "alloc_bytes", "alloc_objects", "lock_contentions", "lock_delay"} {
		if byType[typ] == 0 {
			t.Errorf("no %s samples on task threads (have %v)", typ, byType)
		}
	}
	series := map[string]int{}
	for _, s := range p.Series {
		series[s.Name] += len(s.Points)
		if s.Name == "jvm.gc.pause" {
			if gc, _ := s.Labels.Get("gc"); gc == "" {
				t.Errorf("GC pause series without gc name label")
			}
		}
	}
	for _, name := range []string{"jvm.gc.pause", "jvm.cpu.user", "jvm.cpu.system", "machine.cpu.total", "jvm.heap.used"} {
		if series[name] == 0 {
			t.Errorf("no points in series %s (have %v)", name, series)
		}
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	for _, id := range []string{"17", "18", "19", "20"} {
		if !tasks[id] {
			t.Errorf("no samples of task %s (have %v)", id, tasks)
		}
	}
}
