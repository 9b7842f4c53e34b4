package jfr

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/profile"
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
		"-XX:StartFlightRecording=settings=profile,filename="+rec, "-XX:+ExplicitGCInvokesConcurrent",
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
	// The JDK names a few methods alike (generated classes, overloads
	// without lines): stacks below them must still be distinct.
	if err := distinct(p); err != nil {
		t.Error(err)
	}
	attribution.LabelThreads(p)
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
	checkGCPauses(t, rec, p)
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	for _, id := range []string{"17", "18", "19", "20"} {
		if !tasks[id] {
			t.Errorf("no samples of task %s (have %v)", id, tasks)
		}
	}
}

// pauseTolerance is how far, in nanoseconds, a decoded GC pause may be from
// the sum of pauses the jfr tool prints: both convert ticks to nanoseconds.
const pauseTolerance = 1000

// checkGCPauses compares p's jvm.gc.pause points with the sums of pauses
// the JDK's own jfr tool prints for the recording's collections, one of
// which (the concurrent cycle SparkLike asks for) lasts longer than its
// pauses.
func checkGCPauses(t *testing.T, rec string, p *profile.Profile) {
	t.Helper()
	jfrTool, err := exec.LookPath("jfr")
	if err != nil {
		t.Log("no jfr tool on PATH: GC pauses not compared")
		return
	}
	out, err := exec.Command(jfrTool, "print", "--json", "--events", "jdk.GarbageCollection", rec).Output()
	if err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Values struct{ Duration, SumOfPauses string }
			}
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("jfr print --json: %v", err)
	}
	nanos := func(iso string) int64 { // "PT0.001693109S"
		d, err := time.ParseDuration(strings.ToLower(strings.TrimPrefix(iso, "PT")))
		if err != nil {
			t.Fatalf("jfr print duration %q: %v", iso, err)
		}
		return d.Nanoseconds()
	}
	var want, got []int64
	concurrent := false
	for _, e := range doc.Recording.Events {
		want = append(want, nanos(e.Values.SumOfPauses))
		// Any collection that outlasts its pauses by far more than the
		// tolerance below tells a pause from a length. Not a ratio: on a
		// loaded machine the remark pause can stretch to near the cycle.
		concurrent = concurrent || nanos(e.Values.Duration)-nanos(e.Values.SumOfPauses) > 100*pauseTolerance
	}
	for _, s := range p.Series {
		if s.Name == "jvm.gc.pause" {
			for _, pt := range s.Points {
				got = append(got, int64(pt.Value))
			}
		}
	}
	if !concurrent {
		t.Errorf("no collection lasted longer than its pauses: the test needs a concurrent cycle")
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(got) != len(want) {
		t.Fatalf("%d GC pause points, jfr prints %d collections", len(got), len(want))
	}
	for i := range want {
		if d := got[i] - want[i]; d < -pauseTolerance || d > pauseTolerance {
			t.Errorf("GC pauses (ns) %v, jfr prints sums of pauses %v", got, want)
			break
		}
	}
}
