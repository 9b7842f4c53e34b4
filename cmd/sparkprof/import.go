package main

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/format"
)

func init() {
	register(&command{
		name:    "import",
		usage:   "--server URL [--tenant T] [--auth-token-file F] [--app NAME] PATH...",
		summary: "send event logs, container logs and profile files or directories (e.g. Spark 4's profiler output) to a sparkprof server",
		run:     runImport,
	})
}

func runImport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "import")
	server := fs.String("server", "http://127.0.0.1:4040", "sparkprof server URL")
	ten := fs.String("tenant", "", "tenant (X-Scope-OrgID)")
	tokenFile := fs.String("auth-token-file", "", "file holding the server's bearer token")
	app := fs.String("app", "", "application the container logs and profiles belong to (default: the Spark app id or file name)")
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	var token string
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		token = strings.TrimSpace(string(b))
	}
	// Event logs and container logs go as they are; everything else
	// expands to profile files.
	type file struct {
		path, kind string
		data       []byte // when not the file at path: a rolling log directory, zipped
	}
	var files []file
	for _, path := range fs.Args() {
		kind, err := analysis.Classify(path)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		switch {
		case kind == "eventlog" && st.IsDir():
			// A rolling log goes as the History Server's download of
			// it does: a zip of its directory.
			data, err := zipDir(path)
			if err != nil {
				return err
			}
			files = append(files, file{filepath.Clean(path) + ".zip", kind, data})
			continue
		case kind == "logs" && st.IsDir():
			return fmt.Errorf("%s: a directory of container logs; import its files with --app NAME, or the `yarn logs` output as one file", path)
		case kind != "profile":
			files = append(files, file{path: path, kind: kind})
			continue
		}
		more, err := format.Expand([]string{path})
		if err != nil {
			return err
		}
		for _, m := range more {
			files = append(files, file{path: m, kind: "profile"})
		}
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	prog := newProgress(e.stderr, "importing", len(files))
	defer prog.done()
	failed := 0
	for _, f := range files {
		prog.step(f.path)
		data := f.data
		if data == nil {
			var err error
			if data, err = os.ReadFile(f.path); err != nil {
				return err
			}
		}
		q := url.Values{"path": {f.path}, "kind": {f.kind}}
		if *app != "" {
			q.Set("app", *app)
		}
		req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(*server, "/")+"/api/v1/import?"+q.Encode(), bytes.NewReader(data))
		if err != nil {
			return err
		}
		if *ten != "" {
			req.Header.Set("X-Scope-OrgID", *ten)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("import %s: %w", f.path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed++
			prog.clear()
			fmt.Fprintf(e.stderr, "sparkprof: %s: %s %s\n", f.path, resp.Status, strings.TrimSpace(string(body)))
		}
	}
	prog.done()
	fmt.Fprintf(e.stderr, "imported %d of %d files into %s\n", len(files)-failed, len(files), *server)
	if failed > 0 {
		return fmt.Errorf("%d files were refused", failed)
	}
	return nil
}

// zipDir returns a zip of the files of directory dir, under its name, as
// the History Server serves a rolling event log. The files are stored, not
// compressed again: Spark compresses them already when told to.
func zipDir(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, ent := range entries {
		if !ent.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: filepath.Base(dir) + "/" + ent.Name(), Method: zip.Store})
		if err != nil {
			return nil, fmt.Errorf("zip %s: %w", dir, err)
		}
		if _, err := w.Write(data); err != nil {
			return nil, fmt.Errorf("zip %s: %w", dir, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("zip %s: %w", dir, err)
	}
	return b.Bytes(), nil
}
