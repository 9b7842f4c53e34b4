package server

import (
	"mime"
	"net/http"
	"time"

	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/internal/errkind"
)

// uploadSender returns the sender of an upload to /ingest, by its labels
// when its name parses.
func uploadSender(r *http.Request) ingest.Sender {
	q := r.URL.Query()
	who := ingest.Sender{Tenant: tenant(r), Remote: r.RemoteAddr, SpyName: q.Get("spyName"), Name: q.Get("name")}
	if name, err := ingest.ParseName(who.Name); err == nil {
		who.Labels = name.Labels
	}
	return who
}

// uploadFailed counts an upload that failed with err for its sender, by
// the status it answers, and returns err.
func (s *Server) uploadFailed(who ingest.Sender, err error) error {
	s.metrics.uploadError(statusOf(err))
	s.ingest.Senders().Failed(who, err.Error())
	return err
}

// acknowledged answers an upload that is stored: its id, samples and how
// many of their times were clamped into its window; replayed, stored
// before under its key, and not stored again.
type acknowledged struct {
	replayed         bool
	id               uint64
	samples, clamped int
}

func (a acknowledged) respond(w http.ResponseWriter) error {
	if a.replayed {
		w.Header().Set(replayedHeader, "true")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	writeJSON(w, struct {
		ID      uint64 `json:"id"`
		Samples int    `json:"samples"`
		Clamped int    `json:"clamped,omitempty"`
	}{a.id, a.samples, a.clamped})
	return nil
}

// replayedHeader, set to "true", tells a sender that its upload was stored
// before, under the same Idempotency-Key, and not stored again.
const replayedHeader = "Idempotent-Replayed"

// handleIngest takes an upload of Pyroscope's ingest protocol: its name
// and rate first, a retry of a stored upload before its body is read, and
// then, in its turn, the body through the ingest pipeline.
func (s *Server) handleIngest(r *http.Request) (any, error) {
	arrived := time.Now()
	ten := tenant(r)
	q := r.URL.Query()
	who := uploadSender(r)
	name, err := ingest.ParseName(q.Get("name"))
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	if err := s.ingest.Allow(ten); err != nil {
		return nil, s.uploadFailed(who, err)
	}
	params, err := ingest.ParseParams(q)
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	key, err := ingest.ParseKey(r.Header.Get("Idempotency-Key"))
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	if _, ok := s.ingest.KeyStored(ten, key); ok {
		s.ingest.Senders().Retried(who)
		return acknowledged{replayed: true}, nil
	}
	// The body first, then a turn: a sender that sends slowly holds
	// memory it sent, not a turn others wait for.
	body, err := s.ingest.ReadBody(r.Body, r.ContentLength, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	defer body.Free()
	release, err := s.ingest.Turn(r.Context())
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	defer release()
	parts, err := ingest.ParseBody(body.Data, r.Header.Get("Content-Type"), r.Header.Get("Content-Encoding"))
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	in, err := ingest.LegacyProfile(name, q, params, parts, key)
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	in.Bytes, in.Body = len(body.Data), body
	st, err := s.ingest.Ingest(ten, in, arrived)
	if errkind.Of(err) == errkind.Unprocessable {
		err = errkind.Errorf(errkind.Unprocessable, "%w%s", err, ingest.EncodingHint(r.Header.Get("Content-Encoding"), parts.Data))
	}
	if err != nil {
		return nil, s.uploadFailed(who, err)
	}
	if st.Duplicate {
		s.ingest.Senders().Retried(who)
		return acknowledged{replayed: true}, nil
	}
	s.ingest.Senders().Uploaded(who, len(body.Data), params.Dropped, st.Upload.Until)
	return acknowledged{id: st.Upload.ID, samples: len(st.Upload.Profile.Samples), clamped: st.Clamped}, nil
}

// handleImport takes one file, as `sparkprof import` sends it: an event log
// or container log streamed to the app store, else (in its turn) a
// profile, with its LabelsSnapshot when sent as Pyroscope's multipart.
func (s *Server) handleImport(r *http.Request) (any, error) {
	q := r.URL.Query()
	ten := tenant(r)
	f := ingest.File{Name: q.Get("path"), Kind: q.Get("kind"), App: q.Get("app"), Format: q.Get("format")}
	if f.Name == "" {
		return nil, badRequest("path: name the file being imported")
	}
	var err error
	if f.Key, err = ingest.ParseKey(r.Header.Get("Idempotency-Key")); err != nil {
		return nil, err
	}
	if f.Kind != "eventlog" && f.Kind != "logs" {
		if id, ok := s.ingest.KeyStored(ten, f.Key); ok {
			// Answered before the body is read: a client that sent
			// "Expect: 100-continue" does not send it.
			return imported{&ingest.Result{ID: id, Duplicate: true}}, nil
		}
	}
	switch f.Kind {
	case "eventlog":
		return s.ingest.ImportEventLog(ten, f.Name, r.Body)
	case "logs":
		return s.ingest.ImportLogs(ten, f.Name, f.App, r.Body, nil)
	case "", "profile":
	default:
		return nil, badRequest("kind %q: want eventlog, logs or profile (or none to tell by content)", f.Kind)
	}
	body, err := s.ingest.ReadBody(r.Body, r.ContentLength, s.cfg.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	defer body.Free()
	release, err := s.ingest.Turn(r.Context())
	if err != nil {
		return nil, err
	}
	defer release()
	f.Data, f.Body = body.Data, body
	// A JFR with its LabelsSnapshot comes as Pyroscope's agent sends them:
	// multipart, with "jfr" and "labels" parts.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "multipart/form-data" {
		parts, err := ingest.ParseBody(f.Data, r.Header.Get("Content-Type"), "")
		if err != nil {
			return nil, err
		}
		f.Data, f.JFRLabels = parts.Data, parts.Labels
	}
	res, err := s.ingest.Import(ten, f)
	if err != nil {
		return nil, err
	}
	if !res.Duplicate && len(res.Labels) > 0 {
		s.ingest.Senders().Uploaded(ingest.Sender{Tenant: ten, Remote: r.RemoteAddr, Labels: res.Labels}, len(f.Data), 0, 0)
	}
	return imported{res}, nil
}

// imported answers an import: its result, and Idempotent-Replayed for a
// profile stored before.
type imported struct{ *ingest.Result }

func (i imported) respond(w http.ResponseWriter) error {
	if i.Duplicate {
		w.Header().Set(replayedHeader, "true")
	}
	writeJSON(w, i.Result)
	return nil
}

func (s *Server) handleAgents(r *http.Request) (any, error) {
	return s.ingest.Senders().List(tenant(r)), nil
}
