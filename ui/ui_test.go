package ui

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
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
	if resp, _ := get("/ui/app.css", ""); resp.Header.Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("css type %q", resp.Header.Get("Content-Type"))
	}
	for _, p := range []string{"/ui/nope.js", "/ui/dist/app.js", "/ui/"} {
		if resp, _ := get(p, ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}
