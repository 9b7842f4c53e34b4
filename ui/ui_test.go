package ui

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func TestAssets(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", Index)
	mux.Handle("GET /ui/", Assets("/ui/"))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	get := func(path, enc string) (*http.Response, []byte) {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		req.Header.Set("Accept-Encoding", enc)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, page := get("/", "")
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte(`src="/ui/app.js"`)) {
		t.Fatalf("index: %d %.100s", resp.StatusCode, page)
	}
	_, plain := get("/ui/app.js", "")
	resp, gz := get("/ui/app.js", "gzip, deflate")
	if resp.Header.Get("Content-Encoding") != "gzip" || len(gz)*10 > len(plain)*7 {
		t.Fatalf("gzip: encoding %q, %d bytes for %d", resp.Header.Get("Content-Encoding"), len(gz), len(plain))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	unz, _ := io.ReadAll(zr)
	if !bytes.Equal(unz, plain) || !bytes.Contains(plain, []byte("createRoot")) {
		t.Error("gzip body differs from the script")
	}
	// A browser with the current script revalidates it without a body.
	req, _ := http.NewRequest("GET", ts.URL+"/ui/app.js", nil)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	again, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(again.Body)
	again.Body.Close()
	if resp.Header.Get("ETag") == "" || again.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("revalidation with ETag %q: %d, %d bytes", resp.Header.Get("ETag"), again.StatusCode, len(body))
	}
	if resp, _ := get("/ui/app.css", ""); resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("css type %q", resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/ui/nope.js", "/ui/dist/app.js", "/ui/"} {
		if resp, _ := get(p, ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestReportBundle: the offline report's script and style are there, and
// can be inlined in a page: nothing in them ends their element early
// (</script, </style) or puts a script's text in an HTML comment (<!--).
func TestReportBundle(t *testing.T) {
	script, style := ReportScript(), ReportStyle()
	if !strings.Contains(script, "createRoot") || !strings.Contains(script, `getElementById("data")`) {
		t.Errorf("report script of %d bytes is not the report's bundle", len(script))
	}
	if !strings.Contains(style, ".timeline") {
		t.Errorf("report style of %d bytes lacks the timeline's", len(style))
	}
	for _, bad := range []string{"</script", "<!--"} {
		if strings.Contains(strings.ToLower(script), bad) {
			t.Errorf("report script contains %q", bad)
		}
	}
	if strings.Contains(strings.ToLower(style), "</style") {
		t.Error("report style contains </style")
	}
}
