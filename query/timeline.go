package query

import (
	"cmp"
	"time"
)

// TimelineStep is the step of a render answer's timeline: 1,500 points
// over the range, as Pyroscope draws it, and no less than 10 s.
func TimelineStep(from, until int64) time.Duration {
	step := 10 * time.Second
	if from != 0 {
		if until == 0 {
			until = time.Now().UnixNano()
		}
		step = max(step, (time.Duration(until-from) / 1500).Truncate(time.Second))
	}
	return step
}

// Timeline is Pyroscope's timeline: values per step from StartTime
// (Unix seconds), zero where there were none.
type Timeline struct {
	StartTime     int64   `json:"startTime"`
	Samples       []int64 `json:"samples"`
	DurationDelta int64   `json:"durationDelta"`
}

// NewTimeline lays out series, sums per step (Sum), over [from,
// until), or, when the range is open, over their points' times. With
// grouped, it also lays out each series, keyed by its label's value, "*"
// for samples without it.
func NewTimeline(series []StepSeries, from, until int64, step time.Duration, grouped bool) (Timeline, map[string]Timeline) {
	lo, hi := from, until-1
	for _, ss := range series {
		if from == 0 && (lo == 0 || ss.Points[0][0]*1e6 < lo) {
			lo = ss.Points[0][0] * 1e6
		}
		if until == 0 {
			hi = max(hi, ss.Points[len(ss.Points)-1][0]*1e6)
		}
	}
	groups := map[string]Timeline{}
	if lo == 0 || hi < lo {
		return Timeline{DurationDelta: int64(step / time.Second), Samples: []int64{}}, groups
	}
	first := lo - lo%int64(step)
	steps := (hi-first)/int64(step) + 1
	tl := Timeline{StartTime: first / 1e9, DurationDelta: int64(step / time.Second), Samples: make([]int64, steps)}
	for _, ss := range series {
		g := Timeline{StartTime: tl.StartTime, DurationDelta: tl.DurationDelta, Samples: make([]int64, steps)}
		for _, pt := range ss.Points {
			if at := pt[0] * 1e6; at >= first && at <= hi {
				g.Samples[(at-first)/int64(step)] += pt[1]
				tl.Samples[(at-first)/int64(step)] += pt[1]
			}
		}
		if grouped {
			groups[cmp.Or(ss.Labels[0], "*")] = g
		}
	}
	return tl, groups
}
