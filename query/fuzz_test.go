package query

import (
	"strings"
	"testing"
)

// FuzzParse feeds selectors and times to their parsers: they may refuse
// but must not panic, a profile type ID before the braces always names a
// sample type, and a time is never before 1970.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"app.cpu{spark_app_id=app-1,executorId=3}", `{service_name="a", spark_stage_id=~"1|2"}`, "app{", "1700000000000", "now-1h", "now-586y", "9999999999999", `x{a="b,c",d!~"e"}`,
		`process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="a"}`, `{__name__="memory:alloc_space:bytes:space:bytes"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if name, _, _ := strings.Cut(s, "{"); strings.Contains(name, ":") {
			if _, typ, err := ParseSelector(s); err == nil && typ.Name == "" {
				t.Fatalf("ParseSelector(%q): a profile type ID without a sample type", s)
			}
		} else {
			ParseSelector(s)
		}
		if at, err := ParseTime(s); err == nil && at < 0 {
			t.Fatalf("ParseTime(%q) = %d, before 1970", s, at)
		}
		splitOutsideQuotes(s)
	})
}
