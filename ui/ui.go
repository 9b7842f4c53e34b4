// Package ui serves sparkprof's web UI: a single page bundled from src/
// by build.mjs into dist/ and embedded in the binary, so that the UI works
// on clusters without internet access.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed index.html dist/app.js dist/app.css dist/app.js.LEGAL.txt
var files embed.FS

// Index serves the UI's page; the page routes by URL hash.
func Index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, files, "index.html")
}

// Assets serves the bundled scripts and styles under the path prefix
// it is mounted at (e.g. /ui/).
func Assets(prefix string) http.Handler {
	dist, err := fs.Sub(files, "dist")
	if err != nil {
		panic(err) // the embedded tree always has dist
	}
	return http.StripPrefix(prefix, http.FileServerFS(dist))
}
