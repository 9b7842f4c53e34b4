package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// TestIngestEndToEnd sends real JFRs raw, gzipped and as the Pyroscope Java
// agent's multipart with a LabelsSnapshot, and checks that flame graph
// totals equal the offline decoder's.
func TestIngestEndToEnd(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	cortexGz := corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz") // corpus.Read gunzips
	dumpJFR := corpus.Read(t, "jfr", "dump1.jfr.gz")
	dumpLabels := corpus.Read(t, "jfr", "dump1.labels.pb.gz")
	var gz bytes.Buffer
	{
		data, err := format.Decompress(cortexGz, "x", 0)
		if err != nil {
			t.Fatal(err)
		}
		gz.Write(gzipBytes(t, data))
	}
	q := func(app string, extra ...string) url.Values {
		v := url.Values{"name": {app + ".cpu{spark_app_id=app-1,executorId=3,hostname=node1}"}, "format": {"jfr"},
			"from": {"1700000000"}, "until": {"1700000010"}, "spyName": {"javaspy"}}
		for i := 0; i+1 < len(extra); i += 2 {
			v.Set(extra[i], extra[i+1])
		}
		return v
	}
	if code := post(t, ts, q("raw"), "", cortexGz); code != 200 {
		t.Fatalf("raw JFR: %d", code)
	}
	if code := post(t, ts, q("gz"), "", gz.Bytes()); code != 200 {
		t.Fatalf("gzip JFR: %d", code)
	}
	ct, body := multipartJFR(t, gzipBytes(t, dumpJFR), gzipBytes(t, dumpLabels))
	if code := post(t, ts, q("multi"), ct, body); code != 200 {
		t.Fatalf("multipart JFR: %d", code)
	}
	want := offlineTotal(t, cortexGz, nil, "cpu")
	for _, app := range []string{"raw", "gz"} {
		if got := render(t, ts, `{service_name="`+app+`"}`, "cpu").Flamebearer.NumTicks; got != want || want == 0 {
			t.Errorf("%s: cpu total %d, offline %d", app, got, want)
		}
	}
	// Upload bodies are read into reused buffers: the raw upload's names
	// must not change when the next uploads fill its buffer.
	rawNames := render(t, ts, `{service_name="raw"}`, "cpu").Flamebearer.Names
	gzNames := render(t, ts, `{service_name="gz"}`, "cpu").Flamebearer.Names
	if len(rawNames) < 100 || !slices.Equal(rawNames, gzNames) {
		t.Errorf("the raw upload's flame graph names %d frames, the gzip one's %d, or they differ", len(rawNames), len(gzNames))
	}
	wantMulti := offlineTotal(t, dumpJFR, dumpLabels, "cpu")
	if got := render(t, ts, `multi.cpu{}`, "cpu").Flamebearer.NumTicks; got != wantMulti || wantMulti == 0 {
		t.Errorf("multipart: cpu total %d, offline %d", got, wantMulti)
	}
	// Aliased labels arrive under the standard names, and executor selection works.
	if got := render(t, ts, `{spark_executor_id="3", host="node1", service_name="raw"}`, "cpu").Flamebearer.NumTicks; got != want {
		t.Errorf("by executor and host: %d, want %d", got, want)
	}
	if got := render(t, ts, `{spark_executor_id="4"}`, "cpu").Flamebearer.NumTicks; got != 0 {
		t.Errorf("other executor: %d, want 0", got)
	}
	// The LabelsSnapshot's labels became sample labels.
	var names []string
	getJSON(t, ts, "/api/v1/labels", &names)
	p, _ := format.Decode(dumpJFR, "x", format.Options{JFRLabels: mustGunzip(t, dumpLabels)})
	var ctxLabel string
	for _, s := range p.Samples {
		if ls := p.LabelSet(s.Labels); len(ls) > 0 {
			ctxLabel = ls[0].Name
			break
		}
	}
	if ctxLabel == "" || !contains(names, ctxLabel) || !contains(names, "service_name") {
		t.Errorf("label names %v lack the snapshot's %q", names, ctxLabel)
	}
	var agents []ingest.Agent
	getJSON(t, ts, "/api/v1/agents", &agents)
	if len(agents) != 3 || agents[0].Uploads != 1 || agents[0].ExecutorID != "3" {
		t.Errorf("agents %+v", agents)
	}
	// Pyroscope's read endpoint answers with the same tree.
	var pr struct {
		Flamebearer query.Flamebearer `json:"flamebearer"`
	}
	getJSON(t, ts, "/pyroscope/render?query=raw.cpu%7B%7D&from=now-100000h&until=now", &pr)
	if pr.Flamebearer.NumTicks != want {
		t.Errorf("pyroscope render: %d, want %d", pr.Flamebearer.NumTicks, want)
	}
}

