package server

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/readall"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// looksLikeEventLog reports whether data is a Spark event log: JSON lines
// starting with a listener event, plain or in one of Spark's codecs.
func looksLikeEventLog(data []byte, max int64) bool {
	head := data[:min(len(data), 64)]
	switch eventlog.Detect("", head) {
	case eventlog.Zstd, eventlog.LZ4, eventlog.Snappy, eventlog.LZF:
		return true
	case eventlog.Gzip:
		if d, err := format.Decompress(data[:min(len(data), 1<<20)], "head", max); err == nil {
			head = d
		}
	}
	return bytes.HasPrefix(bytes.TrimSpace(head[:min(len(head), 64)]), []byte(`{"Event"`))
}

// looksLikeLog reports whether the first MiB of data (decompressed) has a
// line in a layout package applog knows.
func (s *Server) looksLikeLog(data []byte) bool {
	head, err := format.Decompress(data[:min(len(data), 1<<20)], "head", s.cfg.MaxDecodedBytes)
	if err != nil {
		head = data[:min(len(data), 1<<20)] // a gzip stream cut short: judge the raw bytes
	}
	l, err := applog.Parse(bytes.NewReader(head), "head", applog.Options{})
	return err == nil && l.Layout != ""
}

// ImportFile is one file sent whole to the server.
type ImportFile struct {
	// Name is the file's path as it was on disk: Spark's profiler layout
	// (<appId>/profile-exec-<id>.jfr) labels the profile it holds.
	Name string
	// Kind is "eventlog", "logs", "profile", or "" to tell by content.
	Kind string
	// App is the application the file belongs to: container logs of one
	// App are analysed together; profiles get it as service_name (default:
	// the Spark app id in the profile, or the file name).
	App string
	// Format forces a profile format (see format.Options).
	Format string
	Data   []byte
	// JFRLabels is the Pyroscope LabelsSnapshot of a JFR's contexts, as
	// saved beside it (see format.LabelsBeside), gzipped or not.
	JFRLabels []byte
	// Key names a profile the same on every import of it (store.Upload's
	// Key): a profile imported again within the store's key window is not
	// stored twice. Event logs and container logs replace their earlier
	// import by name and need none.
	Key string
}

// ImportResult says what an import stored.
type ImportResult struct {
	App      *spark.Summary `json:"app,omitempty"` // for event logs and container logs
	Findings int            `json:"findings,omitempty"`
	ID       uint64         `json:"id,omitempty"` // for profiles: the upload
	// Duplicate says that the profile was stored before under the same key
	// (ImportFile.Key), as upload ID, and not stored again.
	Duplicate bool           `json:"duplicate,omitempty"`
	Samples   int            `json:"samples,omitempty"`
	Labels    profile.Labels `json:"labels,omitempty"`
}

// importError is an import failure with the HTTP status it answers.
type importError struct {
	code int
	err  error
}

func (e *importError) Error() string { return e.err.Error() }
func (e *importError) Unwrap() error { return e.err }

// importEventLog saves an event log read from body and analyses it.
func (s *Server) importEventLog(tenant, name string, body io.Reader) (*ImportResult, error) {
	rep, err := s.apps.add(tenant, name, body)
	if err != nil {
		return nil, logError("event log "+name, "serve --max-log-gb; or let serve --eventlog-dir read it in place", err)
	}
	return &ImportResult{App: &rep.App, Findings: len(rep.Findings)}, nil
}

// logError is the answer to a log whose saving or analysis failed with
// err: 413 past the size limit, which hint tells how to raise, else 422.
func logError(what, hint string, err error) *importError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &importError{http.StatusRequestEntityTooLarge, fmt.Errorf("%s: larger than %d bytes (%s)", what, tooBig.Limit, hint)}
	}
	return &importError{http.StatusUnprocessableEntity, fmt.Errorf("%s: %w", what, err)}
}

// appFromName is the app a file belongs to when nothing else names it: its
// name less directories and extensions.
func appFromName(name string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(name, "\\", "/")), ".gz")
	return strings.TrimSuffix(base, path.Ext(base))
}

