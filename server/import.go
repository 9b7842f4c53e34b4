package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// handleImport stores a file sent whole: an event log is saved and
// analysed (see /api/v1/apps); a profile is stored as an upload: ?path= names the file as
// it was on disk, so that Spark's profiler layout
// (<appId>/profile-exec-<id>.jfr) labels it, and ?app= sets service_name
// (default: the app id or the file name).
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

func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query()
	name := q.Get("path")
	if name == "" {
		httpError(w, http.StatusBadRequest, "path: name the file being imported")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		httpError(w, http.StatusRequestEntityTooLarge, "file larger than %d bytes", s.cfg.MaxBodyBytes)
		return
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, "reading body: %v", err)
		return
	}
	if q.Get("kind") == "eventlog" || (q.Get("kind") == "" && looksLikeEventLog(body, s.cfg.MaxDecodedBytes)) {
		rep, err := s.apps.add(tenant(r), name, body)
		if err != nil {
			httpError(w, http.StatusUnprocessableEntity, "event log %s: %v", name, err)
			return
		}
		writeJSON(w, map[string]any{"app": rep.App, "findings": len(rep.Findings)})
		return
	}
	p, err := format.Decode(body, name, format.Options{Format: q.Get("format"), MaxSize: s.cfg.MaxDecodedBytes})
	if err != nil {
		httpError(w, http.StatusUnprocessableEntity, "%v (event logs and container logs are read by `sparkprof analyze`; the server imports profiles)", err)
		return
	}
	app := q.Get("app")
	if app == "" {
		app, _ = p.Labels.Get(profile.LabelAppID)
	}
	if app == "" {
		base := path.Base(strings.ReplaceAll(name, "\\", "/"))
		app = strings.TrimSuffix(strings.TrimSuffix(base, ".gz"), path.Ext(strings.TrimSuffix(base, ".gz")))
	}
	ls := profile.Labels{{Name: profile.LabelServiceName, Value: app}}
	for _, l := range p.Labels {
		if l.Name == profile.LabelAppID || l.Name == profile.LabelExecutorID || l.Name == profile.LabelRole || l.Name == profile.LabelAppAttempt {
			ls = append(ls, l)
		}
	}
	ls = ls.Normalize()
	p.Labels = p.Labels.Merge(ls)
	u := &store.Upload{From: p.Start, Until: p.End, Labels: ls, Agent: "import", Bytes: len(body), Profile: p}
	if err := s.cfg.Store.Append(tenant(r), u); err != nil {
		httpError(w, http.StatusServiceUnavailable, "storing failed: %v", err)
		return
	}
	s.metrics.uploaded(len(body), len(p.Samples), time.Since(start))
	s.agents.uploaded(tenant(r), ls, r.RemoteAddr, len(body))
	writeJSON(w, map[string]any{"id": u.ID, "samples": len(p.Samples), "labels": ls})
}
