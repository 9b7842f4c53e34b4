package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// newServer returns a server of cfg, closed when tb ends.
func newServer(tb testing.TB, cfg Config) *Server {
	tb.Helper()
	s := New(cfg)
	tb.Cleanup(func() { s.Close() })
	return s
}

func newTestServer(t *testing.T, cfg Config) (*httptest.Server, *store.DB) {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store = db
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := httptest.NewServer(newServer(t, cfg))
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

// offlineTotal is synth.DecodedTotal.
func offlineTotal(t *testing.T, data []byte, labels []byte, typ string) int64 {
	t.Helper()
	return synth.DecodedTotal(t, data, labels, typ)
}

func render(t *testing.T, ts *httptest.Server, sel, typ string, hdr ...string) renderResponse {
	t.Helper()
	var r renderResponse
	getJSON(t, ts, "/api/v1/render?"+url.Values{"query": {sel}, "type": {typ}}.Encode(), &r, hdr...)
	return r
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
	var agents []ingest.Agent
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

func TestUIAndFlamePage(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	if code := post(t, ts, url.Values{"name": {"straggler"}}, "", []byte("main;work 3\n")); code != 200 {
		t.Fatal(code)
	}
	for path, want := range map[string]string{
		"/":          `<div id="root">`,
		"/ui/app.js": "createRoot",
		// The web UI's flame graph draws the page from its embedded data.
		"/flame?" + url.Values{"query": {`{service_name="straggler"}`}, "type": {"samples"}}.Encode(): `<script type="application/json" id="data">`,
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
		s := newServer(t, Config{Store: db, Logger: slog.New(slog.NewTextHandler(&logs, nil)), SlowQuery: c.slow})
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
