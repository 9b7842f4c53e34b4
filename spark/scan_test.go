package spark

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/valyala/fastjson"
)

// fullParse is what the model gets from fastjson for a task event line.
func fullParse(line []byte) (*Task, bool, bool) {
	var p fastjson.Parser
	v, err := p.ParseBytes(line)
	if err != nil {
		return nil, false, false
	}
	switch string(v.GetStringBytes("Event")) {
	case "SparkListenerTaskStart":
		t, ok := parseTaskStart(v)
		return t, false, ok
	case "SparkListenerTaskEnd":
		t, _, ok := parseTaskEnd(v)
		return t, true, ok
	}
	return nil, false, false
}

// TestScanMatchesFastjson checks the fast task-event scanner against
// fastjson on every task event of several real logs (Spark 1.5 to 4.2).
func TestScanMatchesFastjson(t *testing.T) {
	logs := [][]string{
		{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"},
		{"nvidia", "nds_q88_photon_db_13_3.zstd"},
		{"nvidia", "spark2-eventlog.zstd"},
		{"apache", "local-1642039451826"},
		{"apache", "eventlog_v2_local-1766844910796"},
		{"sparklint", "spark_event_log_example"},
		{"sparklens", "local-1532512550423"},
	}
	for _, rel := range logs {
		r, err := eventlog.Open(corpus.Path(t, append([]string{"eventlogs"}, rel...)...))
		if err != nil {
			t.Fatal(err)
		}
		scanned, fellBack := 0, 0
		for {
			line, pos, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(line, taskEventPrefix) {
				continue
			}
			got, gotEnd, ok := scanTaskEvent(line)
			if !ok {
				fellBack++
				continue
			}
			scanned++
			want, wantEnd, wok := fullParse(line)
			if !wok || gotEnd != wantEnd || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: scanner and fastjson differ:\n%+v\n%+v", pos, got, want)
			}
		}
		r.Close()
		if scanned == 0 {
			t.Errorf("%v: no line took the fast path (%d fell back)", rel, fellBack)
		}
		t.Logf("%v: %d task events scanned, %d to fastjson", rel, scanned, fellBack)
	}
}

// FuzzScanTaskEvent checks that the scanner never panics and, when it
// accepts a line, agrees with fastjson.
func FuzzScanTaskEvent(f *testing.F) {
	r, err := eventlog.Open(corpus.Path(f, "eventlogs", "apache", "local-1642039451826"))
	if err != nil {
		f.Fatal(err)
	}
	for n := 0; n < 20; {
		line, _, err := r.Next()
		if err != nil {
			break
		}
		if bytes.HasPrefix(line, taskEventPrefix) {
			f.Add(append([]byte(nil), line...))
			n++
		}
	}
	r.Close()
	f.Fuzz(func(t *testing.T, line []byte) {
		got, gotEnd, ok := scanTaskEvent(line)
		if !ok {
			return
		}
		want, wantEnd, wok := fullParse(line)
		if !wok {
			return // fastjson rejects what the scanner accepted: a lenient scanner is harmless only if the values agree on valid JSON
		}
		if gotEnd != wantEnd || !reflect.DeepEqual(got, want) {
			t.Fatalf("scanner and fastjson differ on %q:\n%+v\n%+v", line, got, want)
		}
	})
}

// BenchmarkScanTaskEvent scans the 17,210 task events (33.9 MB) of a
// 36.5 MB (uncompressed) log, held in memory: the scanner alone, on one
// core, without the reading, decompression and model BenchmarkBuild
// includes. The reported MB/s is of the task events' bytes.
func BenchmarkScanTaskEvent(b *testing.B) {
	r, err := eventlog.Open(corpus.Path(b, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"))
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	var size int64
	for {
		line, _, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if bytes.HasPrefix(line, taskEventPrefix) {
			lines = append(lines, bytes.Clone(line))
			size += int64(len(line))
		}
	}
	r.Close()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, line := range lines {
			scanTaskEvent(line)
		}
	}
}
