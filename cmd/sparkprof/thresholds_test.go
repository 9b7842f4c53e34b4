package main

import (
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
)

// TestThresholdSettings: serve's --threshold sets the threshold analyze's
// flag of that name sets, and refuses unknown names and bad values.
func TestThresholdSettings(t *testing.T) {
	s := thresholdSettings{th: analysis.DefaultThresholds}
	for _, kv := range []string{"gc-share=0.2", "min-stage-ms=500", "pattern-share=0.1"} {
		if err := s.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	want := analysis.DefaultThresholds
	want.GCShare, want.MinStageMs, want.PatternShare = 0.2, 500, 0.1
	if s.th != want {
		t.Errorf("thresholds %+v, want %+v", s.th, want)
	}
	for _, bad := range []string{"gc-share", "no-such=1", "gc-share=x"} {
		if err := s.Set(bad); err == nil || !strings.Contains(err.Error(), strings.Split(bad, "=")[0]) && !strings.Contains(err.Error(), "NAME=VALUE") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
