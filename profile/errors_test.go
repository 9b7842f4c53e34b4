package profile

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func TestBadLines(t *testing.T) {
	tests := []struct {
		bad      int    // bad lines, at lines 2, 4, 6, ...
		err      string // Finish's error, "" for none
		warnings int
		last     string // the last warning
	}{
		{0, "", 0, ""},
		{1, "in.json:2: bad 0", 1, "line 2: bad 0"},
		{100, "in.json:2: bad 0", 100, "line 200: bad 99"},
		{150, "in.json:2: bad 0", 101, "50 more bad lines not shown"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.bad), func(t *testing.T) {
			p := New()
			b := BadLines{Source: "in.json"}
			for i := range tt.bad {
				b.Add(p, 2*i+2, fmt.Errorf("bad %d", i))
			}
			err := b.Finish(p)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Errorf("Finish = %v, want %q", err, tt.err)
			}
			var de *DecodeError
			if err != nil && (!errors.As(err, &de) || de.Line != 2 || de.Offset != -1) {
				t.Errorf("Finish = %#v, want a *DecodeError of line 2", err)
			}
			if len(p.Warnings) != tt.warnings {
				t.Fatalf("%d warnings, want %d", len(p.Warnings), tt.warnings)
			}
			if tt.warnings > 0 && p.Warnings[len(p.Warnings)-1] != tt.last {
				t.Errorf("last warning %q, want %q", p.Warnings[len(p.Warnings)-1], tt.last)
			}
			if tt.warnings > 0 && !slices.Contains(p.Warnings, "line 2: bad 0") {
				t.Errorf("warnings %q lack the first bad line", p.Warnings)
			}
		})
	}
}
