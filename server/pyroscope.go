package server

import (
	"net/http"
	"sort"
	"strconv"

	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/query"
)

// defaultMaxNodes bounds the flame graphs of Pyroscope's render endpoints
// unless the query says otherwise, as Pyroscope's own default does.
const defaultMaxNodes = 8192

// maxNodes reads a query's max-nodes (or maxNodes) parameter: the nodes a
// flame graph keeps (0: all), def when absent.
func maxNodes(r *http.Request, def int) (int, error) {
	q := r.URL.Query()
	v := q.Get("maxNodes")
	if v == "" {
		v = q.Get("max-nodes")
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, badRequest("maxNodes %q: want a number of flame graph nodes, 0 for all", v)
	}
	return n, nil
}

// handlePyroscopeRender answers as Pyroscope's /pyroscope/render does: the
// flame graph with Pyroscope's units (at most maxNodes nodes, 8,192 by
// default), and a timeline of the selection's values per step; with
// groupBy, one timeline per value of that label.
func (s *Server) handlePyroscopeRender(r *http.Request) (any, error) {
	req, err := query.ParseRequest(r.URL.Query(), "query")
	if err != nil {
		return nil, err
	}
	limit, err := maxNodes(r, defaultMaxNodes)
	if err != nil {
		return nil, err
	}
	groupBy := r.URL.Query().Get("groupBy")
	var by []string
	if groupBy != "" {
		by = []string{groupBy}
	}
	from, until := req.Query.From, req.Query.Until
	// The flame graph from the stacks (blocks' rollups where they serve),
	// the timeline from sums as the uploads are read (blocks' timelines):
	// neither merges the selection with its times.
	tree, _, _, err := s.query.Tree(r.Context(), tenant(r), req, limit)
	if err != nil {
		return nil, err
	}
	t := tree.Type
	units, rate := pyroscope.RenderUnits(t)
	req.Type = t.String()
	// The timeline spans the range (its open ends the samples').
	sum, err := s.query.Sum(r.Context(), tenant(r), req, query.Sums{Step: query.TimelineStep(from, until), By: by, UntimedAtUpload: true, From: from, Until: until})
	if err != nil {
		return nil, err
	}
	tl, groups := query.NewTimeline(sum.Series, from, until, sum.Step, groupBy != "")
	ans := map[string]any{
		"version":     1,
		"flamebearer": query.NewFlamebearer(tree),
		"metadata":    map[string]any{"format": "single", "units": units, "sampleRate": rate, "name": t.Name},
		"timeline":    tl,
	}
	if groupBy != "" {
		ans["groups"] = groups
	}
	return ans, nil
}

// handlePyroscopeDiff answers Pyroscope's render-diff: leftQuery over
// leftFrom–leftUntil against rightQuery over rightFrom–rightUntil (each
// side's range defaulting to from–until), as /api/v1/diff with base and
// next, bounded to 8,192 nodes unless maxNodes says otherwise.
func (s *Server) handlePyroscopeDiff(r *http.Request) (any, error) {
	if err := hasSides(r, "leftQuery", "rightQuery"); err != nil {
		return nil, err
	}
	q := r.URL.Query()
	for to, from := range map[string]string{
		"base": "leftQuery", "baseFrom": "leftFrom", "baseUntil": "leftUntil",
		"next": "rightQuery", "nextFrom": "rightFrom", "nextUntil": "rightUntil",
	} {
		if v := q.Get(from); v != "" {
			q.Set(to, v)
		}
	}
	if q.Get("maxNodes") == "" && q.Get("max-nodes") == "" {
		q.Set("maxNodes", strconv.Itoa(defaultMaxNodes))
	}
	r.URL.RawQuery = q.Encode()
	return s.handleDiff(r)
}

// handlePyroscopeLabelValues answers Pyroscope's label-values: for the
// label __name__, the profile type IDs of the data (those Pyroscope 1.x
// and Grafana put before a selector); for others, /api/v1/label-values.
func (s *Server) handlePyroscopeLabelValues(r *http.Request) (any, error) {
	if r.URL.Query().Get("label") != pyroscope.NameLabel {
		return s.handleLabelValues(r)
	}
	q, err := labelRange(r)
	if err != nil {
		return nil, err
	}
	types, err := s.query.StoredTypes(r.Context(), tenant(r), q)
	if err != nil {
		return nil, err
	}
	ids := []string{}
	for _, t := range types {
		ids = append(ids, pyroscope.TypeID(t))
	}
	sort.Strings(ids)
	return ids, nil
}
