package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// A stage the join to task windows gives samples is found even when the
// stored stage ids are too many to list and the block's bounds of them
// leave it out: stage matchers do not skip blocks.
func TestJoinedStageNotSkipped(t *testing.T) {
	base, db, s := testServer(t, store.Options{Partition: time.Hour}) // one block
	start := synth.Start
	const windows = 80 // stages, more than a block meta lists
	tasks := map[int64]*spark.Task{}
	for w := range windows {
		u := synth.Upload(base, start, 0, w, windows)
		p := u.Profile
		for i, smp := range p.Samples {
			p.Samples[i].Labels = p.AddLabels(p.LabelSet(smp.Labels).Merge(profile.Labels{{Name: profile.LabelStageID, Value: strconv.Itoa(w)}}))
		}
		if err := db.Append("", u); err != nil {
			t.Fatal(err)
		}
		launch := (start + int64(w)*int64(10*time.Second)) / 1e6
		for i := range len(base.Threads) {
			id := int64(w*synth.Executors*len(base.Threads) + i)
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
	s.apps.Put("", &analysis.Report{App: spark.Summary{ID: "app-bench"}, Tasks: slices.Collect(maps.Values(tasks))})
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
			if err := db.Append("", synth.Upload(base, synth.Start, e, w, windows)); err != nil {
				t.Fatal(err)
			}
			launch := (synth.Start + int64(w)*int64(10*time.Second)) / 1e6
			for i := range len(base.Threads) {
				id := int64((w*synth.Executors+e)*len(base.Threads) + i)
				// Tasks end early by up to 3.5 s: their threads' later
				// samples are no task's.
				tk := &spark.Task{ID: id, StageID: 1, ExecutorID: strconv.Itoa(e), LaunchMs: launch, FinishMs: launch + 10_000 - id%8*500}
				tasks = append(tasks, tk)
				byID[id] = tk
			}
		}
	}
	s.apps.Put("", &analysis.Report{App: spark.Summary{ID: "app-bench"}, Tasks: tasks})
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
