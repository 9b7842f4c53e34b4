package spark

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
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
		scanned, fellBack := 0, 0
		eachTaskEvent(t, rel, func(line []byte, pos eventlog.Pos) bool {
			got, gotEnd, ok := scanTaskEvent(line, nil)
			if !ok {
				fellBack++
				return true
			}
			scanned++
			want, wantEnd, wok := fullParse(line)
			if !wok || gotEnd != wantEnd || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: scanner and fastjson differ:\n%+v\n%+v", pos, got, want)
			}
			return true
		})
		if scanned == 0 {
			t.Errorf("%v: no line took the fast path (%d fell back)", rel, fellBack)
		}
		t.Logf("%v: %d task events scanned, %d to fastjson", rel, scanned, fellBack)
	}
}

// FuzzScanTaskEvent checks that the scanner never panics and, when it
// accepts a line, agrees with fastjson.
func FuzzScanTaskEvent(f *testing.F) {
	n := 0
	eachTaskEvent(f, []string{"apache", "local-1642039451826"}, func(line []byte, _ eventlog.Pos) bool {
		f.Add(append([]byte(nil), line...))
		n++
		return n < 20
	})
	f.Fuzz(func(t *testing.T, line []byte) {
		got, gotEnd, ok := scanTaskEvent(line, nil)
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

// BenchmarkScanTaskEvent scans the task events of corpus logs of several
// shapes, held in memory: the scanner alone, on one core, without the
// reading, decompression and model BenchmarkBuild includes. The reported
// MB/s is of the task events' bytes. tasks_executors_fail (Spark 3.1 on
// YARN) has 17,210 task events (33.9 MB); rp_sql and aqeshuffle have small
// SQL tasks, whose TaskEnds are mostly SQL accumulables; nds_q88 (Databricks)
// has TaskEnds of ~26 KB.
func BenchmarkScanTaskEvent(b *testing.B) {
	for _, log := range []string{"tasks_executors_fail_compressed_eventlog.zstd", "rp_sql_eventlog.zstd", "aqeshuffle_eventlog.zstd", "nds_q88_photon_db_13_3.zstd"} {
		b.Run(strings.TrimSuffix(log, ".zstd"), func(b *testing.B) {
			var lines [][]byte
			var size int64
			eachTaskEvent(b, []string{"nvidia", log}, func(line []byte, _ eventlog.Pos) bool {
				lines = append(lines, bytes.Clone(line))
				size += int64(len(line))
				return true
			})
			b.SetBytes(size)
			b.ReportAllocs()
			var updates []accumUpdate
			for b.Loop() {
				updates = updates[:0]
				n := 0
				for _, line := range lines {
					scanTaskEvent(line, &updates)
					if n += len(line); n >= batchBytes { // as a batch's lines share it
						updates, n = updates[:0], 0
					}
				}
			}
		})
	}
}

// eachTaskEvent calls fn with each task event line of the corpus's event
// log eventlogs/rel, and where it is, until fn returns false. The line is
// the reader's: fn copies what it keeps.
func eachTaskEvent(tb testing.TB, rel []string, fn func(line []byte, pos eventlog.Pos) bool) {
	tb.Helper()
	r, err := eventlog.Open(corpus.Path(tb, append([]string{"eventlogs"}, rel...)...))
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	for {
		line, pos, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
		if bytes.HasPrefix(line, taskEventPrefix) && !fn(line, pos) {
			return
		}
	}
}

// TestParseInt checks the scanner's integer parse against strconv's.
func TestParseInt(t *testing.T) {
	for _, s := range []string{"0", "7", "-7", "+7", "007", "-0", "123456789012345678", "-123456789012345678",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "", "-", "+", "--5", "1-2", "1.5", "12a",
		" 1", "99999999999999999999"} {
		n, ok := parseInt([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		if ok != (err == nil) || ok && n != want {
			t.Errorf("parseInt(%q) = %d, %v; strconv: %d, %v", s, n, ok, want, err)
		}
	}
}

// TestScanAccumulables checks the updates the scanner reads from a
// TaskEnd's accumulables against fastjson's, on the form Spark writes
// (which the scanner reads by its fast path) and on the forms it must
// read field by field.
func TestScanAccumulables(t *testing.T) {
	for _, tc := range []struct {
		name, accums string
		want         []accumUpdate
		handOver     bool // the scanner gives the line to fastjson
	}{
		{"spark's form", `{"ID":5,"Name":"number of output rows","Update":"12","Value":"40","Internal":true,"Count Failed Values":true,"Metadata":"sql"},` +
			`{"ID":6,"Name":"internal.metrics.executorRunTime","Update":7,"Value":7,"Internal":true,"Count Failed Values":true},` +
			`{"ID":7,"Name":"duration","Update":3,"Value":9}`, []accumUpdate{{5, 12}, {7, 3}}, false},
		{"spaces", `{ "ID": 5, "Name": "rows", "Update": 12 }, { "ID": 6, "Name": "internal.metrics.resultSize", "Update": 1 }`, []accumUpdate{{5, 12}}, false},
		{"other order", `{"Name":"rows","Update":4,"ID":8},{"Update":2,"ID":9,"Name":"internal.metrics.x"}`, []accumUpdate{{8, 4}}, false},
		{"escaped name", `{"ID":5,"Name":"a \"quoted\" metric","Update":3,"Value":3}`, []accumUpdate{{5, 3}}, false},
		{"not an integer", `{"ID":5,"Name":"rows","Update":"n/a"},{"ID":6,"Name":"rows","Update":1.5},{"ID":7,"Name":"rows","Update":{"a":[1]}}`, nil, false},
		{"no update", `{"ID":5,"Name":"rows","Value":3}`, nil, false},
		{"nested rest", `{"ID":5,"Name":"rows","Update":2,"Metadata":{"k":["}",{"x":"]"}]}},{"ID":6,"Name":"b","Update":-3}`, []accumUpdate{{5, 2}, {6, -3}}, false},
		{"duplicate key after the three", `{"ID":5,"Name":"rows","Update":2,"Update":3}`, []accumUpdate{{5, 2}}, false},
		{name: "big id", accums: `{"ID":123456789012345678901,"Name":"rows","Update":2}`, handOver: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := []byte(`{"Event":"SparkListenerTaskEnd","Stage ID":1,"Stage Attempt ID":0,"Task Type":"ResultTask",` +
				`"Task End Reason":{"Reason":"Success"},"Task Info":{"Task ID":3,"Index":0,"Attempt":0,"Launch Time":1,` +
				`"Executor ID":"1","Host":"h","Finish Time":2,"Failed":false,"Killed":false,"Accumulables":[` + tc.accums + `]}}`)
			want, _, wok := fullParse(line)
			got, _, ok := scanTaskEvent(line, nil)
			if tc.handOver {
				if ok {
					t.Fatalf("the scanner read %+v, want it to give the line to fastjson", got.accums)
				}
				return
			}
			if !wok {
				if ok {
					t.Fatalf("the scanner read a line fastjson rejects: %+v", got.accums)
				}
				return
			}
			if !reflect.DeepEqual(want.accums, tc.want) {
				t.Fatalf("fastjson's updates %v, the test expects %v", want.accums, tc.want)
			}
			if ok && !reflect.DeepEqual(got, want) {
				t.Errorf("scanner: %+v\nfastjson: %+v", got.accums, want.accums)
			}
		})
	}
}
