package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	rev := "7bcc232c5f35091958a4956261aad54e5fc7af76"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: "2026-12-04T21:31:44Z"}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		commit string // what make sets
		want   string
	}{
		{"go build in a clone", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"", "sparkprof (devel) commit " + rev + " 2026-12-04T21:31:44Z; go1.26.8"},
		{"changed tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"", "sparkprof (devel) commit " + rev + " 2026-12-04T21:31:44Z, modified; go1.26.8"},
		{"go install of a release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.0"}},
			"", "sparkprof v0.3.0, commit unknown (built without version control information: build with make, or go build in a git clone); go1.26.8"},
		{"make in a worktree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			rev + "+modified", "sparkprof (devel) commit " + rev + "+modified; go1.26.8"},
		{"stamped wins", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"0000", "sparkprof (devel) commit " + rev + " 2026-12-04T21:31:44Z; go1.26.8"},
	}
	defer func(c string) { commit = c }(commit)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			commit = tt.commit
			if got := version(tt.bi); got != tt.want {
				t.Errorf("version = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersionFlag runs the binary built as make builds it: version and
// --version name the commit it was built from.
func TestVersionFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	bin := t.TempDir() + "/sparkprof"
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.commit="+strings.TrimSpace(string(head)), "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var outs []string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("sparkprof %s: %v", arg, err)
		}
		outs = append(outs, string(out))
	}
	if outs[0] != outs[1] || !strings.Contains(outs[0], " commit "+strings.TrimSpace(string(head))) {
		t.Errorf("version %q, --version %q: want both to name commit %s", outs[0], outs[1], head)
	}
}
