package query

import (
	"testing"
	"time"
)

// A point is stamped at the start of its step, steps counted from the
// epoch, or with stepEnds at the end of its step, steps counted from the
// request's start, as Pyroscope stamps them.
func TestStamp(t *testing.T) {
	const s = int64(time.Second)
	for _, c := range []struct {
		step     time.Duration
		origin   int64
		stepEnds bool
		at, want int64
	}{
		{10 * time.Second, 0, false, 25 * s, 20 * s},
		{10 * time.Second, 0, false, 30 * s, 30 * s},
		{10 * time.Second, 3 * s, true, 3 * s, 13 * s},
		{10 * time.Second, 3 * s, true, 12*s + 999, 13 * s},
		{10 * time.Second, 3 * s, true, 13 * s, 23 * s},
		{10 * time.Second, 3 * s, true, 2 * s, 3 * s}, // before the origin: the step before it
		{time.Hour, 1000 * s, true, 1500 * s, 4600 * s},
		{AllTime, 1000 * s, true, 1500 * s, 0},
	} {
		sm := summer{step: c.step, origin: c.origin, stepEnds: c.stepEnds}
		if got := sm.stamp(c.at); got != c.want {
			t.Errorf("step %v from %d, ends %v: a sample at %d is stamped %d, want %d", c.step, c.origin, c.stepEnds, c.at, got, c.want)
		}
	}
}
