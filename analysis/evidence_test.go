package analysis

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonNames returns the JSON names of t's fields in the order encoding/json
// writes them, the fields of embedded structs in their place.
func jsonNames(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		if f.Anonymous {
			names = append(names, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// TestEvidenceFieldOrder: a report wrote evidence as JSON maps, whose keys
// encoding/json sorts; the evidence types declare their fields in that
// order so that reports stay byte for byte what they were.
func TestEvidenceFieldOrder(t *testing.T) {
	for _, v := range []any{
		StragglerEvidence{}, SkewEvidence{}, GCEvidence{}, ShuffleWaitEvidence{}, SpillEvidence{},
		SchedulerOverheadEvidence{}, TaskSizeEvidence{}, FoldedEvidence{},
		FailuresEvidence{}, FailureGroup{}, ExecutorLossEvidence{}, LostExecutor{},
		IdleExecutorsEvidence{}, DriverTimeEvidence{}, CriticalPathEvidence{}, WhatIfEvidence{}, Estimate{},
		ErrorsEvidence{}, LogError{}, LogChunksEvidence{}, LogChunk{}, WarningsEvidence{},
	} {
		typ := reflect.TypeOf(v)
		names := jsonNames(typ)
		if !slices.IsSorted(names) {
			t.Errorf("%s writes %v, want them sorted", typ.Name(), names)
		}
		if slices.Contains(names, "") || slices.Contains(names, "-") {
			t.Errorf("%s has a field without a JSON name: %v", typ.Name(), names)
		}
	}
}
