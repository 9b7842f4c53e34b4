package english

import (
	"fmt"
	"math"
	"time"
)

// durationUnits are the units Duration writes, largest first: one decimal
// from seconds up, whole numbers below.
var durationUnits = []struct {
	d      time.Duration
	suffix string
	whole  bool
}{
	{time.Hour, "h", false},
	{time.Minute, "min", false},
	{time.Second, "s", false},
	{time.Millisecond, "ms", true},
	{time.Microsecond, "µs", true},
	{time.Nanosecond, "ns", true},
}

// Duration writes d for people in the largest unit it reaches: with one
// decimal from seconds up ("1.5 h", "3.4 min", "12.0 s"), whole below
// ("250 ms", "12 µs", "0 ns").
func Duration(d time.Duration) string { return duration(int64(d), time.Nanosecond) }

// Millis writes ms milliseconds as Duration does, "0 ms" for none.
func Millis(ms int64) string { return duration(ms, time.Millisecond) }

// duration writes n times unit, unit one of durationUnits.
func duration(n int64, unit time.Duration) string {
	if n < 0 && n != math.MinInt64 {
		return "-" + duration(-n, unit)
	}
	for _, u := range durationUnits {
		per := int64(u.d / unit) // how many of unit make one u
		if n < per && u.d > unit {
			continue
		}
		if u.whole {
			return fmt.Sprintf("%d %s", n/per, u.suffix)
		}
		return fmt.Sprintf("%.1f %s", float64(n)/float64(per), u.suffix)
	}
	return fmt.Sprintf("%d × %v", n, unit)
}

// Bytes writes n bytes for people in the largest binary unit it reaches,
// with one decimal ("96.3 MiB", "1.0 GiB"), or whole bytes below a KiB
// ("512 B").
func Bytes(n int64) string {
	switch {
	case n < 0 && n != math.MinInt64:
		return "-" + Bytes(-n)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
