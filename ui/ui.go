// Package ui serves sparkprof's web UI: a single page bundled from src/
// by build.mjs into dist/ and embedded in the binary, so that the UI works
// on clusters without internet access.
package ui

import (
	"bytes"
	"embed"
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

// Index serves the UI's page; the page routes by URL hash.
func Index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, files, "index.html")
}

// asset is an embedded file with its gzip form.
type asset struct {
	plain, gz []byte
	kind      string
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
		assets[e.Name()] = asset{plain: b, gz: buf.Bytes(), kind: mime.TypeByExtension(path.Ext(e.Name()))}
	}
}

// Assets serves the bundled scripts and styles under the path prefix it
// is mounted at (e.g. /ui/), gzip-compressed when the client accepts it
// (the script is 1.3 MB, 0.7 MB compressed).
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
		body := a.plain
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h.Set("Content-Encoding", "gzip")
			body = a.gz
		}
		w.Write(body)
	}))
}
