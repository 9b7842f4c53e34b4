// Package pproftool runs `go tool pprof` for tests, so that they check
// what sparkprof writes as pprof in the tool its users open it with.
package pproftool

import (
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// Report is what `go tool pprof -top` says of a profile.
type Report struct {
	Type  string // the sample type shown: the profile's default
	Total int64  // Total samples, in the type's base unit (nanoseconds for time)
	Text  string // the whole report
}

var (
	typeLine  = regexp.MustCompile(`(?m)^Type: (\S+)$`)
	totalLine = regexp.MustCompile(`Total samples = (\d+)`)
)

// Top runs `go tool pprof -top -unit=ns` on the profile file at path, with
// extra flags before the file, and returns its report.
func Top(tb testing.TB, path string, extra ...string) Report {
	tb.Helper()
	args := append(append([]string{"tool", "pprof", "-top", "-unit=ns"}, extra...), path)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("go tool pprof -top %s: %v\n%s", path, err, out)
	}
	r := Report{Text: string(out)}
	if m := typeLine.FindStringSubmatch(r.Text); m != nil {
		r.Type = m[1]
	}
	if m := totalLine.FindStringSubmatch(r.Text); m != nil {
		r.Total, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if r.Type == "" || totalLine.FindStringSubmatch(r.Text) == nil {
		tb.Fatalf("go tool pprof -top %s: no type or total in its report:\n%s", path, out)
	}
	return r
}
