package query

import (
	"testing"
	"time"
)

func TestAutoStep(t *testing.T) {
	base := time.Date(2024, 1, 16, 18, 9, 0, 0, time.UTC).UnixNano()
	tests := []struct {
		span time.Duration
		want time.Duration
	}{
		{10 * time.Second, 50 * time.Millisecond}, // a ten-second recording: 200 points
		{time.Minute, 200 * time.Millisecond},
		{18 * time.Minute, 5 * time.Second},
		{24 * time.Hour, 5 * time.Minute},
		{time.Millisecond, time.Millisecond},
		{0, time.Second},
	}
	for _, tt := range tests {
		if got := autoStep(base, base+int64(tt.span)); got != tt.want {
			t.Errorf("autoStep over %v = %v, want %v", tt.span, got, tt.want)
		}
		if n := tt.span / tt.want; n > AutoSteps {
			t.Errorf("autoStep over %v: %d points", tt.span, n)
		}
	}
}
