package server

import (
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
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
	tasksOf := func(app string) map[int64]*spark.Task {
		if app == "app-1" {
			return tasks
		}
		return nil
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
		req := narrowToStage(newRequest(c.ms, "", c.from, c.until), tasksOf)
		if req.filter.From != c.wantFrom || req.filter.Until != c.wantTil || req.query.From != c.wantFrom || req.query.Until != c.wantTil {
			t.Errorf("%s: range %d–%d (query %d–%d), want %d–%d", c.name, req.filter.From, req.filter.Until, req.query.From, req.query.Until, c.wantFrom, c.wantTil)
		}
	}
}
