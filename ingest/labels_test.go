package ingest

import (
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// TestCheckLabel checks which label names and values an upload may carry.
func TestCheckLabel(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"stage", "12", true},
		{"spark.task-id_2", "Executor task launch worker for task 3.0 in stage 1.0 (TID 7)", true},
		{"host", "", true},
		{"app", "ünïcode 名前", true},
		{"app", "tab\there", false},
		{"app", "del\x7f", false},
		{"app", "c1 \u0085 control", false},
		{"app", "bad utf-8 \xff", false},
		{"app", strings.Repeat("v", maxLabelValueBytes), true},
		{"app", strings.Repeat("v", maxLabelValueBytes+1), false},
		{"", "v", false},
		{"task id", "v", false},
		{"naïve", "v", false},
		{strings.Repeat("n", maxLabelNameBytes+1), "v", false},
	} {
		err := checkLabel(profile.Label{Name: tc.name, Value: tc.value})
		if (err == nil) != tc.ok {
			t.Errorf("checkLabel(%q, %q) = %v, want ok %v", tc.name, tc.value, err, tc.ok)
		}
	}
}
