package query

import (
	"maps"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// A flame graph and a time series of compacted blocks read through their
// cached sums equal the ones their rollups, timelines and samples make,
// first and again; requests the sums cannot answer (a range cutting a
// block, a matcher on a stage, task or thread name) do not use them.
func TestBlockSums(t *testing.T) {
	base, db, plain := newTestEngine(t, store.Options{})
	compactUploads(t, db, base, 4, 3)
	cached := NewEngine(Config{Store: db, Apps: newTestApps(t), SumsCacheBytes: 64 << 20})
	thread := base.Threads[1].Name
	for _, c := range []struct {
		name  string
		sel   string
		focus string
		cut   bool // the range cuts the blocks
		// flame and series: the flame graph and the series are read from
		// the blocks' sums.
		flame, series bool
	}{
		{"the whole app", `{}`, "", false, true, true},
		{"an executor", `{spark_executor_id="1"}`, "", false, true, true},
		{"not an executor", `{spark_executor_id!="1"}`, "", false, true, true},
		{"a thread's name", `{thread_name="` + thread + `"}`, "", false, false, false},
		{"frames in focus", `{}`, "java", false, true, false},
		{"a stage", `{spark_stage_id=~".+"}`, "", false, false, false},
		{"a task", `{spark_task_id=~".+"}`, "", false, false, false},
		// The timeline's rows keep their times: the range cuts them.
		{"a range cutting the blocks", `{}`, "", true, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms, _, err := ParseSelector(c.sel)
			if err != nil {
				t.Fatal(err)
			}
			var from, until int64
			if c.cut {
				from, until = synth.Start+int64(15e9), synth.Start+int64(25e9)
			}
			req := NewRequest(ms, "", from, until)
			req.Keep = KeepNone
			if c.focus != "" {
				req.Filter.Focus = regexp.MustCompile(c.focus)
			}
			want, err := plain.Merge(t.Context(), "", req)
			if err != nil {
				t.Fatal(err)
			}
			cached.sums.c.InvalidateAll()
			for round := range 2 {
				got, err := cached.Merge(t.Context(), "", req)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := mergeRows(got), mergeRows(want); len(w) == 0 || !maps.Equal(g, w) {
					t.Errorf("flame graph, round %d: %d rows, without the cache %d; they differ", round, len(g), len(w))
				}
				if c.focus != "" {
					continue // a series is summed over stacks
				}
				for _, by := range [][]string{nil, {profile.LabelExecutorID}} {
					o := Sums{Step: time.Second, By: by}
					want, err := plain.Sum(t.Context(), "", req, o)
					if err != nil {
						t.Fatal(err)
					}
					got, err := cached.Sum(t.Context(), "", req, o)
					if err != nil {
						t.Fatal(err)
					}
					if len(want.Series) == 0 || !reflect.DeepEqual(got, want) {
						t.Errorf("series by %v, round %d: %d series, without the cache %d; they differ", by, round, len(got.Series), len(want.Series))
					}
				}
			}
			var flames, series int
			for k := range cached.sums.c.Keys() {
				if k.timeline {
					series++
				} else {
					flames++
				}
			}
			if (flames > 0) != c.flame || (series > 0) != c.series {
				t.Errorf("%d flame graphs and %d timelines summed, want some: %v and %v", flames, series, c.flame, c.series)
			}
		})
	}
}

// The flame graph of a block keeps only the labels its request matches.
func TestBlockFlameLabels(t *testing.T) {
	base, db, _ := newTestEngine(t, store.Options{})
	compactUploads(t, db, base, 1, 3)
	var block *store.Upload
	db.Select("", store.Query{}, func(u *store.Upload) error { block = u; return nil })
	rollup, err := block.LoadRollup()
	if err != nil {
		t.Fatal(err)
	}
	f := newBlockSums(64 << 20)
	ms, _, _ := ParseSelector(`{spark_app_id="app-bench"}`)
	req := NewRequest(ms, "", 0, 0)
	req.Keep = KeepNone
	p, err := f.flameSource(t.Context())(block, req, nil)
	if err != nil || p == nil {
		t.Fatalf("flame graph: %v, %v", p, err)
	}
	if len(p.Samples) >= len(rollup.Samples) || len(p.Threads) > 1 {
		t.Errorf("flame graph of %d rows and %d threads, the rollup %d rows; want fewer rows and no threads", len(p.Samples), len(p.Threads), len(rollup.Samples))
	}
	for _, s := range p.Samples {
		for _, l := range p.LabelSet(s.Labels) {
			if l.Name != profile.LabelAppID {
				t.Fatalf("a sample keeps label %s", l.Name)
			}
		}
	}
}
