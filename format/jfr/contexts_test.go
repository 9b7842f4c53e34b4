package jfr_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
)

// A real async-profiler recording with its few contexts spread over 1,300:
// the same samples, values and stacks, each labelled with the task its new
// context names; the JDK's own reader reads the rewritten recording too.
func TestMapContexts(t *testing.T) {
	data := corpus.Read(t, "jfr", "dump1.jfr.gz")
	orig, err := jfr.Decode(data, "dump1")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1300
	seen := 0
	mapped, err := jfr.MapContexts(data, func(i int, ctx uint64) uint64 {
		seen++
		return uint64(i%n + 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := jfr.DecodeWithOptions(mapped, "mapped", jfr.Options{Labels: synth.TaskContexts(n)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != len(orig.Samples) || seen == 0 {
		t.Fatalf("%d samples (%d with a context), the recording has %d", len(p.Samples), seen, len(orig.Samples))
	}
	tasks := map[string]bool{}
	for i, s := range p.Samples {
		o := orig.Samples[i]
		if s.Value != o.Value || s.Time != o.Time || s.State != o.State || p.Types[s.Type] != orig.Types[o.Type] ||
			stackNames(p, s.Stack) != stackNames(orig, o.Stack) {
			t.Fatalf("sample %d is %+v, was %+v", i, s, o)
		}
		if v := p.Label(s, profile.LabelTaskID); v != "" {
			tasks[v] = true
		}
	}
	t.Logf("%d samples, %d with a context, %d tasks", len(p.Samples), seen, len(tasks))
	if len(tasks) != min(seen, n) {
		t.Errorf("%d tasks among the samples, want %d", len(tasks), min(seen, n))
	}
	jdk, err := exec.LookPath("jfr")
	if err != nil {
		t.Skip("no JDK jfr tool on PATH")
	}
	path := filepath.Join(t.TempDir(), "mapped.jfr")
	if err := os.WriteFile(path, mapped, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(jdk, "summary", path).CombinedOutput(); err != nil {
		t.Errorf("jfr summary of the rewritten recording: %v\n%s", err, out)
	}
}

// stackNames returns the frame names of stack id of p, root first.
func stackNames(p *profile.Profile, id profile.StackID) string {
	var names string
	for _, f := range p.Stack(id, nil) {
		names += p.Frames[f].Name + ";"
	}
	return names
}