// importLogs saves a container log read from body with the other files of
// its app (app, else the file name's) and analyses the app again. A body
// without a log line in its first MiB is refused; decodeErr, if not nil,
// says why it was not taken for a profile.
func (s *Server) importLogs(tenant, name, app string, body io.Reader, decodeErr error) (*ImportResult, error) {
	br := bufio.NewReaderSize(body, 1<<20)
	head, _ := br.Peek(1 << 20)
	if !s.looksLikeLog(head) {
		err := fmt.Errorf("%s: not a container log (no line in a log4j or JSON layout in the first MiB)", name)
		if decodeErr != nil {
			err = fmt.Errorf("%s: neither an event log, a container log nor a profile (as a profile: %w)", name, decodeErr)
		}
		return nil, &importError{http.StatusUnprocessableEntity, err}
	}
	rep, err := s.apps.addToBundle(tenant, cmp.Or(app, appFromName(name)), name, br)
	if err != nil {
		return nil, logError("container log "+name, "serve --max-log-gb", err)
	}
	return &ImportResult{App: &rep.App, Findings: len(rep.Findings)}, nil
}

// Import stores one file for tenant, as POST /api/v1/import does: an event
// log is saved and analysed (see /api/v1/apps); container logs are saved
// with the other files of their app and the app analysed again; a profile
// is stored as an upload, and also feeds the metric series of a
// log-analysed app it names.
func (s *Server) Import(tenant string, f ImportFile) (*ImportResult, error) {
	start := time.Now()
	kind := f.Kind
	if kind == "" && looksLikeEventLog(f.Data, s.cfg.MaxDecodedBytes) {
		kind = "eventlog"
	}
	if kind == "eventlog" {
		return s.importEventLog(tenant, f.Name, bytes.NewReader(f.Data))
	}
	if id, ok := s.keyStored(tenant, f.Key); ok && kind != "logs" {
		s.metrics.duplicates.Inc()
		return &ImportResult{ID: id, Duplicate: true}, nil
	}
	var p *profile.Profile
	var decodeErr error
	if kind != "logs" {
		opts := format.Options{Format: f.Format, MaxSize: s.cfg.MaxDecodedBytes}
		if f.JFRLabels != nil {
			labels, err := format.Decompress(f.JFRLabels, f.Name+" labels", s.cfg.MaxDecodedBytes)
			if err != nil {
				return nil, &importError{http.StatusUnprocessableEntity, fmt.Errorf("labels part: %w", err)}
			}
			opts.JFRLabels = labels
			kind = "profile"
		}
		p, decodeErr = format.Decode(f.Data, f.Name, opts)
		switch {
		case errors.Is(decodeErr, format.ErrTooLarge):
			return nil, &importError{http.StatusRequestEntityTooLarge, decodeErr}
		case decodeErr != nil && kind == "profile":
			return nil, &importError{http.StatusUnprocessableEntity, decodeErr}
		case decodeErr != nil:
			kind = "logs"
		}
	}
	if kind == "logs" {
		return s.importLogs(tenant, f.Name, f.App, bytes.NewReader(f.Data), decodeErr)
	}
	app := f.App
	if app == "" {
		app, _ = p.Labels.Get(profile.LabelAppID)
	}
	app = cmp.Or(app, appFromName(f.Name))
	bundle := s.apps.bundle(tenant, app)
	if bundle != nil && len(p.Series) > 0 {
		rep, err := s.apps.addToBundle(tenant, app, f.Name, bytes.NewReader(f.Data))
		if err != nil {
			return nil, &importError{http.StatusUnprocessableEntity, fmt.Errorf("container log %s: %w", f.Name, err)}
		}
		bundle = rep
		if len(p.Samples) == 0 {
			return &ImportResult{App: &rep.App, Findings: len(rep.Findings)}, nil
		}
		p.Series = nil // the bundle's report has them; stored too, the app's page would show them twice
	}
	ls := profile.Labels{{Name: profile.LabelServiceName, Value: app}}
	if bundle != nil {
		ls = append(ls, profile.Label{Name: profile.LabelAppID, Value: bundle.App.ID})
	}
	for _, l := range p.Labels {
		if l.Name == profile.LabelAppID || l.Name == profile.LabelExecutorID || l.Name == profile.LabelRole || l.Name == profile.LabelAppAttempt {
			ls = append(ls, l)
		}
	}
	ls = ls.Normalize()
	p.Labels = p.Labels.Merge(ls)
	u := &store.Upload{From: p.Start, Until: p.End, Labels: ls, Agent: "import", Bytes: len(f.Data), Profile: p, Key: f.Key}
	if err := s.cfg.Store.Append(tenant, u); errors.Is(err, store.ErrDuplicate) {
		s.metrics.duplicates.Inc()
		return &ImportResult{ID: u.ID, Duplicate: true, Labels: ls}, nil
	} else if err != nil {
		return nil, &importError{http.StatusServiceUnavailable, fmt.Errorf("storing failed: %w", err)}
	}
	s.metrics.uploaded(len(f.Data), len(p.Samples), time.Since(start))
	return &ImportResult{ID: u.ID, Samples: len(p.Samples), Labels: ls}, nil
}

