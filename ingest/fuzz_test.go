package ingest

import (
	"bytes"
	"mime/multipart"
	"testing"
)

// FuzzParseName feeds upload names to their parser: it may refuse but must
// not panic, and a parsed name always has a service_name.
func FuzzParseName(f *testing.F) {
	for _, s := range []string{"app.cpu{spark_app_id=app-1,executorId=3}", "app{", `x{a="b,c",d!~"e"}`, "app.alloc_space{spark_role=driver}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if name, err := ParseName(s); err == nil {
			if v, ok := name.Labels.Get("service_name"); !ok || v == "" {
				t.Fatalf("ParseName(%q) = %v without service_name", s, name.Labels)
			}
		}
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
		ParseTaskRuns(data)
		gcs, err := ParseGCs(data)
		for _, g := range gcs {
			if err == nil && (g.Name == "" || g.StartMs <= 0) {
				t.Fatalf("ParseGCs accepted %+v", g)
			}
		}
	})
}

// FuzzParseBody feeds upload bodies, multipart under a fixed boundary, to
// their parser: it may refuse but must not panic, and a body it takes has
// a profile part.
func FuzzParseBody(f *testing.F) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	mw.SetBoundary("sparkprof-fuzz")
	for _, part := range []struct{ name, data string }{{"jfr", "FLR\x00 chunk"}, {"labels", "\x0a\x02"}, {"tasks", "{}\n"}, {"gc", "{}\n"}} {
		w, _ := mw.CreateFormFile(part.name, part.name)
		w.Write([]byte(part.data))
	}
	mw.Close()
	f.Add(b.Bytes())
	f.Add([]byte("--sparkprof-fuzz\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nno end"))
	f.Fuzz(func(t *testing.T, body []byte) {
		parts, err := ParseBody(body, "multipart/form-data; boundary=sparkprof-fuzz", "")
		if err == nil && parts.Data == nil {
			t.Fatalf("ParseBody took %q without a profile part", body)
		}
	})
}
