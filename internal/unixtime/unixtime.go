// Package unixtime reads the Unix times of sparkprof's APIs, given in
// seconds, milliseconds, microseconds or nanoseconds.
package unixtime

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Parse reads a non-negative Unix time in s, ms, µs or ns, told apart by
// size, and returns it in ns; "" is 0. A time past what int64 ns hold (the
// year 2262) is an error.
func Parse(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("time %q: want a Unix time in s, ms, µs or ns, a non-negative integer", s)
	}
	unit, name := time.Second, "seconds"
	switch {
	case n > 1e17:
		return n, nil
	case n > 1e14:
		unit, name = time.Microsecond, "microseconds"
	case n > 1e11:
		unit, name = time.Millisecond, "milliseconds"
	}
	if n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("time %q: %s after the year 2262, the last a time in ns holds; want a Unix time in s, ms, µs or ns", s, name)
	}
	return n * int64(unit), nil
}
