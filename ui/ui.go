// Package ui serves sparkprof's web UI: a single page bundled from src/
// by build.mjs into dist/ and embedded in the binary, so that the UI works
// on clusters without internet access. It also holds the bundles of the
// offline report and of the offline flame graph page, built from the same
// components, for packages report and flamegraph to inline.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
)

//go:embed index.html dist/app.js dist/app.css dist/app.js.LEGAL.txt
var files embed.FS

var (
	//go:embed dist/report.js
	reportScript string
	//go:embed dist/report.css
	reportStyle string
	//go:embed dist/flame.js
	flameScript string
	//go:embed dist/flame.css
	flameStyle string
)

// ReportScript returns the offline report's script: src/report and the
// components it shares with the web UI, React included, in one file. It
// reads the report's data from the JSON in the page's script element
// #data and draws into its element #root.
func ReportScript() string { return reportScript }

// ReportStyle returns the offline report's style sheet.
func ReportStyle() string { return reportStyle }

// FlameScript returns the offline flame graph page's script: src/flamepage
// and the web UI's flame graph, React included, in one file. It reads the
// profile from the JSON in the page's script element #data (as package
// flamegraph writes it) and draws into its element #root.
func FlameScript() string { return flameScript }

// FlameStyle returns the offline flame graph page's style sheet.
func FlameStyle() string { return flameStyle }

// Index serves the UI's page; the page routes by URL hash.
func Index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, files, "index.html")
}

// asset is an embedded file with its gzip form and an ETag of its content.
type asset struct {
	plain, gz []byte
	kind      string
	etag      string
}

var (
	loadOnce sync.Once
	assets   map[string]asset
)

// loadAssets reads dist/ and compresses each file once.
func loadAssets() {
	assets = map[string]asset{}
	entries, _ := fs.ReadDir(files, "dist")
	for _, e := range entries {
		b, err := fs.ReadFile(files, "dist/"+e.Name())
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		sum := sha256.Sum256(b)
		assets[e.Name()] = asset{plain: b, gz: buf.Bytes(), kind: mime.TypeByExtension(path.Ext(e.Name())), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
}

// Assets serves the bundled scripts and styles under the path prefix it
// is mounted at (e.g. /ui/), gzip-compressed when the client accepts it
// (the script is 0.3 MB, 0.1 MB compressed). A browser that has the
// current version (If-None-Match its ETag) gets 304 without a body.
func Assets(prefix string) http.Handler {
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loadOnce.Do(loadAssets)
		a, ok := assets[path.Clean("/" + r.URL.Path)[1:]]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.kind)
		h.Set("Cache-Control", "no-cache")
		h.Set("Vary", "Accept-Encoding")
		h.Set("ETag", a.etag)
		if r.Header.Get("If-None-Match") == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := a.plain
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.Set("Content-Encoding", "gzip")
			body = a.gz
		}
		w.Write(body)
	}))
}
