package query

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// newTestApps returns an empty app store, closed when t ends.
func newTestApps(t *testing.T) *appstore.Store {
	t.Helper()
	apps, err := appstore.Open(t.TempDir(), analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { apps.Close() })
	return apps
}

// newTestEngine returns the corpus's dump2 recording, for synth.Upload to
// make uploads of, and an engine over a new store opened with opts.
func newTestEngine(t *testing.T, opts store.Options) (*profile.Profile, *store.DB, *Engine) {
	t.Helper()
	db := synth.Store(t, opts)
	return synth.Base(t), db, NewEngine(Config{Store: db, Apps: newTestApps(t)})
}

// compactUploads stores windows windows of execs executors' uploads of
// base (synth.Upload) in db and compacts them.
func compactUploads(t *testing.T, db *store.DB, base *profile.Profile, windows, execs int) {
	t.Helper()
	for w := range windows {
		for e := range execs {
			if err := db.Append("", synth.Upload(base, synth.Start, e, w, windows)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
}

// A query of one stage of an app with a task model reads only the time
// its tasks ran, widened by attribution.WindowSlack; other queries keep their range.
func TestNarrowToStage(t *testing.T) {
	const ms = int64(time.Millisecond)
	tasks := map[int64]*spark.Task{
		1: {ID: 1, StageID: 3, LaunchMs: 10_000, FinishMs: 12_000},
		2: {ID: 2, StageID: 3, LaunchMs: 11_000, FinishMs: 15_000},
		3: {ID: 3, StageID: 4, LaunchMs: 20_000, FinishMs: 21_000},
		4: {ID: 4, StageID: 5, LaunchMs: 30_000}, // running
	}
	apps := newTestApps(t)
	apps.Put("", &analysis.Report{App: spark.Summary{ID: "app-1"}, Tasks: slices.Collect(maps.Values(tasks))})
	windowOf := func(app string, stage int) (int64, int64, bool) { return apps.StageWindow("", app, stage) }
	m := func(name string, op profile.MatchOp, value string) profile.Matcher {
		mt, err := profile.NewMatcher(name, op, value)
		if err != nil {
			t.Fatal(err)
		}
		return mt
	}
	app := m(profile.LabelAppID, profile.MatchEqual, "app-1")
	for _, c := range []struct {
		name              string
		ms                []profile.Matcher
		from, until       int64
		wantFrom, wantTil int64
	}{
		{"stage 3", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "3")}, 0, 0, 10_000*ms - attribution.WindowSlack, 15_000*ms + attribution.WindowSlack + 1},
		{"stage 3 in a narrower range", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "3")}, 11_000 * ms, 13_000 * ms, 11_000 * ms, 13_000 * ms},
		{"a running stage", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "5")}, 0, 0, 30_000*ms - attribution.WindowSlack, 0},
		{"a stage with no tasks", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "9")}, 0, 0, 0, 0},
		{"stages by regexp", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchRegexp, "3|4")}, 0, 0, 0, 0},
		{"no app", []profile.Matcher{m(profile.LabelStageID, profile.MatchEqual, "3")}, 0, 0, 0, 0},
		{"an app without a model", []profile.Matcher{m(profile.LabelAppID, profile.MatchEqual, "app-2"), m(profile.LabelStageID, profile.MatchEqual, "3")}, 5, 0, 5, 0},
	} {
		req := narrowToStage(NewRequest(c.ms, "", c.from, c.until), windowOf)
		if req.Filter.From != c.wantFrom || req.Filter.Until != c.wantTil || req.Query.From != c.wantFrom || req.Query.Until != c.wantTil {
			t.Errorf("%s: range %d–%d (query %d–%d), want %d–%d", c.name, req.Filter.From, req.Filter.Until, req.Query.From, req.Query.Until, c.wantFrom, c.wantTil)
		}
	}
}

