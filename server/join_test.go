package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// A query of one stage of an app with a task model reads only the time
// its tasks ran, widened by windowSlack; other queries keep their range.
func TestNarrowToStage(t *testing.T) {
	const ms = int64(time.Millisecond)
	tasks := map[int64]*spark.Task{
		1: {ID: 1, StageID: 3, LaunchMs: 10_000, FinishMs: 12_000},
		2: {ID: 2, StageID: 3, LaunchMs: 11_000, FinishMs: 15_000},
		3: {ID: 3, StageID: 4, LaunchMs: 20_000, FinishMs: 21_000},
		4: {ID: 4, StageID: 5, LaunchMs: 30_000}, // running
	}
	known := &analysedApp{tasks: tasks}
	windowOf := func(app string, stage int) (int64, int64, bool) {
		if app == "app-1" {
			return known.stageWindow(stage)
		}
		return 0, 0, false
	}
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
		{"stage 3", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "3")}, 0, 0, 10_000*ms - windowSlack, 15_000*ms + windowSlack + 1},
		{"stage 3 in a narrower range", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "3")}, 11_000 * ms, 13_000 * ms, 11_000 * ms, 13_000 * ms},
		{"a running stage", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "5")}, 0, 0, 30_000*ms - windowSlack, 0},
		{"a stage with no tasks", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchEqual, "9")}, 0, 0, 0, 0},
		{"stages by regexp", []profile.Matcher{app, m(profile.LabelStageID, profile.MatchRegexp, "3|4")}, 0, 0, 0, 0},
		{"no app", []profile.Matcher{m(profile.LabelStageID, profile.MatchEqual, "3")}, 0, 0, 0, 0},
		{"an app without a model", []profile.Matcher{m(profile.LabelAppID, profile.MatchEqual, "app-2"), m(profile.LabelStageID, profile.MatchEqual, "3")}, 5, 0, 5, 0},
	} {
		req := narrowToStage(newRequest(c.ms, "", c.from, c.until), windowOf)
		if req.filter.From != c.wantFrom || req.filter.Until != c.wantTil || req.query.From != c.wantFrom || req.query.Until != c.wantTil {
			t.Errorf("%s: range %d–%d (query %d–%d), want %d–%d", c.name, req.filter.From, req.filter.Until, req.query.From, req.query.Until, c.wantFrom, c.wantTil)
		}
	}
}