// The agents list puts a sender's failed uploads on its own row, beside
// its client and the windows it says it dropped.
func TestAgentsList(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	exec := url.Values{"name": {"job{appId=app-7,executorId=2,hostname=node1}"}, "format": {"folded"}, "spyName": {"sparkprof"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for n, vs := range exec {
			q[n] = vs
		}
		q.Set(k, v)
		return q
	}
	steps := []struct {
		query url.Values
		body  string
		code  int
	}{
		{exec, "a;b 1\n", 200},
		{with("dropped", "3"), "a;b 1\n", 200},
		{with("dropped", "1"), "a;b 1\n", 200}, // a count from before: the row keeps 3
		{with("format", "pprof"), "not pprof", 422},
		{with("dropped", "-1"), "a;b 1\n", 400},
		{url.Values{"name": {"broken{"}}, "a 1\n", 400},
	}
	for _, st := range steps {
		if code := post(t, ts, st.query, "", []byte(st.body)); code != st.code {
			t.Fatalf("%v: %d, want %d", st.query, code, st.code)
		}
	}
	var agents []ingest.Agent
	getJSON(t, ts, "/api/v1/agents", &agents)
	byApp := map[string]ingest.Agent{}
	for _, a := range agents {
		byApp[a.App] = a
	}
	got := byApp["job"]
	if len(agents) != 2 || got.AppID != "app-7" || got.ExecutorID != "2" || got.Host != "node1" || got.SpyName != "sparkprof" ||
		got.Uploads != 3 || got.Dropped != 3 || got.Errors != 2 || !strings.Contains(got.LastError, "dropped") {
		t.Errorf("agents %+v", agents)
	}
	if b := byApp["broken{"]; b.Errors != 1 || b.Uploads != 0 {
		t.Errorf("unparsable name: %+v", b)
	}
	if got.WindowLagMs != nil {
		t.Errorf("uploads without a window: window lag %d ms, want none", *got.WindowLagMs)
	}
	// A sender whose clock is two hours behind: its window ends two hours
	// before the server receives it.
	behind := time.Now().Add(-2 * time.Hour)
	q := with("from", strconv.FormatInt(behind.Add(-10*time.Second).Unix(), 10))
	q.Set("until", strconv.FormatInt(behind.Unix(), 10))
	if code := post(t, ts, q, "", []byte("a;b 1\n")); code != 200 {
		t.Fatalf("upload with a window: %d", code)
	}
	getJSON(t, ts, "/api/v1/agents", &agents)
	for _, a := range agents {
		if a.App != "job" {
			continue
		}
		if lag := a.WindowLagMs; lag == nil || *lag < (2*time.Hour).Milliseconds() || *lag > (2*time.Hour+time.Minute).Milliseconds() {
			t.Errorf("window lag %v, want two hours", lag)
		}
	}
}

// TestBadUploads checks each bad upload's status and that nothing stored
// is lost.
func TestBadUploads(t *testing.T) {
	ts, db := newTestServer(t, Config{MaxBodyBytes: 1 << 20, MaxDecodedBytes: 4 << 20})
	good := url.Values{"name": {"app"}, "format": {"folded"}}
	if code := post(t, ts, good, "", []byte("main;work 5\n")); code != 200 {
		t.Fatalf("good upload: %d", code)
	}
	bomb := gzipBytes(t, bytes.Repeat([]byte("main;work 1\n"), 1<<20))
	var many []string
	for i := range 30 { // with service_name, 31
		many = append(many, fmt.Sprintf("k%d=v", i))
	}
	tests := []struct {
		name   string
		query  url.Values
		body   []byte
		want   int
		header []string
	}{
		{"no name", url.Values{"format": {"folded"}}, []byte("a 1\n"), 400, nil},
		{"bad from", url.Values{"name": {"app"}, "from": {"yesterday"}}, []byte("a 1\n"), 400, nil},
		{"negative from", url.Values{"name": {"app"}, "from": {"-5"}}, []byte("a 1\n"), 400, nil},
		{"until past 2262", url.Values{"name": {"app"}, "until": {"50000000000"}}, []byte("a 1\n"), 400, nil},
		{"bad label", url.Values{"name": {"app{oops}"}}, []byte("a 1\n"), 400, nil},
		{"31 labels", url.Values{"name": {"app{" + strings.Join(many, ",") + "}"}}, []byte("a 1\n"), 400, nil},
		{"label name with a space", url.Values{"name": {"app{task id=3}"}}, []byte("a 1\n"), 400, nil},
		{"label value too long", url.Values{"name": {"app{k=" + strings.Repeat("v", 2049) + "}"}}, []byte("a 1\n"), 400, nil},
		{"bad sampleRate", url.Values{"name": {"app.cpu"}, "sampleRate": {"fast"}}, []byte("a 1\n"), 400, nil},
		{"not a JFR", url.Values{"name": {"app"}, "format": {"jfr"}}, []byte("FLR\x00garbage"), 422, nil},
		{"gzip bomb", url.Values{"name": {"app"}}, bomb, 413, nil},
		{"body too large", url.Values{"name": {"app"}}, bytes.Repeat([]byte("a"), 2<<20), 413, nil},
		{"zstd body", url.Values{"name": {"app"}}, []byte("a 1\n"), 400, []string{"Content-Encoding", "zstd"}},
		{"said gzip, is not", url.Values{"name": {"app"}}, []byte("not gzip\n"), 422, []string{"Content-Encoding", "gzip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code := post(t, ts, tt.query, "", tt.body, tt.header...); code != tt.want {
				t.Errorf("status %d, want %d", code, tt.want)
			}
		})
	}
	// The header, not the profile, is named when it is what is wrong; a
	// gzipped body decodes whatever the header says.
	for _, c := range []struct {
		encoding string
		body     []byte
		want     string
	}{
		{"gzip", []byte("not gzip\n"), "the request says Content-Encoding: gzip, but the body is not gzip data"},
		{"br", []byte("a 1\n"), `Content-Encoding \"br\": send the body gzipped`},
	} {
		req, _ := http.NewRequest("POST", ts.URL+"/ingest?"+good.Encode(), bytes.NewReader(c.body))
		req.Header.Set("Content-Encoding", c.encoding)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(msg), c.want) {
			t.Errorf("Content-Encoding %s: %d %s; want it to say %s", c.encoding, resp.StatusCode, msg, c.want)
		}
	}
	for _, ce := range []string{"gzip", "", "identity"} {
		if code := post(t, ts, good, "", gzipBytes(t, []byte("main;work 1\n")), "Content-Encoding", ce); code != 200 {
			t.Errorf("a gzipped body with Content-Encoding %q: %d, want 200", ce, code)
		}
	}
	if n := countUploads(t, db, ""); n != 4 {
		t.Errorf("%d uploads stored, want the four good uploads", n)
	}
	if code := post(t, ts, url.Values{"name": {"app{" + strings.Join(many[:29], ",") + "}"}}, "", []byte("a 1\n")); code != 200 {
		t.Errorf("30 labels: %d, want 200", code)
	}
	for key, want := range map[string]int{
		strings.Repeat("k", 256): 400,
		"tab\there":              400,
		`"quo"te"`:               400,
		"ünïcode":                400,
		strings.Repeat("k", 255): 200,
		`"exec-1/window-7"`:      200,
	} {
		if code := post(t, ts, good, "", []byte("main;work 5\n"), "Idempotency-Key", key); code != want {
			t.Errorf("Idempotency-Key %.20q: %d, want %d", key, code, want)
		}
	}
}

