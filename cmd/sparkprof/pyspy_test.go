package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/repo"
)

// pyTools returns the bin directory of build/pytools, where
// scripts/python-tools-install.sh installs the pinned py-spy and
// pyroscope-io. Missing, it skips the test, or fails it under CI=true.
func pyTools(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "build", "pytools", "bin")
	if _, err := os.Stat(filepath.Join(bin, "py-spy")); err != nil {
		msg := "py-spy is not in build/pytools: run scripts/python-tools-install.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// TestPySpyOutputs records a short Python program with the real py-spy in
// each of its output formats and reads the recording with top: the
// program's functions must be there, named as Python frames are
// ("file:function").
func TestPySpyOutputs(t *testing.T) {
	bin := pyTools(t)
	prog, err := filepath.Abs(filepath.Join("testdata", "python", "crunch.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, format, file string
		options            []string
		typ                string
	}{
		{"speedscope", "speedscope", "crunch.speedscope.json", nil, "wall:nanoseconds"},
		{"raw", "raw", "crunch.folded", nil, "samples:count"},
		// Each thread's time on each stack, idle time included.
		{"chrometrace", "chrometrace", "crunch.trace.json", []string{"--idle"}, "wall:nanoseconds"},
		// Frames "function (file.py)", and "process N:..." and "thread (N)"
		// frames above them, not Python's.
		{"raw without lines", "raw", "crunch.folded", []string{"--nolineno"}, "samples:count"},
		{"raw by thread and process", "raw", "crunch.folded", []string{"--threads", "--subprocesses"}, "samples:count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tc.file)
			args := append([]string{"record", "--format", tc.format, "--output", out}, tc.options...)
			rec := exec.Command(filepath.Join(bin, "py-spy"), append(args, "--", filepath.Join(bin, "python"), prog)...)
			if b, err := rec.CombinedOutput(); err != nil {
				t.Fatalf("py-spy record: %v\n%s", err, b)
			}
			code, stdout, stderr := sparkprof(t, "top", out)
			if code != 0 {
				t.Fatalf("top: exit %d: %s", code, stderr)
			}
			t.Logf("py-spy %s:\n%s", tc.name, stdout)
			for _, w := range []string{tc.typ, "crunch.py:crunch_numbers", "crunch.py:outer_loop", "crunch.py:<module>"} {
				if !strings.Contains(stdout, w) {
					t.Errorf("top of py-spy's %s output lacks %q", tc.name, w)
				}
			}
			// The program's time is in crunch_numbers: it leads by self time.
			lines := strings.Split(stdout, "\n")
			if len(lines) < 3 || !strings.HasSuffix(lines[2], "crunch_numbers") {
				t.Errorf("crunch_numbers is not first by self time")
			}
		})
	}
}
