package unixtime

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"", 0, ""},
		{"1700000000", 1700000000e9, ""},
		{"1700000000000", 1700000000000e6, ""},
		{"1700000000000000", 1700000000000000e3, ""},
		{"1700000000000000000", 1700000000000000000, ""},
		{"9223372036", 9223372036e9, ""},
		{"9223372036854", 9223372036854e6, ""},
		{"9223372036854775", 9223372036854775e3, ""},
		{"9223372037", 0, "seconds after the year 2262"},
		{"9999999999999", 0, "milliseconds after the year 2262"},
		{"99999999999999999", 0, "microseconds after the year 2262"},
		{"9223372036854775808", 0, "a non-negative integer"},
		{"-1", 0, "a non-negative integer"},
		{"now", 0, "a non-negative integer"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Parse(%q) = %d, %v; want an error saying %q", tt.in, got, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("Parse(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
