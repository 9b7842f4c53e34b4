package main

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/input"
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
	// The same environment as the agent's settings: SPARKPROF_SERVER,
	// SPARKPROF_TENANT, and SPARKPROF_AUTH_TOKEN or a file.
	server := fs.String("server", cmp.Or(os.Getenv("SPARKPROF_SERVER"), "http://127.0.0.1:4040"), "sparkprof server URL ($SPARKPROF_SERVER)")
	ten := fs.String("tenant", os.Getenv("SPARKPROF_TENANT"), "tenant (X-Scope-OrgID; $SPARKPROF_TENANT)")
	tokenFile := fs.String("auth-token-file", os.Getenv("SPARKPROF_AUTH_TOKEN_FILE"), "file holding the server's bearer token ($SPARKPROF_AUTH_TOKEN_FILE)")
	app := fs.String("app", "", "application the container logs and profiles belong to (default: the Spark app id or file name)")
	parallel := fs.Int("parallel", 4, "inputs sent at once")
	if err := parsePaths(fs, args); err != nil {
		return err
	}
	if *parallel < 1 {
		return fmt.Errorf("%w: --parallel %d: send at least one input at a time", errUsage, *parallel)
	}
	token := os.Getenv("SPARKPROF_AUTH_TOKEN") // as the agent's authToken
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return err
		}
		token = strings.TrimSpace(string(b))
	}
	sources, skipped, err := input.Expand(fs.Args())
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		fmt.Fprintf(e.stderr, "sparkprof: %s\n", input.SkippedSummary("", skipped))
	}
	files, err := importFiles(sources)
	if err != nil {
		return err
	}
	// Event logs of large apps run to gigabytes: bodies stream from disk,
	// and the server's analysis of one may take minutes.
	im := &importer{client: &http.Client{Timeout: 30 * time.Minute}, server: *server, tenant: *ten, token: token, app: *app,
		stderr: e.stderr, prog: newProgress(e.stderr, "importing", len(files))}
	defer im.prog.done()
	if err := im.run(ctx, files, *parallel); err != nil {
		return err
	}
	im.prog.done()
	fmt.Fprintf(e.stderr, "imported %d of %d inputs into %s\n", len(files)-im.failed, len(files), *server)
	im.imported.write(e.stderr, *server)
	if im.duplicates > 0 {
		fmt.Fprintf(e.stderr, "%d of them were profiles the server had already, from an earlier import: not stored again\n", im.duplicates)
	}
	if im.failed > 0 {
		return fmt.Errorf("%d files were refused", im.failed)
	}
	return nil
}

// importFile is one input import sends: a file, or a body written from a
// directory (write).
type importFile struct {
	path, kind string
	write      func(io.Writer) error // the body, when not the file at path
}

// importFiles returns the inputs of sources: event logs, container logs
// and profiles go as they are, a rolling event log as the History
// Server's download of it does (a zip of its directory), a container log
// directory as one text, so that the server analyses its logs together,
// each with its container.
func importFiles(sources []analysis.Source) ([]importFile, error) {
	var files []importFile
	for _, src := range sources {
		st, err := os.Stat(src.Path)
		if err != nil {
			return nil, err
		}
		dir := src.Path
		switch {
		case src.Kind == "eventlog" && st.IsDir():
			files = append(files, importFile{filepath.Clean(dir) + ".zip", src.Kind, func(w io.Writer) error { return writeZip(w, dir) }})
		case src.Kind == "logs" && st.IsDir():
			files = append(files, importFile{filepath.Clean(dir) + ".log", src.Kind, func(w io.Writer) error { return applog.WriteYarnLogs(w, dir) }})
		default:
			files = append(files, importFile{path: src.Path, kind: src.Kind})
		}
	}
	return files, nil
}

// importer sends inputs to a server's /api/v1/import, several at once.
type importer struct {
	client                     *http.Client
	server, tenant, token, app string
	stderr                     io.Writer

	mu                 sync.Mutex // guards prog, failed, duplicates, imported and stderr for the senders
	prog               *progress
	failed, duplicates int // inputs refused; profiles the server had already
	imported           importedApps
}

// run sends files, up to parallel at once: a directory of many small
// profiles takes round trips more than server time. A refused input is
// counted and said; another error ends the run.
func (im *importer) run(ctx context.Context, files []importFile, parallel int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan importFile)
	var wg sync.WaitGroup
	var firstErr error
	for range min(parallel, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range queue {
				refusal, err := im.send(ctx, f)
				im.mu.Lock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
						cancel()
					}
				case refusal != "":
					im.failed++
					im.prog.clear()
					fmt.Fprintf(im.stderr, "sparkprof: %s: %s\n", f.path, refusal)
				}
				im.mu.Unlock()
			}
		}()
	}
