package analysis

import (
	"slices"
	"testing"
)

func TestUDFNames(t *testing.T) {
	for detail, want := range map[string][]string{
		"BatchEvalPython [slow_parse(concat(2026-12-, cast(id#0L as string)))#2L], [pythonUDF0#7L]": {"slow_parse"},
		"ArrowEvalPython [tidy(a#1)#3, score(b#2, c#4)#5], [pythonUDF0#6, pythonUDF1#7], 200":       {"tidy", "score"},
		"BatchEvalPython [f(x#1)#2, f(y#3)#4], [pythonUDF0#5, pythonUDF1#6]":                        {"f"},
		"BatchEvalPython":    nil,
		"BatchEvalPython [":  nil,
		"Project [a#1, b#2]": nil,
	} {
		if got := udfNames(detail); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", detail, got, want)
		}
	}
}
