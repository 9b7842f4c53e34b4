package block

import (
	"slices"
	"strconv"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// TestSampleLabels: a block meta lists each sample label's values, up to
// maxMetaValues of them.
func TestSampleLabels(t *testing.T) {
	p := profile.New()
	for i := range maxMetaValues + 1 {
		p.Add(profile.Sample{Value: 1, Labels: p.AddLabels(profile.Labels{
			{Name: "task", Value: strconv.Itoa(i)},
			{Name: "stage", Value: strconv.Itoa(i % 3)},
		})})
	}
	got := SampleLabels(p, nil)
	if vals, ok := got["task"]; !ok || vals != nil {
		t.Errorf("task: %q (listed %v), want listed without values", vals, ok)
	}
	if vals := got["stage"]; !slices.Equal(vals, []string{"0", "1", "2"}) {
		t.Errorf("stage: %q, want 0, 1, 2", vals)
	}
}
