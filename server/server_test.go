package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

func newTestServer(t *testing.T, cfg Config) (*httptest.Server, *store.DB) {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = db
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(New(cfg))
	t.Cleanup(func() { ts.Close(); db.Close() })
	return ts, db
}

func post(t *testing.T, ts *httptest.Server, query url.Values, contentType string, body []byte, hdr ...string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/ingest?"+query.Encode(), bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// countUploads returns how many uploads (or blocks) of the default tenant
// db holds, those of service_name app unless app is "".
func countUploads(t *testing.T, db store.Store, app string) int {
	t.Helper()
	var q store.Query
	if app != "" {
		m, err := profile.ParseMatcher(`service_name="` + app + `"`)
		if err != nil {
			t.Fatal(err)
		}
		q.Matchers = []profile.Matcher{m}
	}
	n := 0
	if err := db.Select("", q, func(*store.Upload) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func getJSON(t *testing.T, ts *httptest.Server, path string, v any, hdr ...string) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// getStatus is the status code of a GET of path.
func getStatus(t *testing.T, ts *httptest.Server, path string) int {
	t.Helper()
	code, _ := getBody(t, ts, path)
	return code
}

// getBody is the status code and body of a GET of path.
func getBody(t *testing.T, ts *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// multipartJFR builds the body the Pyroscope Java agent sends: a "jfr" file
// part and, when given, a "labels" part with the LabelsSnapshot.
func multipartJFR(t testing.TB, jfr, labels []byte) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, _ := mw.CreateFormFile("jfr", "jfr")
	w.Write(jfr)
	if labels != nil {
		w, _ = mw.CreateFormFile("labels", "labels")
		w.Write(labels)
	}
	mw.Close()
	return mw.FormDataContentType(), b.Bytes()
}

func offlineTotal(t *testing.T, data []byte, labels []byte, typ string) int64 {
	t.Helper()
	p, err := format.Decode(data, "offline", format.Options{JFRLabels: mustGunzip(t, labels)})
	if err != nil {
		t.Fatal(err)
	}
	for i, ty := range p.Types {
		if ty.Family() == typ {
			return p.Total(profile.TypeID(i))
		}
	}
	return 0
}

func mustGunzip(t *testing.T, b []byte) []byte {
	if b == nil {
		return nil
	}
	out, err := format.Decompress(b, "labels", 0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func render(t *testing.T, ts *httptest.Server, sel, typ string, hdr ...string) renderResponse {
	t.Helper()
	var r renderResponse
	getJSON(t, ts, "/api/v1/render?"+url.Values{"query": {sel}, "type": {typ}}.Encode(), &r, hdr...)
	return r
}

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
	var agents []Agent
	getJSON(t, ts, "/api/v1/agents", &agents)
	if len(agents) != 3 || agents[0].Uploads != 1 || agents[0].ExecutorID != "3" {
		t.Errorf("agents %+v", agents)
	}
	// Pyroscope's read endpoint answers with the same tree.
	var pr struct {
		Flamebearer Flamebearer `json:"flamebearer"`
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
	var agents []Agent
	getJSON(t, ts, "/api/v1/agents", &agents)
	byApp := map[string]Agent{}
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

// Pyroscope's render answer carries the units its UI knows and a timeline
// of the selection per step, untimed samples at their upload's start.
func TestPyroscopeRenderTimeline(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	for i, v := range []int{3, 5, 7} {
		q := url.Values{"name": {"tl.cpu{}"}, "from": {fmt.Sprint(1700000000 + 20*i)}, "until": {fmt.Sprint(1700000010 + 20*i)}}
		if code := post(t, ts, q, "", []byte(fmt.Sprintf("main;work %d\n", v))); code != 200 {
			t.Fatalf("upload %d: %d", i, code)
		}
	}
	var pr struct {
		Flamebearer Flamebearer
		Metadata    struct {
			Units      string
			SampleRate int
			Name       string
		}
		Timeline timeline
	}
	getJSON(t, ts, "/pyroscope/render?query=tl.cpu%7B%7D&from=1699999990&until=1700000090", &pr)
	tick := int64(time.Second / defaultSampleRate)
	want := timeline{StartTime: 1699999990, DurationDelta: 10, Samples: []int64{0, 3 * tick, 0, 5 * tick, 0, 7 * tick, 0, 0, 0, 0}}
	if !reflect.DeepEqual(pr.Timeline, want) {
		t.Errorf("timeline %+v, want %+v", pr.Timeline, want)
	}
	if pr.Metadata.Units != "samples" || pr.Metadata.SampleRate != 1e9 || pr.Metadata.Name != "cpu" || pr.Flamebearer.NumTicks != 15*tick {
		t.Errorf("metadata %+v, %d ticks", pr.Metadata, pr.Flamebearer.NumTicks)
	}
}

// TestPyroscopeTypes sends folded stacks as Pyroscope's agents do, the
// profile type in the name's suffix or the units, and reads them back with
// Pyroscope's queries, which name the type the same way.
func TestPyroscopeTypes(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	tests := []struct {
		name       string
		upload     url.Values
		query      string
		wantType   string
		wantTicks  int64
		wantOthers string // a second query, that must find nothing of this upload
	}{
		{"cpu at the default 100 Hz", url.Values{"name": {"py.cpu{}"}}, "py.cpu{}", "cpu", 3 * 10_000_000, ""},
		{"cpu at 50 Hz", url.Values{"name": {"py50.cpu{}"}, "sampleRate": {"50"}}, "py50.cpu{}", "cpu", 3 * 20_000_000, ""},
		{"itimer is cpu", url.Values{"name": {"it.itimer{}"}}, "it.cpu{}", "cpu", 3 * 10_000_000, ""},
		{"wall", url.Values{"name": {"w.wall{}"}, "sampleRate": {"1000"}}, "w.wall{}", "wall", 3 * 1_000_000, "w.cpu{}"},
		{"allocated bytes", url.Values{"name": {"go.alloc_space{}"}}, "go.alloc_space{}", "alloc_bytes", 3, "go.cpu{}"},
		{"lock time", url.Values{"name": {"lk.lock_duration{}"}}, "lk.lock_duration{}", "lock_delay", 3, ""},
		{"units say objects", url.Values{"name": {"rb{}"}, "units": {"objects"}}, "rb.alloc_objects{}", "alloc_objects", 3, "rb.alloc_space{}"},
		{"no type: samples", url.Values{"name": {"plain{}"}}, "plain{}", "samples", 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.upload.Set("format", "folded")
			if code := post(t, ts, tt.upload, "", []byte("main;work 3\n")); code != 200 {
				t.Fatalf("upload: %d", code)
			}
			var pr struct {
				Flamebearer Flamebearer `json:"flamebearer"`
				Metadata    struct{ Name string }
			}
			getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {tt.query}, "from": {"now-7d"}, "until": {"now"}}.Encode(), &pr)
			if pr.Metadata.Name != tt.wantType || pr.Flamebearer.NumTicks != tt.wantTicks {
				t.Errorf("%s: type %q, %d ticks; want %q, %d", tt.query, pr.Metadata.Name, pr.Flamebearer.NumTicks, tt.wantType, tt.wantTicks)
			}
			if tt.wantOthers != "" {
				pr.Flamebearer.NumTicks = 0
				getJSON(t, ts, "/pyroscope/render?"+url.Values{"query": {tt.wantOthers}, "from": {"now-1h"}, "until": {"now"}}.Encode(), &pr)
				if pr.Flamebearer.NumTicks != 0 {
					t.Errorf("%s: %d ticks, want none", tt.wantOthers, pr.Flamebearer.NumTicks)
				}
			}
		})
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
	// Over the rate: the burst allows 6, then 429.
	ts, _ = newTestServer(t, Config{RatePerSecond: 3})
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

func TestAuthAndTenants(t *testing.T) {
	ts, _ := newTestServer(t, Config{AuthToken: "s3cret"})
	q := url.Values{"name": {"app"}}
	if code := post(t, ts, q, "", []byte("a;b 1\n")); code != 401 {
		t.Errorf("without token: %d", code)
	}
	auth := []string{"Authorization", "Bearer s3cret"}
	if code := post(t, ts, q, "", []byte("a;b 7\n"), append(auth, "X-Scope-OrgID", "team-a")...); code != 200 {
		t.Fatalf("with token: %d", code)
	}
	if got := render(t, ts, "app{}", "samples", append(auth, "X-Scope-OrgID", "team-a")...).Flamebearer.NumTicks; got != 7 {
		t.Errorf("team-a sees %d", got)
	}
	if got := render(t, ts, "app{}", "samples", append(auth, "X-Scope-OrgID", "team-b")...).Flamebearer.NumTicks; got != 0 {
		t.Errorf("team-b sees %d of team-a's samples", got)
	}
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz without token: %v %v", resp, err)
	}
	// The server's own Go profiles need the token too.
	for _, withToken := range []bool{false, true} {
		req, _ := http.NewRequest("GET", ts.URL+"/debug/pprof/heap?debug=1", nil)
		if withToken {
			req.Header.Set(auth[0], auth[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[bool]int{false: 401, true: 200}[withToken]; resp.StatusCode != want || (withToken && !strings.Contains(string(body), "heap profile")) {
			t.Errorf("/debug/pprof/heap with token %v: %d, want %d: %.80s", withToken, resp.StatusCode, want, body)
		}
	}
	// Agents set up for Grafana Cloud send the token as a basic
	// authentication password.
	basic := []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("123456:s3cret"))}
	if code := post(t, ts, q, "", []byte("a;b 1\n"), basic...); code != 200 {
		t.Errorf("basic authentication: %d", code)
	}
	// An agent with a wrong token shows on the agents list, with why.
	wrong := url.Values{"name": {"job{executorId=4}"}}
	if code := post(t, ts, wrong, "", []byte("a;b 1\n"), "Authorization", "Bearer stale", "X-Scope-OrgID", "team-a"); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
	var agents []Agent
	getJSON(t, ts, "/api/v1/agents", &agents, append(auth, "X-Scope-OrgID", "team-a")...)
	found := false
	for _, a := range agents {
		if a.App == "job" && a.ExecutorID == "4" && a.Errors == 1 && strings.Contains(a.LastError, "bearer token") {
			found = true
		}
	}
	if !found {
		t.Errorf("agents %+v lack the sender with the wrong token", agents)
	}
}

// Senders that only fail get rows up to a bound; senders that upload
// always do.
func TestAgentsBound(t *testing.T) {
	a := newAgents()
	for i := range maxFailedAgents + 10 {
		a.failed(sender{name: fmt.Sprint("bad", i)}, "broken")
	}
	if len(a.by) != maxFailedAgents {
		t.Errorf("%d rows after failures, want %d", len(a.by), maxFailedAgents)
	}
	a.failed(sender{name: "bad0"}, "again")
	a.uploaded(sender{name: "good"}, 10, 0, 0)
	if got := a.by["\x00bad0\x00\x00\x00"]; got == nil || got.Errors != 2 || len(a.by) != maxFailedAgents+1 {
		t.Errorf("an existing row must still count failures and an upload add one: %+v, %d rows", got, len(a.by))
	}
}

// A browser without the token gets a sign-in form; signing in keeps the
// token in a cookie that the UI's requests then carry.
func TestSignIn(t *testing.T) {
	ts, _ := newTestServer(t, Config{AuthToken: "s3cret"})
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	signIn := func(token, next string) *http.Response {
		resp, err := browser.PostForm(ts.URL+"/login", url.Values{"token": {token}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if code, body := get("/apps/x/report"); code != 401 || !strings.Contains(body, `name="next" value="/apps/x/report"`) {
		t.Errorf("page without token: %d, want 401 and the sign-in form for it:\n%s", code, body)
	}
	if resp := signIn("wrong", "/"); resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if code, _ := get("/api/v1/apps"); code != 401 {
		t.Errorf("API after a wrong token: %d", code)
	}
	for _, next := range []string{"//elsewhere.example/x", "https://elsewhere.example/"} {
		if resp := signIn("s3cret", next); resp.StatusCode != 303 || resp.Header.Get("Location") != "/" {
			t.Errorf("next %q: %d to %q, want 303 to /", next, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if resp := signIn("s3cret", "/flame?query=a"); resp.StatusCode != 303 || resp.Header.Get("Location") != "/flame?query=a" {
		t.Errorf("sign in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code, body := get("/api/v1/apps"); code != 200 {
		t.Errorf("API with the cookie: %d %s", code, body)
	}
}

func TestFlamebearer(t *testing.T) {
	p, err := format.Decode([]byte("a;b 3\na;c 2\nd 1\n"), "x", format.Options{Format: "folded"})
	if err != nil {
		t.Fatal(err)
	}
	fb := newFlamebearer(profile.NewTree(p, p.Types[0]))
	got := fmt.Sprint(fb.Names, fb.Levels, fb.NumTicks, fb.MaxSelf)
	want := "[total a d b c] [[0 6 0 0] [0 5 0 1 0 1 1 2] [0 3 3 3 0 2 2 4]] 6 3"
	if got != want {
		t.Errorf("flamebearer %s, want %s", got, want)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

func TestUIAndFlamePage(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	if code := post(t, ts, url.Values{"name": {"straggler"}}, "", []byte("main;work 3\n")); code != 200 {
		t.Fatal(code)
	}
	for path, want := range map[string]string{
		"/":          `<div id="root">`,
		"/ui/app.js": "createRoot",
		"/flame?" + url.Values{"query": {`{service_name="straggler"}`}, "type": {"samples"}}.Encode(): "<canvas",
	} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(want)) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
}

func TestDiff(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	post(t, ts, url.Values{"name": {"yesterday"}}, "", []byte("main;slow 2\nmain;fast 2\n"))
	post(t, ts, url.Values{"name": {"today"}}, "", []byte("main;slow 6\nmain;fast 2\n"))
	var d struct {
		Flamebearer           Flamebearer
		LeftTicks, RightTicks int64
	}
	for _, path := range []string{
		"/api/v1/diff?" + url.Values{"base": {"yesterday{}"}, "next": {"today{}"}, "type": {"samples"}}.Encode(),
		// Pyroscope's path and parameters, as Grafana's diff view sends them.
		"/pyroscope/render-diff?" + url.Values{"leftQuery": {"yesterday{}"}, "rightQuery": {"today{}"},
			"leftFrom": {"now-1h"}, "leftUntil": {"now"}, "rightFrom": {"now-1h"}, "rightUntil": {"now"}}.Encode(),
	} {
		d.Flamebearer, d.LeftTicks, d.RightTicks = Flamebearer{}, 0, 0
		getJSON(t, ts, path, &d)
		if d.LeftTicks != 4 || d.RightTicks != 8 || len(d.Flamebearer.Levels) < 3 {
			t.Fatalf("%s: ticks %d/%d, %d levels", path, d.LeftTicks, d.RightTicks, len(d.Flamebearer.Levels))
		}
		// Level 2: fast then slow, each side in its own values (as
		// Pyroscope's diff: its flame graph compares each side's share of
		// its own ticks), the width their sum.
		got := fmt.Sprint(d.Flamebearer.Names, d.Flamebearer.Levels[2], d.Flamebearer.NumTicks)
		if got != "[total main fast slow] [0 2 2 0 2 2 2 0 2 2 0 6 6 3] 12" {
			t.Errorf("%s: diff level 2 and width: %s", path, got)
		}
	}
	// A missing side is a 400 naming it, not a diff against everything.
	for path, side := range map[string]string{
		"/api/v1/diff?" + url.Values{"base": {"yesterday{}"}}.Encode():                          "next",
		"/api/v1/diff?" + url.Values{"next": {"today{}"}}.Encode():                              "base",
		"/pyroscope/render-diff?" + url.Values{"rightQuery": {"today{}"}}.Encode():              "leftQuery",
		"/pyroscope/render-diff?" + url.Values{"leftQuery": {"yesterday{}"}}.Encode():           "rightQuery",
		"/api/v1/diff?" + url.Values{"base": {"yesterday{}"}, "next": {""}}.Encode():            "next",
		"/pyroscope/render-diff?" + url.Values{"leftQuery": {""}, "rightQuery": {"x"}}.Encode(): "leftQuery",
	} {
		code, body := getBody(t, ts, path)
		if code != http.StatusBadRequest || !strings.HasPrefix(body, `{"error":"`+side+`: missing`) {
			t.Errorf("%s: %d %s; want 400 naming %s", path, code, body, side)
		}
	}
}

// A range that ends before it starts is a 400 for every query that takes
// one, a diff side's own range too.
func TestRangeBackwards(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	post(t, ts, url.Values{"name": {"svc"}}, "", []byte("main;work 2\n"))
	backwards := url.Values{"from": {"1700001000"}, "until": {"1700000000"}}
	for _, path := range []string{
		"/api/v1/render?query=%7B%7D&" + backwards.Encode(),
		"/api/v1/series?query=%7B%7D&" + backwards.Encode(),
		"/api/v1/top?query=%7B%7D&" + backwards.Encode(),
		"/api/v1/labels?" + backwards.Encode(),
		"/api/v1/label-values?name=service_name&" + backwards.Encode(),
		"/pyroscope/render?query=svc%7B%7D&" + backwards.Encode(),
		"/api/v1/diff?base=%7B%7D&next=%7B%7D&baseFrom=now-1h&baseUntil=now-2h",
	} {
		code, body := getBody(t, ts, path)
		if code != http.StatusBadRequest || !strings.Contains(body, "the range ends before it starts") {
			t.Errorf("%s: %d %s; want 400", path, code, body)
		}
	}
	if code := getStatus(t, ts, "/api/v1/render?query=%7B%7D&from=now-1h&until=now"); code != http.StatusOK {
		t.Errorf("a forward range: %d, want 200", code)
	}
}

// TestProfiledApps: an app whose agent sent profiles but whose event log
// the server has not read is listed, with its service name and the start
// of its uploads; once its event log is imported, it is listed once, as
// analysed.
func TestProfiledApps(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	send := func(app string, from int64) {
		t.Helper()
		q := url.Values{"name": {"myjob{spark_app_id=" + app + ",spark_executor_id=1}"}, "format": {"jfr"},
			"from": {strconv.FormatInt(from, 10)}, "until": {strconv.FormatInt(from+10_000, 10)}}
		if code := post(t, ts, q, "", jfr); code != 200 {
			t.Fatalf("upload for %s: %d", app, code)
		}
	}
	send("app-x", 1764000000000)
	send("app-x", 1764000010000)
	send("local-1532512550423", 1532512550000)
	if code := importFile(t, ts, url.Values{"path": {"local-1532512550423"}}, corpus.Read(t, "eventlogs", "sparklens", "local-1532512550423")); code != 200 {
		t.Fatalf("import: %d", code)
	}
	var apps []AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps)
	got := map[string]AppSummary{}
	for _, a := range apps {
		got[a.ID] = a
	}
	if x := got["app-x"]; len(apps) != 2 || x.Status != "profiles" || x.Name != "myjob" || x.StartMs != 1764000000000 || x.DurationMs != 20_000 {
		t.Errorf("apps %+v; want app-x from its profiles (myjob, from 1764000000000 for 20 s) and the analysed app", apps)
	}
	if a := got["local-1532512550423"]; a.Status != "finished" || a.TaskCount != 8 {
		t.Errorf("the analysed app: %+v", a)
	}
	// Compacted, the uploads' labels are their samples': the row stays.
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	var after []AppSummary
	getJSON(t, ts, "/api/v1/apps", &after)
	if !reflect.DeepEqual(after, apps) {
		t.Errorf("apps after compaction %+v, before %+v", after, apps)
	}
}

// TestAppsAndSlowVsRest imports a real event log, lists and opens the app,
// then diffs the slowest task of a stage against the others with profiles
// labelled per task.
func TestAppsAndSlowVsRest(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	if code := importFile(t, ts, url.Values{"path": {"local-1532512550423"}}, corpus.Read(t, "eventlogs", "sparklens", "local-1532512550423")); code != 200 {
		t.Fatalf("import: %d", code)
	}
	var apps []AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps)
	if len(apps) != 1 || apps[0].ID != "local-1532512550423" || apps[0].TaskCount != 8 || apps[0].Status != "finished" {
		t.Fatalf("apps %+v", apps)
	}
	var app struct {
		Stages []struct{ StageID int }
		Tasks  []struct {
			TaskID             int64
			StageID            int
			LaunchMs, FinishMs int64
		}
	}
	getJSON(t, ts, "/api/v1/apps/local-1532512550423", &app)
	if len(app.Stages) != 2 || len(app.Tasks) != 8 {
		t.Fatalf("app detail: %d stages, %d tasks", len(app.Stages), len(app.Tasks))
	}
	// The UI's brief tasks: the same tasks, what a timeline draws, without
	// their metrics.
	var full, brief struct{ Tasks []map[string]any }
	getJSON(t, ts, "/api/v1/apps/local-1532512550423", &full)
	getJSON(t, ts, "/api/v1/apps/local-1532512550423?tasks=brief", &brief)
	if len(brief.Tasks) != 8 || len(brief.Tasks[0]) != 7 || brief.Tasks[0]["metrics"] != nil ||
		brief.Tasks[3]["taskId"] != full.Tasks[3]["taskId"] || brief.Tasks[3]["finishMs"] != full.Tasks[3]["finishMs"] {
		t.Errorf("brief tasks %v, full %v", brief.Tasks, full.Tasks)
	}
	resp, err := http.Get(ts.URL + "/api/v1/apps/local-1532512550423?tasks=some")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("tasks=some: %d, want 400", resp.StatusCode)
	}
	// One profile per task of stage 0; the slowest task runs "slow".
	var slowest int64 = -1
	var longest int64
	for _, tk := range app.Tasks {
		if tk.StageID == 0 && tk.FinishMs-tk.LaunchMs > longest {
			slowest, longest = tk.TaskID, tk.FinishMs-tk.LaunchMs
		}
	}
	for _, tk := range app.Tasks {
		if tk.StageID != 0 {
			continue
		}
		body := "main;fast 10\n"
		if tk.TaskID == slowest {
			body = "main;slow 30\n"
		}
		name := fmt.Sprintf("app{spark_app_id=local-1532512550423,spark_stage_id=0,spark_task_id=%d}", tk.TaskID)
		if code := post(t, ts, url.Values{"name": {name}}, "", []byte(body)); code != 200 {
			t.Fatal(code)
		}
	}
	var d struct {
		Flamebearer           Flamebearer
		LeftTicks, RightTicks int64
		SlowTaskIDs           []int64 `json:"slowTaskIds"`
		RestTasks             int
		ThresholdMs           int64
	}
	getJSON(t, ts, "/api/v1/apps/local-1532512550423/stages/0/slow-vs-rest?percent=10&type=samples", &d)
	if d.RightTicks != 30 || d.LeftTicks != 30 || !contains(d.Flamebearer.Names, "slow") {
		t.Errorf("slow-vs-rest: left %d right %d names %v; want the slow task (30) against 3 typical tasks (30)", d.LeftTicks, d.RightTicks, d.Flamebearer.Names)
	}
	if fmt.Sprint(d.SlowTaskIDs) != fmt.Sprint([]int64{slowest}) || d.RestTasks != 3 || d.ThresholdMs != longest {
		t.Errorf("slow-vs-rest: slow tasks %v, %d others, threshold %d ms; want [%d], 3, %d", d.SlowTaskIDs, d.RestTasks, d.ThresholdMs, slowest, longest)
	}
	// Nearly all tasks slow still leaves one to compare with.
	d.SlowTaskIDs = nil
	getJSON(t, ts, "/api/v1/apps/local-1532512550423/stages/0/slow-vs-rest?percent=99&type=samples", &d)
	if len(d.SlowTaskIDs) != 3 || d.RestTasks != 1 {
		t.Errorf("99 %%: %d slow tasks, %d others; want 3 and 1", len(d.SlowTaskIDs), d.RestTasks)
	}
	resp, _ = http.Get(ts.URL + "/apps/local-1532512550423/report")
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte(`"data-testid":"timeline"`)) {
		t.Errorf("report page: %d", resp.StatusCode)
	}
	resp, _ = http.Get(ts.URL + "/api/v1/apps/nope")
	if resp.StatusCode != 404 {
		t.Errorf("unknown app: %d", resp.StatusCode)
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

// /api/v1/top lists n functions by self or total, and counts a recursive
// function's total once per stack.
func TestTop(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	body := []byte("main;fib;fib;fib 5\nmain;fib 3\nmain;leaf 4\n")
	if code := post(t, ts, url.Values{"name": {"top{}"}, "format": {"folded"}}, "", body); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"fib", "leaf", "main"}},
		{"&n=1", []string{"fib"}},
		{"&n=0", []string{"fib", "leaf", "main"}},
		{"&sort=total", []string{"main", "fib", "leaf"}},
		{"&sort=total&n=2", []string{"main", "fib"}},
	} {
		var got struct {
			Total     int64
			Functions []struct {
				Name        string
				Self, Total int64
			}
		}
		getJSON(t, ts, "/api/v1/top?query="+url.QueryEscape(`{service_name="top"}`)+c.query, &got)
		var names []string
		for _, f := range got.Functions {
			names = append(names, f.Name)
			if f.Name == "fib" && f.Total != 8 {
				t.Errorf("%s: fib total %d, want 8 (once per stack)", c.query, f.Total)
			}
		}
		if !slices.Equal(names, c.want) || got.Total != 12 {
			t.Errorf("top%s: %v, total %d; want %v, total 12", c.query, names, got.Total, c.want)
		}
	}
	for _, bad := range []string{"n=-1", "n=x", "sort=name"} {
		if code := getStatus(t, ts, "/api/v1/top?"+bad); code != http.StatusBadRequest {
			t.Errorf("top?%s: %d, want 400", bad, code)
		}
	}
}

// A query that takes at least Config.SlowQuery is logged as a warning with
// its path, parameters and tenant; none is without it. Each query counts
// once in the latency histogram, a diff of two selections too.
func TestSlowQueryLog(t *testing.T) {
	for _, c := range []struct {
		slow   time.Duration
		logged bool
	}{{time.Nanosecond, true}, {0, false}, {time.Hour, false}} {
		db, err := store.Open(t.TempDir(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var logs bytes.Buffer
		s := New(Config{Store: db, Logger: slog.New(slog.NewTextHandler(&logs, nil)), SlowQuery: c.slow})
		r := httptest.NewRequest("GET", "/api/v1/diff?base=%7B%7D&next=%7B%7D", nil)
		r.Header.Set("X-Scope-OrgID", "team-a")
		s.ServeHTTP(httptest.NewRecorder(), r)
		want := `level=WARN msg="slow query" path=/api/v1/diff params="base=%7B%7D&next=%7B%7D" tenant=team-a took=`
		if logged := strings.Contains(logs.String(), want); logged != c.logged {
			t.Errorf("slow query %v: logged %v, want %v:\n%s", c.slow, logged, c.logged, logs.String())
		}
		var m dto.Metric
		if err := s.metrics.query.Write(&m); err != nil || m.GetHistogram().GetSampleCount() != 1 {
			t.Errorf("slow query %v: %d queries in the histogram (%v), want 1", c.slow, m.GetHistogram().GetSampleCount(), err)
		}
	}
}

// /metrics counts uploads, rejections by code and queries, with latency
// histograms, the store's state and the process's CPU time.
func TestMetrics(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	q := url.Values{"name": {"m{}"}, "format": {"folded"}}
	if code := post(t, ts, q, "", []byte("main;work 3\nmain;idle 2\n")); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	if code := post(t, ts, url.Values{"name": {"m{}"}, "format": {"jfr"}}, "", []byte("not a recording")); code != 422 {
		t.Fatalf("bad upload: %d", code)
	}
	for range 2 {
		if code := post(t, ts, url.Values{"name": {"k{}"}, "format": {"folded"}}, "", []byte("main 1\n"), "Idempotency-Key", "w1"); code != 200 {
			t.Fatalf("keyed upload: %d", code)
		}
	}
	render(t, ts, "m{}", "samples")
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse as Prometheus text: %v", err)
	}
	value := func(name string) float64 {
		f := families[name]
		if f == nil || len(f.Metric) == 0 {
			t.Errorf("/metrics lacks %s", name)
			return -1
		}
		m := f.Metric[0]
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
		return -1
	}
	for name, want := range map[string]float64{
		"sparkprof_uploads_total":           2,
		"sparkprof_samples_total":           3,
		"sparkprof_ingest_duration_seconds": 2,
		"sparkprof_query_duration_seconds":  1,
		"sparkprof_upload_errors_total":     1,
		"sparkprof_store_head_uploads":      2,
		"sparkprof_upload_duplicates_total": 1,
		"sparkprof_store_upload_keys":       1,
	} {
		if got := value(name); got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	if l := families["sparkprof_upload_errors_total"].GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetValue() != "422" {
		t.Errorf("upload error labels %v, want code 422", l)
	}
	for _, name := range []string{"process_cpu_seconds_total", "go_goroutines"} {
		if families[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// An upload beyond MaxConcurrentUploads waits its turn, counted in
// sparkprof_uploads_waiting, and is stored once a turn is free; one whose
// client gives up while waiting gives its turn back.
func TestUploadTurns(t *testing.T) {
	ts, _ := newTestServer(t, Config{MaxConcurrentUploads: 1})
	srv := ts.Config.Handler.(*Server)
	waiting := func() float64 {
		var m dto.Metric
		if err := srv.metrics.waiting.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	waitFor := func(n float64) {
		for waiting() != n {
			runtime.Gosched()
		}
	}
	release, err := srv.turn(context.Background()) // the only turn
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
	release, err = srv.turn(context.Background())
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

// label-values with a selector lists the values among the samples it
// selects, in the head and, once compacted, from a block's rollup
// (alloc_class) or, for a label the rollup drops (thread_name), its samples.
func TestLabelValuesOfSelection(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	labels := mustGunzip(t, corpus.Read(t, "jfr", "dump1.labels.pb.gz"))
	uploads := []struct {
		app, file string
		labels    []byte // a LabelsSnapshot: its contexts name the threads
	}{
		{"a", "dump1.jfr.gz", labels},
		{"b", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz", nil},
	}
	want := map[string]map[string][]string{} // label -> app -> values
	for _, u := range uploads {
		data := corpus.Read(t, "jfr", u.file)
		q := url.Values{"name": {u.app + "{spark_executor_id=" + u.app + "1}"}, "format": {"jfr"}}
		ct, body := "", data
		if u.labels != nil {
			ct, body = multipartJFR(t, data, gzipBytes(t, u.labels))
		}
		if code := post(t, ts, q, ct, body); code != 200 {
			t.Fatalf("upload %s: %d", u.file, code)
		}
		p, err := format.Decode(mustGunzip(t, data), u.file, format.Options{JFRLabels: u.labels})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{profile.LabelThreadName, "alloc_class"} {
			seen := map[string]bool{}
			for _, s := range p.Samples {
				if v, ok := p.LabelSet(s.Labels).Get(name); ok {
					seen[v] = true
				}
			}
			if want[name] == nil {
				want[name] = map[string][]string{}
			}
			want[name][u.app] = slices.Sorted(maps.Keys(seen))
		}
	}
	if len(want[profile.LabelThreadName]["a"]) == 0 || len(want["alloc_class"]["b"]) == 0 {
		t.Fatalf("the corpus files lack the labels this test needs: %v", want)
	}
	values := func(name, sel string) []string {
		got := []string{}
		getJSON(t, ts, "/api/v1/label-values?"+url.Values{"name": {name}, "query": {sel}}.Encode(), &got)
		return got
	}
	check := func(when string) {
		if got := values("spark_executor_id", `{service_name="a"}`); !slices.Equal(got, []string{"a1"}) {
			t.Errorf("%s: executors of a: %v, want [a1]", when, got)
		}
		if got := values("spark_executor_id", `{}`); !slices.Equal(got, []string{"a1", "b1"}) {
			t.Errorf("%s: all executors: %v, want [a1 b1]", when, got)
		}
		// Label names come from the uploads a selector selects, samples'
		// labels the rollup drops among them.
		var names []string
		getJSON(t, ts, "/api/v1/labels?"+url.Values{"query": {`{service_name="a"}`}}.Encode(), &names)
		if !slices.Contains(names, profile.LabelThreadName) {
			t.Errorf("%s: label names of a: %v, want thread_name among them", when, names)
		}
		for name, byApp := range want {
			for app, w := range byApp {
				if w == nil {
					w = []string{}
				}
				if got := values(name, `{spark_executor_id="`+app+`1"}`); !slices.Equal(got, w) {
					t.Errorf("%s: %s of %s: %d values, want %d", when, name, app, len(got), len(w))
				}
			}
		}
	}
	check("in the head")
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	if code := getStatus(t, ts, "/api/v1/label-values?name=x&query=%7Boops"); code != http.StatusBadRequest {
		t.Errorf("a bad selector: %d, want 400", code)
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
	var agents []Agent
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
		var res ImportResult
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

// TestHeadRollups: a flame graph over uploads not compacted yet is read
// from their rollups (computed at the first query, counted in the head's
// memory) and equals the one their samples make, for every sample type of
// the corpus's recordings, over all time and over a range covering them; a
// range that cuts them reads their samples.
func TestHeadRollups(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	for i, name := range []string{"cortex-dev-01__kafka-0__cpu_lock0_alloc0__0", "dump2", "wall", "FastSlow_2024_01_16_180855"} {
		q := url.Values{"name": {fmt.Sprintf("rollups{spark_executor_id=%d}", i)}, "format": {"jfr"}}
		if code := post(t, ts, q, "", corpus.Read(t, "jfr", name+".jfr.gz")); code != 200 {
			t.Fatalf("%s: %d", name, code)
		}
	}
	var first, last int64
	db.Select("", store.Query{}, func(u *store.Upload) error {
		lo, hi := u.SampleSpan()
		if first == 0 || lo < first {
			first = lo
		}
		last = max(last, hi)
		return nil
	})
	before := db.Stats().HeadBytes
	get := func(sel, typ string, from, until int64) string {
		t.Helper()
		q := url.Values{"query": {sel}, "type": {typ}}
		if from != 0 {
			q.Set("from", strconv.FormatInt(from, 10))
			q.Set("until", strconv.FormatInt(until, 10))
		}
		resp, err := http.Get(ts.URL + "/api/v1/render?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct{ Flamebearer json.RawMessage }
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return string(r.Flamebearer)
	}
	// A matcher on a label the rollups drop, which every sample passes,
	// makes the server read the samples.
	const rolled, sampled = `{service_name="rollups"}`, `{service_name="rollups", spark_task_id=~".*"}`
	for _, typ := range []string{"cpu", "wall", "alloc_objects", "alloc_bytes", "lock_contentions", "lock_delay", "live_objects"} {
		for _, r := range [][2]int64{{0, 0}, {first, last + 1}} {
			got, want := get(rolled, typ, r[0], r[1]), get(sampled, typ, r[0], r[1])
			if got != want {
				t.Errorf("%s over %v: the rollups' flame graph differs from the samples'", typ, r)
			}
		}
	}
	if after := db.Stats().HeadBytes; after <= before {
		t.Errorf("head memory %d before the queries, %d after: the rollups are not counted", before, after)
	}
	// A range that cuts the uploads: the samples in it.
	mid := first + (last-first)/2
	if got, want := get(rolled, "cpu", mid, last+1), get(sampled, "cpu", mid, last+1); got != want {
		t.Error("over half the range: the flame graph differs from the samples'")
	}
	// The series the uploads' timelines answer are the samples'.
	beforeSeries := db.Stats().HeadBytes
	for _, typ := range []string{"cpu", "wall", "alloc_bytes", "lock_delay"} {
		series := func(sel string) string {
			t.Helper()
			var body json.RawMessage
			getJSON(t, ts, "/api/v1/series?"+url.Values{"query": {sel}, "type": {typ}, "by": {"spark_executor_id"}, "step": {"1s"}}.Encode(), &body)
			return string(body)
		}
		if got, want := series(rolled), series(sampled); got != want || len(got) < 100 {
			t.Errorf("%s: the timelines' series differs from the samples':\n got  %.200s\n want %.200s", typ, got, want)
		}
	}
	if after := db.Stats().HeadBytes; after <= beforeSeries {
		t.Errorf("head memory %d before the series, %d after: the timelines are not counted", beforeSeries, after)
	}
	if db.Compact(); db.Stats().HeadBytes != 0 {
		t.Errorf("head memory %d after compaction, want 0: the rollups' or timelines' memory is still counted", db.Stats().HeadBytes)
	}
}