// A stage the join to task windows gives samples is found even when the
// stored stage ids are too many to list and the block's bounds of them
// leave it out: stage matchers do not skip blocks.
func TestJoinedStageNotSkipped(t *testing.T) {
	base, db, s := testServer(t, store.Options{Partition: time.Hour}) // one block
	start := testStart
	const windows = 80 // stages, more than a block meta lists
	tasks := map[int64]*spark.Task{}
	for w := range windows {
		u := benchUpload(base, start, 0, w, windows)
		p := u.Profile
		for i, smp := range p.Samples {
			p.Samples[i].Labels = p.AddLabels(p.LabelSet(smp.Labels).Merge(profile.Labels{{Name: profile.LabelStageID, Value: strconv.Itoa(w)}}))
		}
		if err := db.Append("", u); err != nil {
			t.Fatal(err)
		}
		launch := (start + int64(w)*int64(10*time.Second)) / 1e6
		for i := range len(base.Threads) {
			id := int64(w*benchExecutors*len(base.Threads) + i)
			tasks[id] = &spark.Task{ID: id, StageID: 100 + w, ExecutorID: "0", LaunchMs: launch, FinishMs: launch + 10_000}
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Blocks != 1 || st.HeadUploads != 0 {
		t.Fatalf("%d blocks and %d uploads in the head, want one block", st.Blocks, st.HeadUploads)
	}
	ticks := func(stage int) int64 {
		t.Helper()
		var r renderResponse
		q := url.QueryEscape(fmt.Sprintf(`{spark_app_id="app-bench",spark_stage_id="%d"}`, stage))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/render?type=wall&query="+q, nil))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &r) != nil {
			t.Fatalf("stage %d: %d %s", stage, w.Code, w.Body)
		}
		return r.Flamebearer.NumTicks
	}
	stored := ticks(5)
	if stored == 0 {
		t.Fatal("stage 5 holds no wall time")
	}
	s.apps.by[""] = map[string]*analysedApp{"app-bench": {tasks: tasks}}
	if got := ticks(105); got != stored {
		t.Errorf("joined stage 105 holds %d, stored stage 5 held %d", got, stored)
	}
	if got := ticks(5); got != 0 {
		t.Errorf("stage 5 still holds %d once its tasks are known to be stage 105's", got)
	}
}

// Slow-vs-rest, which reads the stage's tasks once and splits them, answers
// as the diff of the two selections does, with the join to task windows
// moving samples out of their task, before and after compaction.
func TestSlowVsRestMatchesDiff(t *testing.T) {
	base, db, s := testServer(t, store.Options{})
	const windows, execs = 4, 2
	var tasks []*spark.Task
	byID := map[int64]*spark.Task{}
	for w := range windows {
		for e := range execs {
			if err := db.Append("", benchUpload(base, testStart, e, w, windows)); err != nil {
				t.Fatal(err)
			}
			launch := (testStart + int64(w)*int64(10*time.Second)) / 1e6
			for i := range len(base.Threads) {
				id := int64((w*benchExecutors+e)*len(base.Threads) + i)
				// Tasks end early by up to 3.5 s: their threads' later
				// samples are no task's.
				tk := &spark.Task{ID: id, StageID: 1, ExecutorID: strconv.Itoa(e), LaunchMs: launch, FinishMs: launch + 10_000 - id%8*500}
				tasks = append(tasks, tk)
				byID[id] = tk
			}
		}
	}
	s.apps.by[""] = map[string]*analysedApp{"app-bench": {report: &analysis.Report{App: spark.Summary{ID: "app-bench"}, Tasks: tasks}, tasks: byID}}
	type diff struct {
		Flamebearer           json.RawMessage
		LeftTicks, RightTicks int64
		SlowTaskIDs           []int64
	}
	get := func(path string, v any) {
		t.Helper()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), v) != nil {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
	}
	check := func(when string) {
		var got, want diff
		get("/api/v1/apps/app-bench/stages/1/slow-vs-rest?percent=25&type=wall", &got)
		slow := map[int64]bool{}
		var slowIDs, restIDs []string
		for _, id := range got.SlowTaskIDs {
			slow[id] = true
		}
		for _, tk := range tasks {
			if slow[tk.ID] {
				slowIDs = append(slowIDs, strconv.FormatInt(tk.ID, 10))
			} else {
				restIDs = append(restIDs, strconv.FormatInt(tk.ID, 10))
			}
		}
		sel := func(ids []string) string {
			return url.QueryEscape(fmt.Sprintf(`{spark_app_id="app-bench", spark_task_id=~"%s"}`, strings.Join(ids, "|")))
		}
		get("/api/v1/diff?type=wall&base="+sel(restIDs)+"&next="+sel(slowIDs), &want)
		if len(got.SlowTaskIDs) != len(tasks)/4 || got.LeftTicks == 0 || got.RightTicks == 0 {
			t.Fatalf("%s: %d slow tasks of %d, %d + %d ticks", when, len(got.SlowTaskIDs), len(tasks), got.LeftTicks, got.RightTicks)
		}
		if got.LeftTicks != want.LeftTicks || got.RightTicks != want.RightTicks || !bytes.Equal(got.Flamebearer, want.Flamebearer) {
			t.Errorf("%s: slow-vs-rest %d against %d ticks, the diff of its selections %d against %d; flame graphs equal: %v",
				when, got.RightTicks, got.LeftTicks, want.RightTicks, want.LeftTicks, bytes.Equal(got.Flamebearer, want.Flamebearer))
		}
	}
	check("head")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("block")
}

