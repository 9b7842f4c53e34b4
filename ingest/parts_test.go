package ingest

import (
	"strings"
	"testing"
)

func TestParseGCs(t *testing.T) {
	tests := []struct {
		name, in string
		want     int
		err      string
	}{
		{"two collectors", `{"name":"G1 Young Generation","cause":"G1 Evacuation Pause","startMs":1700000000123,"durationMs":4}` + "\n\n" +
			`{"name":"G1 Old Generation","cause":"System.gc()","startMs":1700000001000,"durationMs":0}` + "\n", 2, ""},
		{"empty", "", 0, ""},
		{"not json", `{"name":"G1 Young Generation","startMs":1,"durationMs":1}` + "\nnot json\n", 0, "gc line 2"},
		{"no name", `{"startMs":1700000000123,"durationMs":4}`, 0, "gc line 1: want a name"},
		{"negative duration", `{"name":"x","startMs":1700000000123,"durationMs":-1}`, 0, "gc line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGCs([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("got %d records, err %v; want %d", len(got), err, tt.want)
			}
		})
	}
}
