package jfr

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// sampleEvents are the JFR event types the decoder turns into samples or
// series.
var sampleEvents = []string{
	"jdk.ExecutionSample",
	"profiler.WallClockSample",
	"jdk.ObjectAllocationInNewTLAB",
	"jdk.ObjectAllocationOutsideTLAB",
	"jdk.ObjectAllocationSample",
	"jdk.JavaMonitorEnter",
	"jdk.ThreadPark",
	"profiler.LiveObject",
	"jdk.NativeMethodSample",
	"jdk.GarbageCollection",
	"jdk.CPULoad",
	"jdk.GCHeapSummary",
}

// jdkSummary runs the JDK's `jfr summary` on a recording and returns the
// event counts it prints.
func jdkSummary(t *testing.T, data []byte) map[string]int {
	t.Helper()
	jfrTool, err := exec.LookPath("jfr")
	if err != nil {
		t.Skip("the JDK's jfr tool is not on PATH")
	}
	file := filepath.Join(t.TempDir(), "in.jfr")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(jfrTool, "summary", file).CombinedOutput()
	if err != nil {
		t.Fatalf("jfr summary: %v\n%s", err, out)
	}
	counts := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && strings.Contains(f[0], ".") {
			if n, err := strconv.Atoi(f[1]); err == nil {
				counts[f[0]] += n // a type redefined in a later chunk is listed again
			}
		}
	}
	if len(counts) == 0 {
		t.Fatalf("jfr summary printed no event counts:\n%s", out)
	}
	return counts
}

// TestJDKSummary checks that every sample event the JDK's `jfr summary`
// counts is decoded, on every corpus file.
func TestJDKSummary(t *testing.T) {
	for _, name := range corpusFiles {
		t.Run(name, func(t *testing.T) {
			data := corpus.Read(t, "jfr", name+".jfr.gz")
			want := jdkSummary(t, data)
			d := getDecoder()
			d.start(name)
			err := d.decode(data)
			counts := maps.Clone(d.counts)
			d.release()
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, ev := range sampleEvents {
				if counts[ev] != want[ev] {
					t.Errorf("%s: decoded %d events, jfr summary counts %d", ev, counts[ev], want[ev])
				}
				total += want[ev]
			}
			if total == 0 {
				t.Error("jfr summary counts no sample events")
			}
		})
	}
}
