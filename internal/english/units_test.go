package english

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0 ns"},
		{999, "999 ns"},
		{1500, "1 µs"},
		{12_345_678, "12 ms"},
		{999_999_999, "999 ms"},
		{time.Second, "1.0 s"},
		{1_500_000_000, "1.5 s"},
		{59_960 * time.Millisecond, "60.0 s"},
		{time.Minute, "1.0 min"},
		{90 * time.Minute, "1.5 h"},
		{-1_500_000_000, "-1.5 s"},
		{math.MinInt64, "-9223372036854775808 ns"},
	}
	for _, tt := range tests {
		if got := Duration(tt.d); got != tt.want {
			t.Errorf("Duration(%d) = %q, want %q", int64(tt.d), got, tt.want)
		}
	}
}

func TestMillis(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "0 ms"},
		{47, "47 ms"},
		{999, "999 ms"},
		{1000, "1.0 s"},
		{20_900, "20.9 s"},
		{78_000, "1.3 min"},
		{3_600_000, "1.0 h"},
		{-5000, "-5.0 s"},
	}
	for _, tt := range tests {
		if got := Millis(tt.ms); got != tt.want {
			t.Errorf("Millis(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// TestMillisRounding: from a second up, Millis writes the milliseconds
// divided by the unit's, rounded to one decimal, for every value (none
// lands on the other side of a rounding half through the nanoseconds).
func TestMillisRounding(t *testing.T) {
	units := []struct {
		ms     int64
		suffix string
	}{{3_600_000, "h"}, {60_000, "min"}, {1000, "s"}}
	for ms := int64(1000); ms < 400*3_600_000; ms += 9_973 {
		u := units[0]
		for _, c := range units {
			if ms >= c.ms {
				u = c
				break
			}
		}
		if got, want := Millis(ms), fmt.Sprintf("%.1f %s", float64(ms)/float64(u.ms), u.suffix); got != want {
			t.Fatalf("Millis(%d) = %q, want %q", ms, got, want)
		}
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{100_992_000, "96.3 MiB"},
		{1 << 30, "1.0 GiB"},
		{300 << 30, "300.0 GiB"},
		{-4 << 20, "-4.0 MiB"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