// Uploads over a tenant's rate are refused with 429 and when to retry;
// another tenant has a limit of its own.
func TestUploadRate(t *testing.T) {
	good := url.Values{"name": {"app"}, "format": {"folded"}}
	// Over the rate: the burst allows 6, then 429.
	ts, _ := newTestServer(t, Config{RatePerSecond: 3})
	codes := map[int]int{}
	for range 10 {
		codes[post(t, ts, good, "", []byte("main;work 1\n"), "X-Scope-OrgID", "busy")]++
	}
	if codes[429] == 0 || codes[200] < 6 {
		t.Errorf("rate limit: %v; want a burst of 6, then 429", codes)
	}
	// A 429 says when to retry: the next upload of 3 a second is due
	// within a second.
	req, _ := http.NewRequest("POST", ts.URL+"/ingest?"+good.Encode(), strings.NewReader("main;work 1\n"))
	req.Header.Set("X-Scope-OrgID", "busy")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("over the rate: %d, Retry-After %q; want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Another tenant has a limit of its own.
	if code := post(t, ts, good, "", []byte("main;work 1\n"), "X-Scope-OrgID", "calm"); code != 200 {
		t.Errorf("another tenant: %d, want 200", code)
	}
}

func TestBadTasksPart(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, _ := mw.CreateFormFile("jfr", "jfr")
	w.Write(corpus.Read(t, "jfr", "dump1.jfr.gz"))
	w, _ = mw.CreateFormFile("tasks", "tasks")
	w.Write([]byte("{\"threadId\": 1}\nnot json\n"))
	mw.Close()
	if code := post(t, ts, url.Values{"name": {"app"}, "format": {"jfr"}}, mw.FormDataContentType(), b.Bytes()); code != 400 {
		t.Errorf("bad tasks part: %d, want 400", code)
	}
}

// An upload beyond MaxConcurrentUploads waits its turn, counted in
// sparkprof_uploads_waiting, and is stored once a turn is free; one whose
// client gives up while waiting gives its turn back.
func TestUploadTurns(t *testing.T) {
	ts, _ := newTestServer(t, Config{MaxConcurrentUploads: 1})
	srv := ts.Config.Handler.(*Server)
	waiting := func() float64 {
		families, err := srv.metrics.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "sparkprof_uploads_waiting" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no sparkprof_uploads_waiting metric")
		return 0
	}
	waitFor := func(n float64) {
		for waiting() != n {
			runtime.Gosched()
		}
	}
	release, err := srv.ingest.Turn(context.Background()) // the only turn
	if err != nil {
		t.Fatal(err)
	}
	q := url.Values{"name": {"turns{}"}, "format": {"folded"}}
	done := make(chan int)
	go func() { done <- post(t, ts, q, "", []byte("main;work 4\n")) }()
	waitFor(1)
	release()
	if code := <-done; code != 200 {
		t.Fatalf("upload after its turn came: %d", code)
	}
	waitFor(0)
	if got := render(t, ts, "turns{}", "samples").Flamebearer.NumTicks; got != 4 {
		t.Errorf("stored %d samples, want 4", got)
	}

	// A client that gives up while waiting. (Its bytes may have arrived
	// before it gave up, and then are stored: an HTTP/1 server learns of
	// the closed connection only when it reads.)
	release, err = srv.ingest.Turn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/ingest?"+url.Values{"name": {"gaveup{}"}, "format": {"folded"}}.Encode(), strings.NewReader("main;lost 9\n"))
	errc := make(chan error)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitFor(1)
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled upload got an answer")
	}
	release()
	waitFor(0)
	// Its turn came back: the next upload gets it.
	if code := post(t, ts, q, "", []byte("main;work 1\n")); code != 200 {
		t.Errorf("upload after a cancelled one: %d", code)
	}
}

