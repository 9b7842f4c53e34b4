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
// size, and returns it in ns; "" is 0.
func Parse(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("time %q: want a Unix time in s, ms, µs or ns, a non-negative integer", s)
	}
	switch {
	case n > 1e17:
		return n, nil
	case n > 1e14:
		return n * 1e3, nil
	case n > 1e11:
		return n * 1e6, nil
	case n > math.MaxInt64/int64(time.Second):
		return 0, fmt.Errorf("time %q: seconds after the year 2262; want a Unix time in s, ms, µs or ns", s)
	}
	return n * 1e9, nil
}
