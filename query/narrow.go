package query

import (
	"slices"
	"strconv"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/profile"
)

// storedMatchers returns the matchers of ms that every sample they select
// satisfies by its stored labels (store.Query.SampleMatchers): not those
// on attribution.JoinedLabels, which the join to task windows may give a sample, nor
// on thread_name, which also matches the name of a sample's thread.
func storedMatchers(ms []profile.Matcher) []profile.Matcher {
	return slices.DeleteFunc(slices.Clone(ms), func(m profile.Matcher) bool {
		return m.Name == profile.LabelThreadName || slices.Contains(attribution.JoinedLabels, m.Name)
	})
}

// narrowRange narrows the range from–until (Unix ns, 0 open) to lo–hi.
func narrowRange(from, until, lo, hi int64) (int64, int64) {
	if lo > 0 && (from == 0 || lo > from) {
		from = lo
	}
	if hi > 0 && (until == 0 || hi < until) {
		until = hi
	}
	return from, until
}

// narrowToStage narrows req's range to the time the tasks of the stage it
// selects ran, when it names one app and one stage (equal matchers) and
// the app's task model is known (windowOf, as appstore.Store.StageWindow): the join
// to task windows takes the stage's labels off samples outside its tasks'
// windows, so the rest of the range holds none of the stage's samples,
// and a narrower range reads fewer blocks and time slices.
func narrowToStage(req Request, windowOf func(app string, stage int) (from, until int64, ok bool)) Request {
	var app string
	stage := -1
	for _, m := range req.Filter.Labels {
		switch {
		case m.Op != profile.MatchEqual:
		case m.Name == profile.LabelAppID:
			app = m.Value
		case m.Name == profile.LabelStageID:
			if n, err := strconv.Atoi(m.Value); err == nil {
				stage = n
			}
		}
	}
	if app == "" || stage < 0 {
		return req
	}
	lo, hi, ok := windowOf(app, stage)
	if !ok {
		return req
	}
	req.Filter.From, req.Filter.Until = narrowRange(req.Filter.From, req.Filter.Until, lo, hi)
	req.Query.From, req.Query.Until = req.Filter.From, req.Filter.Until
	return req
}
