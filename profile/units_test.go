package profile

import "testing"

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    int64
		unit string
		want string
	}{
		{1_500_000_000, "nanoseconds", "1.5 s"},
		{12_345_678, "nanoseconds", "12 ms"},
		{999, "nanoseconds", "999 ns"},
		{0, "nanoseconds", "0 ns"},
		{4 << 20, "bytes", "4.0 MiB"},
		{300 << 30, "bytes", "300.0 GiB"},
		{42329, "count", "42,329"},
		{-1234567, "count", "-1,234,567"},
		{7, "count", "7"},
	}
	for _, tt := range tests {
		if got := FormatValue(tt.v, tt.unit); got != tt.want {
			t.Errorf("FormatValue(%d, %s) = %q, want %q", tt.v, tt.unit, got, tt.want)
		}
	}
}
