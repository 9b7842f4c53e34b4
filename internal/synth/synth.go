// Package synth makes the uploads of a busy Spark application from a real
// profile, for the tests and benchmarks of the store, the query engine and
// the server: the shape users have, many executors each sending a window
// of many tasks every 10 s. It is test support: only tests import it.
package synth

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/jfr-parser/pprof"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// The shape of the query benchmark: an hour of 10 s uploads from 100
// executors, in ten stages.
const (
	Executors = 100
	Windows   = 360
	Stages    = 10
)

// Start is when the synthetic app's first window starts.
var Start = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()

// Upload makes the upload of executor exec for 10 s window w of windows
// from base: the same stacks, with times moved into the window and each
// thread's samples labelled with a task of its own (TaskID) and the
// window's stage, as an executor running one task per core would send it,
// for app "app-bench" of service "bench".
func Upload(base *profile.Profile, start int64, exec, w, windows int) *store.Upload {
	p := *base
	p.OwnLabelSets()
	from := start + int64(w)*int64(10*time.Second)
	span := max(base.End-base.Start, 1)
	stage := strconv.Itoa(w * Stages / windows)
	sets := make([]profile.LabelSetID, len(base.Threads))
	for i := range sets {
		sets[i] = p.AddLabels(profile.Labels{
			{Name: profile.LabelStageID, Value: stage},
			{Name: profile.LabelTaskID, Value: strconv.FormatInt(TaskID(base, exec, w, i), 10)},
		})
	}
	p.Samples = make([]profile.Sample, len(base.Samples))
	for i, s := range base.Samples {
		s.Time = from + int64(float64(s.Time-base.Start)*float64(10*time.Second)/float64(span))
		s.Labels = sets[s.Thread]
		p.Samples[i] = s
	}
	p.Start, p.End = from, from+int64(10*time.Second)
	return &store.Upload{From: p.Start, Until: p.End, Profile: &p, Labels: profile.Labels{
		{Name: profile.LabelServiceName, Value: "bench"},
		{Name: profile.LabelAppID, Value: "app-bench"},
		{Name: profile.LabelExecutorID, Value: strconv.Itoa(exec)},
		{Name: profile.LabelHost, Value: fmt.Sprintf("node-%02d", exec%20)},
	}}
}

// TaskID is the task Upload gives thread i of executor exec in window w.
func TaskID(base *profile.Profile, exec, w, i int) int64 {
	return int64((w*Executors+exec)*len(base.Threads) + i)
}

// Base returns the corpus recording the tests make their uploads of: the
// async-profiler JFR dump2, its stacks on 8 threads.
func Base(tb testing.TB) *profile.Profile {
	tb.Helper()
	base, err := format.Load(corpus.Path(tb, "jfr", "dump2.jfr.gz"), format.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return base
}

// Store opens a store with opts in a temporary directory, closed when tb
// ends.
func Store(tb testing.TB, opts store.Options) *store.DB {
	tb.Helper()
	db, err := store.Open(tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// DecodedTotal decodes data (with a LabelsSnapshot, gzipped or not, when
// labels is not nil) as the command line does, and returns the total of
// its samples of type family typ: what a store holding it must answer.
func DecodedTotal(tb testing.TB, data, labels []byte, typ string) int64 {
	tb.Helper()
	if labels != nil {
		var err error
		if labels, err = format.Decompress(labels, "labels", 0); err != nil {
			tb.Fatal(err)
		}
	}
	p, err := format.Decode(data, "offline", format.Options{JFRLabels: labels})
	if err != nil {
		tb.Fatal(err)
	}
	for i, ty := range p.Types {
		if ty.Family() == typ {
			return p.Total(profile.TypeID(i))
		}
	}
	return 0
}

// TaskContexts returns a Pyroscope LabelsSnapshot of n task contexts, ids 1
// to n, each with a stage (a hundred tasks each), stage attempt, task and
// partition of its own: what the Pyroscope Java agent sends beside a busy
// executor's window when Spark's task labels are set as its contexts.
func TaskContexts(n int) []byte {
	ls := &pprof.LabelsSnapshot{Contexts: map[int64]*pprof.Context{}, Strings: map[int64]string{}}
	ids := map[string]int64{}
	id := func(s string) int64 {
		if i, ok := ids[s]; ok {
			return i
		}
		i := int64(len(ids) + 1)
		ids[s], ls.Strings[i] = i, s
		return i
	}
	for c := 1; c <= n; c++ {
		ls.Contexts[int64(c)] = &pprof.Context{Labels: map[int64]int64{
			id(profile.LabelStageID): id(strconv.Itoa(c / 100)), id(profile.LabelStageAttempt): id("0"),
			id(profile.LabelTaskID): id(strconv.Itoa(c)), id(profile.LabelPartition): id(strconv.Itoa(c % 100)),
		}}
	}
	b, err := ls.MarshalVT()
	if err != nil {
		panic(err) // a snapshot built here always marshals
	}
	return b
}

// WithTaskContexts returns recording, an async-profiler JFR, with its
// samples' contexts spread over n task contexts in turn, and the
// LabelsSnapshot that names them (TaskContexts).
func WithTaskContexts(recording []byte, n int) (jfrData, labels []byte, err error) {
	jfrData, err = jfr.MapContexts(recording, func(i int, _ uint64) uint64 { return uint64(i%n + 1) })
	if err != nil {
		return nil, nil, err
	}
	return jfrData, TaskContexts(n), nil
}
