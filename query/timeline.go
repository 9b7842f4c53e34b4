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
// for samples without it. It lays out at most MaxSteps steps: a longer
// span (samples dated centuries apart by a damaged recording) widens the
// step.
func NewTimeline(series []StepSeries, from, until int64, step time.Duration, grouped bool) (Timeline, map[string]Timeline) {
	// In milliseconds, the points' unit: nanoseconds overflow for times
	// past the year 2262.
	lo, hi := from/1e6, (until-1)/1e6
	known := from != 0
	for _, ss := range series {
		if len(ss.Points) == 0 {
			continue
		}
		if from == 0 && (!known || ss.Points[0][0] < lo) {
			lo, known = ss.Points[0][0], true
		}
		if until == 0 {
			hi = max(hi, ss.Points[len(ss.Points)-1][0])
		}
	}
	groups := map[string]Timeline{}
	stepMs := max(step.Milliseconds(), 1000)
	if !known || hi < lo {
		return Timeline{DurationDelta: stepMs / 1000, Samples: []int64{}}, groups
	}
	// The span as unsigned: hi - lo overflows int64 for times of any sign.
	if span := uint64(hi) - uint64(lo); span/uint64(stepMs) >= MaxSteps {
		stepMs = int64((span/(MaxSteps-1)+999)/1000) * 1000
	}
	first := lo - mod(lo, stepMs)
	steps := int((uint64(hi)-uint64(first))/uint64(stepMs)) + 1
	tl := Timeline{StartTime: first / 1000, DurationDelta: stepMs / 1000, Samples: make([]int64, steps)}
	for _, ss := range series {
		g := Timeline{StartTime: tl.StartTime, DurationDelta: tl.DurationDelta, Samples: make([]int64, steps)}
		for _, pt := range ss.Points {
			if at := pt[0]; at >= first && at <= hi {
				i := (uint64(at) - uint64(first)) / uint64(stepMs)
				g.Samples[i] += pt[1]
				tl.Samples[i] += pt[1]
			}
		}
		if grouped {
			groups[cmp.Or(ss.Labels[0], "*")] = g
		}
	}
	return tl, groups
}

// mod is a modulo m (> 0) of the sign of m: a time before 1970 rounds
// down to its step as one after does.
func mod(a, m int64) int64 { return ((a % m) + m) % m }
