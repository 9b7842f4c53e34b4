package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
)

func init() {
	register(&command{
		name:    "version",
		summary: "print the sparkprof version and the commit it was built from",
		run: func(_ context.Context, e *env, args []string) error {
			fs := newFlagSet(e, "version")
			if err := fs.Parse(args); err != nil {
				return err
			}
			if fs.NArg() != 0 {
				return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
			}
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintln(e.stdout, version(bi))
			return nil
		},
	})
}

// commit is the commit the binary was built from, for builds that go build
// cannot stamp (a git worktree, whose .git is a file; GOFLAGS=-buildvcs=false):
// make sets it with -ldflags "-X main.commit=...".
var commit string

// version describes the build bi records: the module version, and the
// commit go build stamped (vcs.revision, with its time and whether the
// tree had changes), else the one make set in commit, e.g.
//
//	sparkprof (devel) commit 7bcc2321… 2026-12-04T21:40:00Z, modified; go1.26.8
func version(bi *debug.BuildInfo) string {
	if bi == nil {
		return "sparkprof (unknown build)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sparkprof %s", v)
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, " commit %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " %s", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(", modified")
		}
	} else if commit != "" {
		fmt.Fprintf(&b, " commit %s", commit)
	} else {
		b.WriteString(", commit unknown (built without version control information: build with make, or go build in a git clone)")
	}
	fmt.Fprintf(&b, "; %s", bi.GoVersion)
	return b.String()
}
