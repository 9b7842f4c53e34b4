package server

import (
	"net/http"

	"github.com/sparkprof/sparkprof/ingest"
)

// pyroscopeUpload returns what r, an upload to /ingest, says in
// Pyroscope's ingest protocol.
func pyroscopeUpload(r *http.Request) *ingest.Pyroscope {
	return &ingest.Pyroscope{Query: r.URL.Query(), ContentType: r.Header.Get("Content-Type"), ContentEncoding: r.Header.Get("Content-Encoding")}
}

// uploadSender returns the sender of an upload to /ingest, by its labels
// when its name parses.
func uploadSender(r *http.Request) ingest.Sender {
	return pyroscopeUpload(r).Sender(tenant(r), r.RemoteAddr)
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

// handleIngest takes an upload of Pyroscope's ingest protocol: the
// request made one ingest.Request, taken in one call.
func (s *Server) handleIngest(r *http.Request) (any, error) {
	st, err := s.ingest.Upload(r.Context(), ingest.Request{
		Tenant: tenant(r), Remote: r.RemoteAddr, Key: r.Header.Get("Idempotency-Key"),
		Body: r.Body, Size: r.ContentLength, MaxBytes: s.cfg.MaxBodyBytes,
		Protocol: pyroscopeUpload(r),
	})
	switch {
	case err != nil:
		s.metrics.uploadError(statusOf(err))
		return nil, err
	case st.Duplicate:
		return acknowledged{replayed: true}, nil
	}
	return acknowledged{id: st.Upload.ID, samples: len(st.Upload.Profile.Samples), clamped: st.Clamped}, nil
}

// handleImport takes one file, as `sparkprof import` sends it: an event log
// or container log streamed to the app store, else (in its turn) a
// profile, with its LabelsSnapshot when sent as Pyroscope's multipart. The
// request is made one ingest.Request and file, taken in one call.
func (s *Server) handleImport(r *http.Request) (any, error) {
	q := r.URL.Query()
	f := ingest.File{Name: q.Get("path"), Kind: q.Get("kind"), App: q.Get("app"), Format: q.Get("format"), ContentType: r.Header.Get("Content-Type")}
	if f.Name == "" {
		return nil, badRequest("path: name the file being imported")
	}
	res, err := s.ingest.ImportFile(r.Context(), ingest.Request{
		Tenant: tenant(r), Remote: r.RemoteAddr, Key: r.Header.Get("Idempotency-Key"),
		Body: r.Body, Size: r.ContentLength, MaxBytes: s.cfg.MaxBodyBytes,
	}, f)
	if err != nil {
		return nil, err
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
