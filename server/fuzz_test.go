package server

import "testing"

// FuzzParse feeds ingest names, selectors and times to their parsers: they
// may refuse but must not panic, and a parsed name always has a
// service_name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"app.cpu{spark_app_id=app-1,executorId=3}", `{service_name="a", spark_stage_id=~"1|2"}`, "app{", "1700000000000", "now-1h", `x{a="b,c",d!~"e"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ls, err := parseName(s); err == nil {
			if v, ok := ls.Get("service_name"); !ok || v == "" {
				t.Fatalf("parseName(%q) = %v without service_name", s, ls)
			}
		}
		parseSelector(s)
		parseTimeParam(s)
		splitOutsideQuotes(s)
	})
}