// TestUploadRetries sends keyed uploads again, one after another and at
// once, as an agent does whose answer was lost: each is stored once, the
// retries are told so, and a quoted key is the same key as a bare one.
func TestUploadRetries(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	q := url.Values{"name": {"app{spark_executor_id=1}"}, "format": {"jfr"}}
	send := func(key string) (int, string) {
		req, _ := http.NewRequest("POST", ts.URL+"/ingest?"+q.Encode(), bytes.NewReader(jfr))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
	}
	if code, replayed := send("exec-1/0"); code != 200 || replayed != "" {
		t.Fatalf("first upload: %d, replayed %q", code, replayed)
	}
	if code, replayed := send(`"exec-1/0"`); code != 200 || replayed != "true" {
		t.Errorf("its retry, the key quoted: %d, replayed %q; want 200, true", code, replayed)
	}
	codes := make(chan int, 8)
	for range 8 {
		go func() {
			code, _ := send("exec-1/1")
			codes <- code
		}()
	}
	for range 8 {
		if code := <-codes; code != 200 {
			t.Errorf("concurrent retries: %d, want 200", code)
		}
	}
	var ids []uint64
	db.Select("", store.Query{}, func(u *store.Upload) error { ids = append(ids, u.ID); return nil })
	if len(ids) != 2 {
		t.Errorf("stored uploads %v, want 2: one per key", ids)
	}
	var agents []ingest.Agent
	getJSON(t, ts, "/api/v1/agents", &agents)
	if len(agents) != 1 || agents[0].Uploads != 2 || agents[0].Retried != 8 {
		t.Errorf("agents %+v; want one with 2 uploads and 8 retried", agents)
	}
	want := 2 * offlineTotal(t, jfr, nil, "cpu")
	if got := render(t, ts, `{service_name="app"}`, "cpu").Flamebearer.NumTicks; got != want {
		t.Errorf("flame graph total %d, want %d (two uploads)", got, want)
	}

	// Without a key, a JFR or pprof upload over a given window is told by
	// its content, as the Pyroscope Java agent retries one: its multipart
	// body sent again under a new boundary is stored once. Folded stacks
	// (idle processes' can match byte for byte) and uploads without a
	// window are stored each time.
	labels := corpus.Read(t, "jfr", "dump1.labels.pb.gz")
	window := url.Values{"name": {"pyro{}"}, "format": {"jfr"}, "from": {"1764000000"}, "until": {"1764000010"}}
	for range 2 {
		ct, body := multipartJFR(t, jfr, labels) // a new boundary each time
		if code := post(t, ts, window, ct, body); code != 200 {
			t.Fatalf("Pyroscope agent's upload: %d", code)
		}
	}
	window.Set("until", "1764000020") // another window: another upload
	ct, body := multipartJFR(t, jfr, labels)
	if code := post(t, ts, window, ct, body); code != 200 {
		t.Fatalf("Pyroscope agent's upload: %d", code)
	}
	unwindowed := url.Values{"name": {"nowindow{}"}, "format": {"jfr"}}
	folded := url.Values{"name": {"folded{}"}, "format": {"folded"}, "from": {"1764000000"}, "until": {"1764000010"}}
	for range 2 {
		post(t, ts, unwindowed, "", jfr)
		post(t, ts, folded, "", []byte("main;sleep 100\n"))
	}
	for app, want := range map[string]int{"pyro": 2, "nowindow": 2, "folded": 2} {
		if n := countUploads(t, db, app); n != want {
			t.Errorf("%s: %d uploads stored, want %d", app, n, want)
		}
	}

	// An import names its file by a key too: the second import of the same
	// profile is reported and not stored.
	for i, wantDup := range []bool{false, true} {
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/import?path=app-1/profile-exec-2.jfr", bytes.NewReader(jfr))
		req.Header.Set("Idempotency-Key", "sha256:abc")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var res ingest.Result
		json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if resp.StatusCode != 200 || res.Duplicate != wantDup || res.ID != 9 {
			t.Errorf("import %d: %d, duplicate %v, id %d; want 200, %v, 9", i+1, resp.StatusCode, res.Duplicate, res.ID, wantDup)
		}
	}
}

