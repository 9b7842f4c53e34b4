package server

import (
	"strings"
	"testing"
)

// FuzzParse feeds ingest names, selectors and times to their parsers: they
// may refuse but must not panic, and a parsed name always has a
// service_name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"app.cpu{spark_app_id=app-1,executorId=3}", `{service_name="a", spark_stage_id=~"1|2"}`, "app{", "1700000000000", "now-1h", `x{a="b,c",d!~"e"}`,
		`process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="a"}`, `{__name__="memory:alloc_space:bytes:space:bytes"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ls, _, err := parseName(s); err == nil {
			if v, ok := ls.Get("service_name"); !ok || v == "" {
				t.Fatalf("parseName(%q) = %v without service_name", s, ls)
			}
		}
		// A profile type ID before the braces always names a sample type.
		if name, _, _ := strings.Cut(s, "{"); strings.Contains(name, ":") {
			if _, typ, err := parseSelector(s); err == nil && typ.Name == "" {
				t.Fatalf("parseSelector(%q): a profile type ID without a sample type", s)
			}
		} else {
			parseSelector(s)
		}
		parseTimeParam(s)
		splitOutsideQuotes(s)
	})
}

// FuzzAgentParts feeds the sparkprof agent's tasks and gc parts to their
// parsers: they may refuse but must not panic, and every collection they
// accept has a name and a time.
func FuzzAgentParts(f *testing.F) {
	f.Add([]byte(`{"name":"G1 Young Generation","cause":"G1 Evacuation Pause","startMs":1700000000123,"durationMs":4}` + "\n"))
	f.Add([]byte(`{"threadId":41,"threadName":"Executor task launch worker for task 3.0 in stage 1.0 (TID 3)","stageId":1,"stageAttempt":0,"partition":3,"taskId":3,"startMs":1700000000000,"endMs":0,"status":"RUNNING"}` + "\n"))
	f.Add([]byte("{\"name\":\"x\"}\n\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseTaskWindows(data)
		gcs, err := parseGCs(data)
		for _, g := range gcs {
			if err == nil && (g.Name == "" || g.StartMs <= 0) {
				t.Fatalf("parseGCs accepted %+v", g)
			}
		}
	})
}