// The join to task windows gives a sample taken while its task ran the
// task's stage, stage attempt and partition in place of any it had, and
// takes its task's labels off one taken after: each result a normalised
// set, one label per name.
func TestTaskJoinerLabels(t *testing.T) {
	const ms = int64(time.Millisecond)
	p := profile.New()
	own := p.AddLabels(profile.Labels{
		{Name: profile.LabelAppID, Value: "app-1"}, {Name: profile.LabelExecutorID, Value: "2"},
		{Name: profile.LabelPartition, Value: "99"}, {Name: profile.LabelStageID, Value: "5"}, {Name: profile.LabelTaskID, Value: "7"},
	})
	task := &spark.Task{ID: 7, StageID: 3, StageAttempt: 1, Partition: 12, LaunchMs: 10_000, FinishMs: 12_000}
	join := taskJoiner(p, func(app string) map[int64]*spark.Task {
		if app == "app-1" {
			return map[int64]*spark.Task{7: task}
		}
		return nil
	})
	for _, c := range []struct {
		name string
		time int64
		want string
	}{
		{"inside", 11_000 * ms, `{spark_app_id="app-1", spark_executor_id="2", spark_partition="12", spark_stage_attempt="1", spark_stage_id="3", spark_task_id="7"}`},
		{"after", 20_000 * ms, `{spark_app_id="app-1", spark_executor_id="2"}`},
	} {
		s := profile.Sample{Labels: own, Time: c.time}
		join(&s)
		got := p.LabelSet(s.Labels)
		if got.String() != c.want || !slices.IsSortedFunc(got, func(a, b profile.Label) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("%s: %v, want %s", c.name, got, c.want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Name == got[i-1].Name {
				t.Errorf("%s: %s twice", c.name, got[i].Name)
			}
		}
	}
}

// eachUpload reads each upload ahead of add, on another goroutine, yet add
// sees them in the store's order; an error from add stops the reading with
// at most one upload read ahead, and an error or a panic in reading ends
// the walk with an error.
func TestEachUploadReadsAhead(t *testing.T) {
	base, db, s := testServer(t, store.Options{})
	const n = 6
	var order []uint64
	for w := range n {
		u := benchUpload(base, testStart, 0, w, n)
		if err := db.Append("", u); err != nil {
			t.Fatal(err)
		}
		order = append(order, u.ID)
	}
	req := newRequest(nil, "", 0, 0)
	var reads atomic.Int32
	load := func(fail int32, panics bool) sourceFunc {
		return func(u *store.Upload, _ request, _ func(string) map[int64]*spark.Task) (*profile.Profile, error) {
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
	base, db, s := testServer(t, store.Options{}) // one block of two minutes, in one-minute slices
	const windows = 12
	for w := range windows {
		for e := range 8 {
			if err := db.Append("", benchUpload(base, testStart, e, w, windows)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	var block *store.Upload
	db.Select("", store.Query{}, func(u *store.Upload) error { block = u; return nil })
	if block == nil || len(block.Slices()) < 2 {
		t.Fatalf("want one block cut into time slices, got %+v", block)
	}
	// A thread name, which the rollup drops, needs the samples.
	ms, _, err := parseSelector(`{spark_app_id="app-bench",thread_name=~".*"}`)
	if err != nil {
		t.Fatal(err)
	}
	var adds int
	err = s.eachUpload(t.Context(), "", newRequest(ms, "", 0, 0), source, func(u *store.Upload, p *profile.Profile, _ func(*profile.Sample) bool) error {
		if u != block || len(p.Samples) == 0 {
			t.Errorf("add %d: %d samples of %p, want a slice's samples of the block %p", adds, len(p.Samples), u, block)
		}
		adds++
		return nil
	})
	if err != nil || adds != len(block.Slices()) {
		t.Errorf("%d adds (%v), want one per slice, %d", adds, err, len(block.Slices()))
	}
	ticks := func(query string) int64 {
		t.Helper()
		var r renderResponse
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/render?type=wall&query="+url.QueryEscape(query), nil))
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &r) != nil {
			t.Fatalf("render %s: %d %s", query, w.Code, w.Body)
		}
		return r.Flamebearer.NumTicks
	}
	if rollup, samples := ticks(`{spark_app_id="app-bench"}`), ticks(`{spark_app_id="app-bench",thread_name=~".*"}`); rollup == 0 || samples != rollup {
		t.Errorf("the slices' samples hold %d, the rollup %d", samples, rollup)
	}
}
