package main

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
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
		summary: "send event logs, container logs and profiles to a sparkprof server; a directory (spark.eventLog.dir, Spark 4's profiler output) sends what it holds",
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
	// Event logs, container logs and profiles go as they are; other
	// directories expand to the ones they hold.
	type file struct {
		path, kind string
		data       []byte // when not the file at path: a rolling log directory, zipped
	}
	sources, skipped, err := analysis.Expand(fs.Args())
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(e.stderr, "sparkprof: %s\n", analysis.SkippedSummary("", skipped))
	}
	var files []file
	failed, logDirs := 0, 0
	for _, src := range sources {
		st, err := os.Stat(src.Path)
		if err != nil {
			return err
		}
		switch {
		case src.Kind == "eventlog" && st.IsDir():
			// A rolling log goes as the History Server's download of
			// it does: a zip of its directory.
			data, err := zipDir(src.Path)
			if err != nil {
				return err
			}
			files = append(files, file{filepath.Clean(src.Path) + ".zip", src.Kind, data})
		case src.Kind == "logs" && st.IsDir():
			failed++
			logDirs++
			fmt.Fprintf(e.stderr, "sparkprof: %s: a directory of container logs; import its files with --app NAME, or the `yarn logs` output as one file\n", src.Path)
		default:
			files = append(files, file{path: src.Path, kind: src.Kind})
		}
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	prog := newProgress(e.stderr, "importing", len(files))
	defer prog.done()
	for _, f := range files {
		prog.step(f.path)
		data := f.data
		var err error
		if data == nil {
			if data, err = os.ReadFile(f.path); err != nil {
				return err
			}
		}
		contentType := ""
		if lp := format.LabelsBeside(f.path); f.kind == "profile" && lp != "" {
			if data, contentType, err = withLabels(data, lp); err != nil {
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
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
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
	fmt.Fprintf(e.stderr, "imported %d of %d inputs into %s\n", len(files)+logDirs-failed, len(files)+logDirs, *server)
	if failed > 0 {
		return fmt.Errorf("%d files were refused", failed)
	}
	return nil
}

// withLabels returns a JFR and the LabelsSnapshot in file labelsPath as the
// multipart body Pyroscope's Java agent sends, with its content type.
func withLabels(jfr []byte, labelsPath string) ([]byte, string, error) {
	labels, err := os.ReadFile(labelsPath)
	if err != nil {
		return nil, "", err
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, part := range []struct {
		name string
		data []byte
	}{{"jfr", jfr}, {"labels", labels}} {
		w, err := mw.CreateFormFile(part.name, part.name)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(part.data); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), mw.FormDataContentType(), nil
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