// failingReader fails the test that reads it: a body that must not be
// sent.
type failingReader struct{ t *testing.T }

func (r failingReader) Read([]byte) (int, error) {
	r.t.Error("the body of an upload stored before was sent")
	return 0, io.EOF
}

// A keyed upload stored before is answered before its body is read, so a
// client that sent "Expect: 100-continue", as sparkprof import does, never
// sends it; on /ingest and on /api/v1/import.
func TestRetryBodyNotSent(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	for _, path := range []string{"/ingest?name=app&format=jfr", "/api/v1/import?path=app-1/profile-exec-1.jfr"} {
		for i := range 2 {
			var body io.Reader = bytes.NewReader(jfr)
			if i == 1 {
				body = failingReader{t}
			}
			req, _ := http.NewRequest("POST", ts.URL+path, body)
			req.ContentLength = int64(len(jfr))
			req.Header.Set("Idempotency-Key", "k"+path)
			req.Header.Set("Expect", "100-continue")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || (i == 1) != (resp.Header.Get("Idempotent-Replayed") == "true") {
				t.Errorf("%s, attempt %d: %d, replayed %q", path, i+1, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
			}
		}
	}
	if n := countUploads(t, db, ""); n != 2 {
		t.Errorf("%d uploads stored, want 2", n)
	}
}

// TestPythonWorkerUpload: the agent's window of its Python workers, a
// py-spy Chrome trace beside the executor's task runs, is stored as wall
// time, timed from the window's start: the worker's samples belong to the
// task the executor ran then, and to none before and after it.
func TestPythonWorkerUpload(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	const fromMs = 1_700_000_000_000
	// A worker (pid 11) the daemon forked, whose stack starts with the
	// daemon's frames, served task 41 for 2 s, from 0.5 s into the
	// window, then waited for the next.
	trace := `[
{"name":"<module>","ph":"B","pid":11,"tid":0,"ts":0,"args":{"filename":"/opt/venv/lib/python3.11/site-packages/pyspark/daemon.py","line":1}},
{"name":"manager","ph":"B","pid":11,"tid":0,"ts":0,"args":{"filename":"/opt/venv/lib/python3.11/site-packages/pyspark/daemon.py","line":9}},
{"name":"main","ph":"B","pid":11,"tid":0,"ts":0,"args":{"filename":"/opt/venv/lib/python3.11/site-packages/pyspark/worker.py","line":5}},
{"name":"slow_parse","ph":"B","pid":11,"tid":0,"ts":500000,"args":{"filename":"/tmp/spark-1/userFiles-2/job.py","line":3}},
{"name":"slow_parse","ph":"E","pid":11,"tid":0,"ts":2500000,"args":{"filename":"/tmp/spark-1/userFiles-2/job.py","line":3}},
{"name":"main","ph":"E","pid":11,"tid":0,"ts":4000000,"args":{"filename":"/opt/venv/lib/python3.11/site-packages/pyspark/worker.py","line":5}},
{"name":"manager","ph":"E","pid":11,"tid":0,"ts":4000000,"args":{"filename":"/opt/venv/lib/python3.11/site-packages/pyspark/daemon.py","line":9}},
{"name":"<module>","ph":"E","pid":11,"tid":0,"ts":4000000,"args":{"filename":"/opt/venv/lib/python3.11/site-packages/pyspark/daemon.py","line":1}}]`
	tasks := fmt.Sprintf(`{"threadId":60,"threadName":"Executor task launch worker for task 0.0 in stage 7.0 (TID 41)","stageId":7,"stageAttempt":0,"partition":0,"taskId":41,"startMs":%d,"endMs":%d,"status":"SUCCESS"}`+"\n",
		int64(fromMs+400), int64(fromMs+2600))
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, _ := mw.CreateFormFile("profile", "profile")
	w.Write([]byte(trace))
	w, _ = mw.CreateFormFile("tasks", "tasks")
	w.Write([]byte(tasks))
	mw.Close()
	q := url.Values{"name": {"etl{spark_app_id=app-1,spark_executor_id=3}"}, "format": {"chrometrace"}, "spyName": {"sparkprof"},
		"from": {strconv.Itoa(fromMs)}, "until": {strconv.Itoa(fromMs + 4100)}}
	if code := post(t, ts, q, mw.FormDataContentType(), b.Bytes()); code != 200 {
		t.Fatalf("the Python window: %d, want 200", code)
	}
	var bd struct {
		Total int64
		Rows  []struct {
			Keys  []string
			Value int64
		}
	}
	getJSON(t, ts, "/api/v1/breakdown?"+url.Values{"query": {`{spark_app_id="app-1"}`}, "type": {"wall"}, "by": {"spark_task_id"},
		"from": {strconv.Itoa(fromMs / 1000)}, "until": {strconv.Itoa(fromMs/1000 + 10)}}.Encode(), &bd)
	got := map[string]int64{}
	for _, r := range bd.Rows {
		got[r.Keys[0]] = r.Value
	}
	// Task 41 ran 2.2 s, all of the worker's time then; the worker's
	// 1.8 s before and after are no task's.
	if want := map[string]int64{"41": 2.2e9, "": 1.8e9}; !maps.Equal(got, want) {
		t.Errorf("the workers' wall time by task: %v, want %v", got, want)
	}
	var top struct {
		Functions []struct {
			Name  string
			Total int64
		}
	}
	getJSON(t, ts, "/api/v1/top?"+url.Values{"query": {`{spark_app_id="app-1",spark_task_id="41"}`}, "type": {"wall"}, "n": {"0"},
		"from": {strconv.Itoa(fromMs / 1000)}, "until": {strconv.Itoa(fromMs/1000 + 10)}}.Encode(), &top)
	names := map[string]int64{}
	for _, f := range top.Functions {
		names[f.Name] = f.Total
	}
	if names["job.py:slow_parse"] != 2e9 || names["pyspark/worker.py:main"] != 2.2e9 {
		t.Errorf("task 41's Python functions: %v, want job.py:slow_parse 2 s under pyspark/worker.py:main 2.2 s", names)
	}
}
