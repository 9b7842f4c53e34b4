package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"1h30m", 90 * time.Minute, true},
		{"0", 0, true},
		{"30d", 30 * 24 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"1M", 30 * 24 * time.Hour, true},
		{"1y", 365 * 24 * time.Hour, true},
		{"292y", 292 * 365 * 24 * time.Hour, true},
		{"293y", 0, false},
		{"586y", 0, false},
		{"106751d", 106751 * 24 * time.Hour, true},
		{"106752d", 0, false},
		{"1.5d", 0, false},
		{"-1d", 0, false},
		{"d", 0, false},
		{"10x", 0, false},
		{"", 0, false},
	} {
		got, err := Parse(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}
