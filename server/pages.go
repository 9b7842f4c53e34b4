package server

import (
	"net/http"

	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/report"
)

// handleReport serves an application's offline HTML report (timeline,
// findings, stages, executors).
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	rep := s.apps.get(tenant(r), r.PathValue("id"))
	if rep == nil {
		httpError(w, http.StatusNotFound, "no application %q", r.PathValue("id"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := report.WriteHTML(w, s.withLive(r.Context(), tenant(r), rep)); err != nil {
		s.log.Warn("report failed", "err", err)
	}
}

// handleFlame renders the selection as the self-contained HTML flame graph
// of package flamegraph, which filters by thread pool, stage and thread
// name: the merge keeps those alone, so the threads of one name in many
// executors, and the tasks of a stage, are one.
func (s *Server) handleFlame(w http.ResponseWriter, r *http.Request) {
	p, req, ok := s.parsedSelection(w, r, "query", pageLabels)
	if !ok {
		return
	}
	if len(p.Samples) == 0 {
		httpError(w, http.StatusNotFound, "no samples match %s", r.URL.Query().Get("query"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := flamegraph.HTML(w, p, flamegraph.Options{Title: r.URL.Query().Get("query"), Type: req.typ}); err != nil {
		s.log.Warn("flame page failed", "err", err)
	}
}
