// Package duration parses the durations users type in flags and query
// parameters: Go's (1h30m, 90s) and the day-and-longer units of Grafana's
// and Pyroscope's relative times (7d, 2w, 1M, 1y), which Go's lacks.
package duration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// day is 24 hours: a relative time counts whole days, not calendar days.
const day = 24 * time.Hour

// units are the suffixes Go's time.ParseDuration does not know.
var units = []struct {
	suffix string
	d      time.Duration
}{
	{"d", day},
	{"w", 7 * day},
	{"M", 30 * day},
	{"y", 365 * day},
}

// Parse returns the duration s names: a Go duration, or a whole number of
// days (d), weeks (w), months of 30 days (M) or years of 365 days (y). A
// duration past what time.Duration holds (292 years) is an error.
func Parse(s string) (time.Duration, error) {
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseUint(n, 10, 32)
			if err != nil {
				return 0, fmt.Errorf("duration %q: want a whole number before %q, such as 7%s", s, u.suffix, u.suffix)
			}
			if v > uint64(math.MaxInt64/u.d) {
				return 0, fmt.Errorf("duration %q: more than %d%s, the longest a duration holds (292 years)", s, math.MaxInt64/u.d, u.suffix)
			}
			return time.Duration(v) * u.d, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a number and a unit: s, m, h, d, w, M or y (such as 90s, 1h or 7d)", s)
	}
	return d, nil
}
