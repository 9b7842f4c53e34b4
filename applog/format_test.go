package applog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/containerlog"
)

// TestJSONLayout parses a generated Spark 4 JSON layout fixture
// (testdata/spark4_driver.jsonl, written by hand after the documented
// fields ts, level, msg, context, exception, logger).
func TestJSONLayout(t *testing.T) {
	l, err := Open("testdata/spark4_driver.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Layout != containerlog.LayoutJSON || l.Role != "driver" || l.Lines != 8 {
		t.Errorf("layout %q role %q lines %d", l.Layout, l.Role, l.Lines)
	}
	if len(l.Jobs) != 1 || l.Jobs[0].Took != 5*time.Second || l.Jobs[0].Partitions != 2 {
		t.Errorf("jobs = %+v", l.Jobs)
	}
	if len(l.Tasks) != 2 {
		t.Fatalf("tasks = %+v", l.Tasks)
	}
	if tk := l.Tasks[0]; tk.Duration != 4400*time.Millisecond || tk.Executor != "1" || tk.Host != "10.0.0.5" {
		t.Errorf("task 0 = %+v", tk)
	}
	if tk := l.Tasks[1]; tk.Status != "RUNNING" {
		t.Errorf("task 1 status %q, want RUNNING", tk.Status)
	}
	if len(l.Errors) != 1 || !strings.Contains(l.Errors[0].Message, "\tat org.apache.spark.storage.DiskBlockObjectWriter.write(DiskBlockObjectWriter.scala:310)") {
		t.Errorf("errors = %+v", l.Errors)
	}
}

func TestChunks(t *testing.T) {
	// Generated log: a run of 5 fetch lines, one other line, a run of 3
	// fetch lines and a run of 2 spill lines.
	var b strings.Builder
	line := func(logger, msg string) { fmt.Fprintf(&b, "24/01/02 10:00:00 INFO %s: %s\n", logger, msg) }
	for i := range 5 {
		line("ShuffleBlockFetcherIterator", fmt.Sprintf("Getting %d (%d KiB) non-empty blocks", i, i*7))
	}
	line("Executor", "Running task 1.0 in stage 3.0 (TID 9)")
	for i := range 3 {
		line("ShuffleBlockFetcherIterator", fmt.Sprintf("Getting %d (%d KiB) non-empty blocks", i+10, i))
	}
	line("ExternalSorter", "Spilling 10 MB to disk")
	line("ExternalSorter", "Spilling 12 MB to disk")
	l, err := Parse(strings.NewReader(b.String()), "gen", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []containerlog.Chunk{
		{Pattern: "INFO ShuffleBlockFetcherIterator: Getting N (N KiB) non-empty blocks", Example: "Getting 0 (0 KiB) non-empty blocks", Runs: 2, Lines: 8},
		{Pattern: "INFO ExternalSorter: Spilling N MB to disk", Example: "Spilling 10 MB to disk", Runs: 1, Lines: 2},
	}
	if len(l.Chunks) != len(want) {
		t.Fatalf("chunks = %+v", l.Chunks)
	}
	for i := range want {
		if l.Chunks[i] != want[i] {
			t.Errorf("chunk %d = %+v, want %+v", i, l.Chunks[i], want[i])
		}
	}
}

// TestMultiLineChunks checks blocks of several different lines that repeat
// (generated: the corpus logs have none long enough).
func TestMultiLineChunks(t *testing.T) {
	var b strings.Builder
	line := func(logger, msg string) { fmt.Fprintf(&b, "24/01/02 10:00:00 INFO %s: %s\n", logger, msg) }
	line("SparkContext", "Starting job")
	for i := range 4 {
		line("MemoryStore", fmt.Sprintf("Block broadcast_%d stored as values in memory", i))
		line("BlockManagerInfo", fmt.Sprintf("Added broadcast_%d_piece0 in memory on host:%d", i, 4000+i))
		line("SparkContext", fmt.Sprintf("Created broadcast %d from textFile", i))
	}
	line("SparkContext", "Job done")
	l, err := Parse(strings.NewReader(b.String()), "gen", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Chunks) != 1 {
		t.Fatalf("chunks = %+v", l.Chunks)
	}
	c := l.Chunks[0]
	want := "INFO MemoryStore: Block broadcast_N stored as values in memory\nINFO BlockManagerInfo: Added broadcast_N_pieceN in memory on host:N\nINFO SparkContext: Created broadcast N from textFile"
	if c.Pattern != want || c.Lines != 12 || c.Runs != 1 {
		t.Errorf("chunk = %+v, want the 3-line block covering 12 lines", c)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"TID 1825 on host-10-0-0-1:7337", "TID N on host-N-N-N-N:N"},
		{"addr 0x7f3a12 id deadbeef01", "addr N id N"},
		{"23/11/07 10:59:24.793", "N/N/N N:N:N.N"},
		{"Exception in task", "Exception in task"},
		{"abcdefgh stays", "abcdefgh stays"},
	}
	for _, tt := range tests {
		if got := normalize(tt.in); got != tt.want {
			t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
