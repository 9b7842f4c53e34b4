package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/jfr-parser/pprof"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
)

// postBody posts body to path with headers hdr and returns the status and
// answer.
func postBody(t *testing.T, ts *httptest.Server, path, contentType string, body []byte, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+path, bytes.NewReader(body))
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
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// datedJFR returns the corpus's cortex recording (one chunk) with its
// chunk's start time set to at.
func datedJFR(t *testing.T, at int64) []byte {
	t.Helper()
	data := mustGunzip(t, corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"))
	binary.BigEndian.PutUint64(data[32:], uint64(at)) // the chunk header's start time (ns)
	return data
}

// A recording whose chunk header dates it centuries away is refused, or,
// sent with its window, has its samples clamped into it and counted; the
// render of everything answers.
func TestAbsurdSampleTimes(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	year2200 := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	jfr := datedJFR(t, year2200)
	code, body := postBody(t, ts, "/ingest?name=absurd&format=jfr", "", jfr)
	if code != 400 || !strings.Contains(body, "more than a day after it arrived") {
		t.Errorf("a recording dated 2200: %d %s, want 400 naming its window", code, body)
	}
	now := time.Now()
	q := url.Values{"name": {"absurd"}, "format": {"jfr"}, "from": {fmt.Sprint(now.Add(-10 * time.Second).Unix())}, "until": {fmt.Sprint(now.Unix())}}
	code, body = postBody(t, ts, "/ingest?"+q.Encode(), "", jfr)
	var ack struct{ Samples, Clamped int }
	json.Unmarshal([]byte(body), &ack)
	if code != 200 || ack.Clamped == 0 || ack.Clamped < ack.Samples {
		t.Errorf("with its window: %d %s, want 200 with every sample clamped", code, body)
	}
	// The same recording dated in 1970 and in its window: the render of
	// all time spans its samples, as before, and the data of both.
	q.Set("name", "absurd{executor=2}")
	code, body = postBody(t, ts, "/ingest?"+q.Encode(), "", datedJFR(t, 1e9))
	if code != 200 {
		t.Fatalf("a recording dated 1970, with its window: %d %s", code, body)
	}
	var r struct {
		Timeline query.Timeline `json:"timeline"`
	}
	getJSON(t, ts, "/pyroscope/render?query=absurd{}&from=0", &r)
	if n := len(r.Timeline.Samples); n == 0 || n > query.MaxSteps {
		t.Errorf("render's timeline: %d steps, want 1 to %d", n, query.MaxSteps)
	}
}

// A timeline of points centuries apart (stored before times were checked)
// widens its step instead of allocating past the end of time.
func TestTimelineOfAbsurdSpan(t *testing.T) {
	series := []query.StepSeries{{Labels: []string{""}, Points: [][2]int64{{-9e15, 1}, {1e12, 2}, {9e15, 3}}}}
	tl, _ := query.NewTimeline(series, 0, 0, 10*time.Second, false)
	var sum int64
	for _, v := range tl.Samples {
		sum += v
	}
	if len(tl.Samples) > query.MaxSteps || sum != 6 {
		t.Errorf("timeline of %d steps summing to %d; want at most %d steps summing to 6", len(tl.Samples), sum, query.MaxSteps)
	}
}

// The small holes: each answered as a client's mistake, with nothing left
// behind and no more of the request echoed than needed.
func TestHardening(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "eventlogs")
	ts, db := newTestServer(t, Config{EventLogDir: logs})
	damaged := corpus.Read(t, "eventlogs", "nvidia", "rp_sql_eventlog.zstd")
	for i := 200; i < 264; i++ {
		damaged[i] ^= 0x5a // early in the zstd stream
	}
	cases := []struct {
		name, path, contentType string
		body                    []byte
		hdr                     []string
		want                    int
		says                    string
	}{
		{"until before from", "/ingest?name=app&from=2000&until=1000", "", []byte("a;b 1\n"), nil, 400, "before from"},
		{"empty folded body", "/ingest?name=app&format=folded", "", nil, nil, 400, "empty body"},
		{"folded body without stacks", "/ingest?name=app&format=folded", "", []byte("\n\n"), nil, 400, "no stacks"},
		{"control character in the app", "/ingest?name=" + url.QueryEscape("app\x1b[31m"), "", []byte("a;b 1\n"), nil, 400, "control characters"},
		{"control character in a label value", "/ingest?name=" + url.QueryEscape("app{host=a\nb}"), "", []byte("a;b 1\n"), nil, 400, "control characters"},
		{"long tenant", "/ingest?name=app", "", []byte("a;b 1\n"), []string{"X-Scope-OrgID", strings.Repeat("t", 127)}, 400, "at most 120 bytes"},
		{"import of ..", "/api/v1/import?kind=eventlog&path=..", "", corpus.Read(t, "eventlogs", "apache", "local-1642039451826"), nil, 400, "names no file"},
		{"import of .", "/api/v1/import?kind=eventlog&path=.", "", corpus.Read(t, "eventlogs", "apache", "local-1642039451826"), nil, 400, "names no file"},
		{"event log damaged early in its zstd stream", "/api/v1/import?kind=eventlog&path=rp_sql_eventlog.zstd", "", damaged, nil, 422, "zstd stream is damaged"},
		{"import of dir/..", "/api/v1/import?path=" + url.QueryEscape(`x\..`), "", []byte("a;b 1\n"), nil, 400, "names no file"},
	}
	for _, c := range cases {
		code, body := postBody(t, ts, c.path, c.contentType, c.body, c.hdr...)
		if code != c.want || !strings.Contains(body, c.says) || strings.Contains(body, dir) {
			t.Errorf("%s: %d %s; want %d saying %q, without the server's paths", c.name, code, body, c.want, c.says)
		}
	}
	// Nothing of the refused imports is left on disk.
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
	if n := countUploads(t, db, ""); n != 0 {
		t.Errorf("%d of the refused uploads stored", n)
	}

	// Half a megabyte of name (a request line holds at most a megabyte)
	// comes back as a few hundred bytes.
	big := "app{" + strings.Repeat("x", 1<<19)
	code, body := postBody(t, ts, "/ingest?name="+url.QueryEscape(big), "", []byte("a;b 1\n"))
	if code != 400 || len(body) > 4096 {
		t.Errorf("a 512 KB name: %d and %d bytes of answer, want 400 and a short one", code, len(body))
	}

	// A JFR's contexts whose label names hold an escape, a newline and a
	// byte that is not UTF-8, as a LabelsSnapshot may say.
	var snap pprof.LabelsSnapshot
	if err := snap.UnmarshalVT(mustGunzip(t, corpus.Read(t, "jfr", "dump1.labels.pb.gz"))); err != nil {
		t.Fatal(err)
	}
	for k, v := range snap.Strings {
		snap.Strings[k] = v + "\x1b\n\xff"
	}
	labels, err := snap.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	ct, mp := multipartJFR(t, corpus.Read(t, "jfr", "dump1.jfr.gz"), labels)
	if code, body := postBody(t, ts, "/ingest?name=app&format=jfr", ct, mp); code != 400 || !strings.Contains(body, "label name") {
		t.Errorf("contexts with control characters in their label names: %d %s, want 400 naming the label", code, body)
	}
}

// Signing in redirects only to this server's paths: a backslash, which
// browsers read as a slash, or a control character makes it the start page.
func TestSignInRedirects(t *testing.T) {
	ts, _ := newTestServer(t, Config{AuthToken: "s3cret"})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for next, want := range map[string]string{
		`/\127.0.0.1:19999/x`:        "/",
		`/\/elsewhere.example`:       "/",
		"/\t/elsewhere.example":      "/",
		"//elsewhere.example":        "/",
		"https://elsewhere.example/": "/",
		"/flame?query=a":             "/flame?query=a",
	} {
		resp, err := client.PostForm(ts.URL+"/login", url.Values{"token": {"s3cret"}, "next": {next}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Location"); resp.StatusCode != 303 || got != want {
			t.Errorf("next %q: %d to %q, want 303 to %q", next, resp.StatusCode, got, want)
		}
	}
}
