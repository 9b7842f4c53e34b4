package server

import (
	"net/http"

	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/report"
)

// handleReport serves an application's offline HTML report (timeline,
// findings, stages, executors), with what the store holds of it now.
func (s *Server) handleReport(r *http.Request) (any, error) {
	rep, err := s.query.App(r.Context(), tenant(r), appOf(r))
	if err != nil {
		return nil, err
	}
	return responderFunc(func(w http.ResponseWriter) error {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		return report.WriteHTML(w, rep)
	}), nil
}

// handleFlame renders the selection as the self-contained HTML flame graph
// of package flamegraph, which filters by thread pool, stage and thread
// name: the merge keeps those alone, so the threads of one name in many
// executors, and the tasks of a stage, are one.
func (s *Server) handleFlame(r *http.Request) (any, error) {
	p, req, err := s.selection(r, "query", query.KeepPage)
	if err != nil {
		return nil, err
	}
	if len(p.Samples) == 0 {
		return nil, errkind.Errorf(errkind.NotFound, "no samples match %s", r.URL.Query().Get("query"))
	}
	return responderFunc(func(w http.ResponseWriter) error {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		return flamegraph.HTML(w, p, flamegraph.Options{Title: r.URL.Query().Get("query"), Type: req.Type})
	}), nil
}
