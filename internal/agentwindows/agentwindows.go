// Package agentwindows gives the store's benchmarks the shape of a
// busy app: a recording of the agent's windows of one JVM
// (SPARKPROF_JDK_WINDOWS), sent as if by many executors. It is test
// support: only tests import it.
package agentwindows

import (
	"os"
	"strconv"
	"testing"

	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/profile"
)

// Load returns the windows (JFR chunks) of the recording
// SPARKPROF_JDK_WINDOWS names, skipping tb without one.
func Load(tb testing.TB) [][]byte {
	tb.Helper()
	name := os.Getenv("SPARKPROF_JDK_WINDOWS")
	if name == "" {
		tb.Skip("SPARKPROF_JDK_WINDOWS names no recording of the agent's windows")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	windows, err := jfr.Chunks(data)
	if err != nil || len(windows) == 0 {
		tb.Fatalf("%s: %d windows: %v", name, len(windows), err)
	}
	return windows
}

// Upload is one executor's profile of one window, with its labels.
type Upload struct {
	Profile *profile.Profile
	Labels  profile.Labels
}

// Executors returns each window as sent by each of executors executors,
// at the window's own times, their threads named apart by executor.
func Executors(tb testing.TB, windows [][]byte, executors int) []Upload {
	tb.Helper()
	var ups []Upload
	for i, w := range windows {
		for e := range executors {
			p, err := jfr.Decode(w, "window")
			if err != nil {
				tb.Fatal(err)
			}
			p.DropIndexes()
			for t := 1; t < len(p.Threads); t++ {
				p.Threads[t].Name += " on executor " + strconv.Itoa(e)
			}
			if p.Start == 0 || p.End <= p.Start {
				tb.Fatalf("window %d: no time span (%d to %d)", i, p.Start, p.End)
			}
			ups = append(ups, Upload{Profile: p,
				Labels: profile.Labels{{Name: profile.LabelServiceName, Value: "app"}, {Name: profile.LabelExecutorID, Value: strconv.Itoa(e)}}})
		}
	}
	return ups
}