feed:
	for _, f := range files {
		im.mu.Lock()
		im.prog.step(f.path)
		im.mu.Unlock()
		select {
		case queue <- f:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// send sends one input, and when a refusal of 503 (a server still
// replaying its log after a restart) or 429 (over its rate) says to,
// again after the wait it asks (or a second), for up to a minute. It
// returns the refusal, if any.
func (im *importer) send(ctx context.Context, f importFile) (string, error) {
	for waited := time.Duration(0); ; {
		refusal, retry, err := im.post(ctx, f)
		if err != nil || retry == 0 || waited+retry > time.Minute {
			return refusal, err
		}
		im.mu.Lock()
		im.prog.detail(fmt.Sprintf("%s: %s; again in %s", f.path, refusal, retry))
		im.mu.Unlock()
		select {
		case <-time.After(retry):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		waited += retry
	}
}

// post sends one input and returns the server's refusal, if any, and
// when a refusal of 503 or 429 says to retry, after how long. A profile
// the server had already is counted in duplicates.
func (im *importer) post(ctx context.Context, f importFile) (refusal string, retry time.Duration, err error) {
	req, err := im.request(ctx, f)
	if err != nil {
		return "", 0, err
	}
	if req.Body != nil {
		defer req.Body.Close()
	}
	resp, err := im.client.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "", 0, fmt.Errorf("import %s: no sparkprof server answers at %s: start one (sparkprof serve), or name it with --server or $SPARKPROF_SERVER", f.path, im.server)
	}
	if err != nil {
		return "", 0, fmt.Errorf("import %s: %w", f.path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		var res importResult
		json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&res)
		im.mu.Lock()
		if res.Duplicate {
			im.duplicates++
		}
		im.imported.add(res)
		im.mu.Unlock()
		return "", 0, nil
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
		retry = time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			retry = time.Duration(s) * time.Second
		}
	}
	return resp.Status + " " + strings.TrimSpace(string(answer)), retry, nil
}

// request returns the import request of f: its body streamed from disk
// (or written from its directory, or with a JFR's LabelsSnapshot as
// Pyroscope's multipart), a profile named by its content so that the
// server answers one it has without reading it.
func (im *importer) request(ctx context.Context, f importFile) (*http.Request, error) {
	var (
		body        io.ReadCloser
		size        int64 = -1 // unknown: sent chunked
		contentType string
	)
	switch lp := format.LabelsBeside(f.path); {
	case f.write != nil:
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(f.write(pw)) }()
		body = pr
	case f.kind == "profile" && lp != "":
		data, ct, err := withLabels(f.path, lp)
		if err != nil {
			return nil, err
		}
		body, size, contentType = io.NopCloser(bytes.NewReader(data)), int64(len(data)), ct
	default:
		fh, err := os.Open(f.path)
		if err != nil {
			return nil, err
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			return nil, err
		}
		body, size = fh, st.Size()
	}
	q := url.Values{"path": {f.path}, "kind": {f.kind}}
	if im.app != "" {
		q.Set("app", im.app)
	}
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(im.server, "/")+"/api/v1/import?"+q.Encode(), body)
	if err != nil {
		body.Close()
		return nil, err
	}
	if f.kind == "profile" && f.write == nil {
		key, err := importKey(f.path, format.LabelsBeside(f.path), im.app)
		if err != nil {
			body.Close()
			return nil, err
		}
		req.Header.Set("Idempotency-Key", key)
		// The server answers a profile it has without reading it: the body
		// goes only once it asks for it.
		req.Header.Set("Expect", "100-continue")
	}
	req.ContentLength = size
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if im.tenant != "" {
		req.Header.Set("X-Scope-OrgID", im.tenant)
	}
	if im.token != "" {
		req.Header.Set("Authorization", "Bearer "+im.token)
	}
	return req, nil
}

// importKey names a profile file for the server (an Idempotency-Key), the
// same on every import of it, so that importing a directory again stores
// only the profiles it did not hold: a digest of what decides the stored
// upload, the app given, the file's name with its directory (Spark's
// profiler layout labels by them), its content and that of the labels
// file beside it (labelsPath, if any). xxhash, as the server's own content
// keys: it reads a large recording 11x faster than SHA-256 here (19 against
// 1.6 GB/s), and a tenant's own files are what it tells apart.
func importKey(path, labelsPath, app string) (string, error) {
	h := xxhash.New()
	fmt.Fprintf(h, "sparkprof import\x00%s\x00%s\x00", app, filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path))))
	for _, p := range []string{path, labelsPath} {
		if p == "" {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p, err)
		}
		h.Write([]byte{0})
	}
	return fmt.Sprintf("import:%016x", h.Sum64()), nil
}

// withLabels returns the JFR at jfrPath and the LabelsSnapshot at
// labelsPath as the multipart body Pyroscope's Java agent sends, with its
// content type.
func withLabels(jfrPath, labelsPath string) ([]byte, string, error) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, part := range []struct{ name, path string }{{"jfr", jfrPath}, {"labels", labelsPath}} {
		data, err := os.ReadFile(part.path)
		if err != nil {
			return nil, "", err
		}
		w, err := mw.CreateFormFile(part.name, part.name)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(data); err != nil {
			return nil, "", err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), mw.FormDataContentType(), nil
}

// writeZip writes a zip of the files of directory dir, under its name, to
// w, as the History Server serves a rolling event log. The files are
// stored, not compressed again: Spark compresses them already when told to.
func writeZip(w io.Writer, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(w)
	for _, ent := range entries {
		if !ent.Type().IsRegular() {
			continue
		}
		if err := addToZip(zw, dir, ent.Name()); err != nil {
			return fmt.Errorf("zip %s: %w", dir, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("zip %s: %w", dir, err)
	}
	return nil
}

func addToZip(zw *zip.Writer, dir, name string) error {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := zw.CreateHeader(&zip.FileHeader{Name: filepath.Base(dir) + "/" + name, Method: zip.Store})
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}