func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := ImportFile{Name: q.Get("path"), Kind: q.Get("kind"), App: q.Get("app"), Format: q.Get("format")}
	if f.Name == "" {
		httpError(w, http.StatusBadRequest, "path: name the file being imported")
		return
	}
	var err error
	if f.Key, err = idempotencyKey(r); err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if id, ok := s.keyStored(tenant(r), f.Key); ok && f.Kind != "eventlog" && f.Kind != "logs" {
		// Answered before the body is read: a client that sent "Expect:
		// 100-continue" does not send it.
		s.metrics.duplicates.Inc()
		w.Header().Set(replayedHeader, "true")
		writeJSON(w, &ImportResult{ID: id, Duplicate: true})
		return
	}
	switch f.Kind {
	case "", "eventlog", "logs", "profile":
	default:
		httpError(w, http.StatusBadRequest, "kind %q: want eventlog, logs or profile (or none to tell by content)", f.Kind)
		return
	}
	if f.Kind == "eventlog" || f.Kind == "logs" {
		// Logs stream to disk: a large app's run to gigabytes.
		body := http.MaxBytesReader(w, r.Body, s.cfg.MaxLogBytes)
		var res *ImportResult
		var err error
		if f.Kind == "eventlog" {
			res, err = s.importEventLog(tenant(r), f.Name, body)
		} else {
			res, err = s.importLogs(tenant(r), f.Name, f.App, body, nil)
		}
		var ie *importError
		if errors.As(err, &ie) {
			httpError(w, ie.code, "%v", ie.err)
			return
		}
		writeJSON(w, res)
		return
	}
	release, err := s.turn(r.Context())
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	defer release()
	f.Data, err = readall.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), min(r.ContentLength, s.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		httpError(w, http.StatusRequestEntityTooLarge, "file larger than %d bytes", s.cfg.MaxBodyBytes)
		return
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, "reading body: %v", err)
		return
	}
	// A JFR with its LabelsSnapshot comes as Pyroscope's agent sends them:
	// multipart, with "jfr" and "labels" parts.
	if mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" {
		parts, err := multipartParts(f.Data, params["boundary"])
		if err != nil {
			httpError(w, http.StatusBadRequest, "multipart: %v", err)
			return
		}
		f.Data, f.JFRLabels = parts.data, parts.labels
	}
	res, err := s.Import(tenant(r), f)
	var ie *importError
	if errors.As(err, &ie) {
		httpError(w, ie.code, "%v", ie.err)
		return
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if res.Duplicate {
		w.Header().Set(replayedHeader, "true")
	} else if len(res.Labels) > 0 {
		s.agents.uploaded(sender{tenant: tenant(r), remote: r.RemoteAddr, labels: res.Labels}, len(f.Data), 0, 0)
	}
	writeJSON(w, res)
}