// eachUpload reads each upload ahead of add, on another goroutine, yet add
// sees them in the store's order; an error from add stops the reading with
// at most one upload read ahead, and an error or a panic in reading ends
// the walk with an error.
func TestEachUploadReadsAhead(t *testing.T) {
	base, db, s := newTestEngine(t, store.Options{})
	const n = 6
	var order []uint64
	for w := range n {
		u := synth.Upload(base, synth.Start, 0, w, n)
		if err := db.Append("", u); err != nil {
			t.Fatal(err)
		}
		order = append(order, u.ID)
	}
	req := NewRequest(nil, "", 0, 0)
	var reads atomic.Int32
	load := func(fail int32, panics bool) sourceFunc {
		return func(u *store.Upload, _ Request, _ attribution.TasksOf) (*profile.Profile, error) {
			switch reads.Add(1) {
			case fail:
				if panics {
					panic("a damaged block")
				}
				return nil, errors.New("cannot read")
			}
			return u.Load()
		}
	}
	var seen []uint64
	err := s.eachUpload(t.Context(), "", req, load(0, false), func(u *store.Upload, _ *profile.Profile, _ func(*profile.Sample) bool) error {
		seen = append(seen, u.ID)
		return nil
	})
	if err != nil || !slices.Equal(seen, order) {
		t.Fatalf("added %v (%v), want %v", seen, err, order)
	}

	reads.Store(0)
	stop := errors.New("enough")
	err = s.eachUpload(t.Context(), "", req, load(0, false), func(*store.Upload, *profile.Profile, func(*profile.Sample) bool) error { return stop })
	if err != stop || reads.Load() > 2 {
		t.Errorf("add failing at once: %v after %d reads, want %v after at most 2", err, reads.Load(), stop)
	}
	for _, panics := range []bool{false, true} {
		reads.Store(0)
		added := 0
		err = s.eachUpload(t.Context(), "", req, load(3, panics), func(*store.Upload, *profile.Profile, func(*profile.Sample) bool) error {
			added++
			return nil
		})
		if err == nil || added != 2 {
			t.Errorf("reading the third upload failing (panic %v): %v after %d added, want an error after 2", panics, err, added)
		}
	}
	// The client going away after the second upload stops the reading.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	added := 0
	err = s.eachUpload(ctx, "", req, load(0, false), func(*store.Upload, *profile.Profile, func(*profile.Sample) bool) error {
		if added++; added == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || added > 3 {
		t.Errorf("the client going away: %v after %d added, want %v after at most 3", err, added, context.Canceled)
	}
}

// The samples of a block cut into time slices are read and added a slice
// at a time, and add the same as the block's rollup does.
func TestSlicedBlockReadBySlice(t *testing.T) {
	base, db, s := newTestEngine(t, store.Options{}) // one block of two minutes, in one-minute slices
	compactUploads(t, db, base, 12, 8)
	var block *store.Upload
	db.Select("", store.Query{}, func(u *store.Upload) error { block = u; return nil })
	if block == nil || len(block.Slices()) < 2 {
		t.Fatalf("want one block cut into time slices, got %+v", block)
	}
	// A task id, which the rollups drop, needs the samples.
	ms, _, err := ParseSelector(`{spark_app_id="app-bench",spark_task_id=~".*"}`)
	if err != nil {
		t.Fatal(err)
	}
	var adds int
	err = s.eachUpload(t.Context(), "", NewRequest(ms, "", 0, 0), source, func(u *store.Upload, p *profile.Profile, _ func(*profile.Sample) bool) error {
		if u != block || len(p.Samples) == 0 {
			t.Errorf("add %d: %d samples of %p, want a slice's samples of the block %p", adds, len(p.Samples), u, block)
		}
		adds++
		return nil
	})
	if err != nil || adds != len(block.Slices()) {
		t.Errorf("%d adds (%v), want one per slice, %d", adds, err, len(block.Slices()))
	}
	ticks := func(sel string) int64 {
		t.Helper()
		ms, _, err := ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		tree, _, _, err := s.Tree(t.Context(), "", NewRequest(ms, "wall", 0, 0), 0)
		if err != nil {
			t.Fatalf("tree of %s: %v", sel, err)
		}
		return tree.Root.Total
	}
	if rollup, samples := ticks(`{spark_app_id="app-bench"}`), ticks(`{spark_app_id="app-bench",spark_task_id=~".*"}`); rollup == 0 || samples != rollup {
		t.Errorf("the slices' samples hold %d, the rollup %d", samples, rollup)
	}
}

// A flame graph of some threads of a compacted block, or a merge keeping
// threads and no per-task label, is read from the block's thread rollup
// and equals the one its samples make; a merge keeping task labels, or a
// matcher on one, reads the samples.
func TestThreadRollupServes(t *testing.T) {
	base, db, s := newTestEngine(t, store.Options{})
	compactUploads(t, db, base, 4, 3)
	var block *store.Upload
	db.Select("", store.Query{}, func(u *store.Upload) error { block = u; return nil })
	samples, err := block.Load()
	if err != nil {
		t.Fatal(err)
	}
	thread := base.Threads[1].Name
	for _, c := range []struct {
		sel        string
		keep       LabelsKept
		fromRollup bool
	}{
		{`{thread_name="` + thread + `"}`, KeepNone, true},
		{`{thread_name=~".*-[12]"}`, KeepCoarse, true},
		{`{spark_executor_id="1"}`, KeepPage, true},
		{`{thread_name="` + thread + `"}`, KeepAll, false},
		{`{thread_name="` + thread + `",spark_task_id=~".+"}`, KeepNone, false},
	} {
		ms, _, err := ParseSelector(c.sel)
		if err != nil {
			t.Fatal(err)
		}
		req := NewRequest(ms, "", 0, 0)
		req.Keep = c.keep
		p, err := source(block, req, func(string, string) map[int64]*spark.Task { return nil })
		switch {
		case err != nil:
			t.Fatalf("%s, keep %d: %v", c.sel, c.keep, err)
		case !c.fromRollup && p != nil:
			t.Errorf("%s, keep %d: read a rollup of %d samples, want the samples", c.sel, c.keep, len(p.Samples))
		case c.fromRollup && (p == nil || len(p.Threads) == 0 || len(p.Samples) >= len(samples.Samples)):
			t.Errorf("%s, keep %d: want the thread rollup, got %v", c.sel, c.keep, p)
		}
		got, err := s.Merge(t.Context(), "", req)
		if err != nil {
			t.Fatal(err)
		}
		// The same merge of the samples: a matcher every sample passes on
		// a label the rollups drop.
		all, _ := profile.NewMatcher(profile.LabelTaskID, profile.MatchRegexp, ".*")
		sreq := NewRequest(append(ms, all), "", 0, 0)
		sreq.Keep = c.keep
		want, err := s.Merge(t.Context(), "", sreq)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := mergeRows(got), mergeRows(want); len(w) == 0 || !maps.Equal(g, w) {
			t.Errorf("%s, keep %d: %d rows, the samples' merge %d; they differ", c.sel, c.keep, len(g), len(w))
		}
	}
}

// mergeRows sums a merge's samples by stack (its frames), labels, type,
// state and thread name.
func mergeRows(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		var b strings.Builder
		for _, f := range p.Stack(s.Stack, buf[:0]) {
			b.WriteString(p.Frames[f].Name)
			b.WriteByte(';')
		}
		thread := ""
		if s.Thread != profile.NoThread {
			thread = p.Threads[s.Thread].Name
		}
		fmt.Fprintf(&b, "|%v|%s|%d|%s|%d", p.SampleLabels(s), p.Types[s.Type].Name, s.State, thread, s.Time)
		out[b.String()] += s.Value
	}
	return out
}
