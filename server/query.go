package server

import (
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/format/speedscope"
	"github.com/sparkprof/sparkprof/internal/duration"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// selection parses the selector in query parameter selParam (and the
// range, type and states) and merges what it selects, keeping the labels
// kept says.
func (s *Server) selection(r *http.Request, selParam string, kept query.LabelsKept) (*profile.Profile, query.Request, error) {
	req, err := query.ParseRequest(r.URL.Query(), selParam)
	if err != nil {
		return nil, req, err
	}
	req.Keep = kept
	p, err := s.query.Merge(r.Context(), tenant(r), req)
	return p, req, err
}

// treeAnswer is the call tree of a selection (query.Engine.Tree).
type treeAnswer struct {
	tree    *profile.Tree
	folded  int              // the nodes maxNodes folded away
	merged  *profile.Profile // the selection's stacks
	missing []string         // the blocks of the bucket that could not be read
}

// tree merges the stacks the selector in parameter selParam selects and
// returns their call tree, bounded to maxNodes nodes when it is > 0.
func (s *Server) tree(r *http.Request, selParam string, maxNodes int) (treeAnswer, error) {
	req, err := query.ParseRequest(r.URL.Query(), selParam)
	if err != nil {
		return treeAnswer{}, err
	}
	req.Missing = new(query.Missing)
	t, folded, p, err := s.query.Tree(r.Context(), tenant(r), req, maxNodes)
	return treeAnswer{t, folded, p, req.Missing.Names()}, err
}

// renderResponse is the answer of /api/v1/render.
type renderResponse struct {
	Flamebearer *query.Flamebearer   `json:"flamebearer"`
	Type        string               `json:"type"`
	Unit        string               `json:"unit"`
	Types       []profile.SampleType `json:"types"`
	Samples     int                  `json:"samples"`
	// Folded counts the frames maxNodes folded into "other" frames.
	Folded int `json:"folded"`
	// MissingBlocks names the blocks of the bucket that could not be read
	// and are left out of the answer.
	MissingBlocks []string `json:"missingBlocks,omitempty"`
}

func (s *Server) handleRender(r *http.Request) (any, error) {
	limit, err := maxNodes(r, 0)
	if err != nil {
		return nil, err
	}
	a, err := s.tree(r, "query", limit)
	if err != nil {
		return nil, err
	}
	t := a.tree
	return renderResponse{Flamebearer: query.NewFlamebearer(t), Type: t.Type.Name, Unit: t.Type.Unit, Types: query.PresentTypes(a.merged), Samples: len(a.merged.Samples), Folded: a.folded,
		MissingBlocks: a.missing}, nil
}

func (s *Server) handleTop(r *http.Request) (any, error) {
	q := r.URL.Query()
	n := 100
	if v := q.Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			return nil, badRequest("n %q: want the number of functions to list, 0 for all", v)
		}
	}
	order := q.Get("sort")
	if order != "" && order != "self" && order != "total" {
		return nil, badRequest("sort %q: want self or total", order)
	}
	a, err := s.tree(r, "query", 0)
	if err != nil {
		return nil, err
	}
	t, missing := a.tree, a.missing
	rows := t.Top(0)
	if order == "total" {
		profile.SortByTotal(rows)
	}
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	answer := map[string]any{"type": t.Type, "total": t.Total(), "functions": rows}
	if missing != nil {
		answer["missingBlocks"] = missing
	}
	return answer, nil
}

// handleExport answers the selection in the format asked. Only pprof
// holds labels: by default those that have no value per task or thread
// (app, executor, host, stage...), which the blocks' rollups keep, so that
// a whole app exports as fast as its flame graph; with labels=all, every
// label and thread. The other formats hold stacks alone.
func (s *Server) handleExport(r *http.Request) (any, error) {
	to := r.URL.Query().Get("format")
	switch to {
	case "svg", "pprof", "speedscope", "folded", "":
	default:
		return nil, badRequest("format %q: want pprof, speedscope, folded or svg", to)
	}
	kept := query.KeepNone
	switch v := r.URL.Query().Get("labels"); {
	case v != "" && v != "all":
		return nil, badRequest("labels %q: want all (every label and thread; pprof only), or leave it out for the labels without a value per task or thread", v)
	case to != "pprof":
	case v == "all":
		kept = query.KeepAll
	default:
		kept = query.KeepCoarse
	}
	p, req, err := s.selection(r, "query", kept)
	if err != nil {
		return nil, err
	}
	t := query.SampleType(p, req.Type)
	if !query.HasType(p, t) {
		return nil, errkind.Errorf(errkind.NotFound, "no %s samples selected", t.Name)
	}
	return responderFunc(func(w http.ResponseWriter) error {
		switch to {
		case "svg":
			w.Header().Set("Content-Type", "image/svg+xml")
			return flamegraph.SVG(w, profile.NewTree(p, t), flamegraph.Options{Title: r.URL.Query().Get("query")})
		case "pprof":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Disposition", `attachment; filename="profile.pb.gz"`)
			return pprof.Encode(w, p, pprof.EncodeOptions{Types: []profile.SampleType{t}})
		case "speedscope":
			w.Header().Set("Content-Type", "application/json")
			return speedscope.Encode(w, p, speedscope.EncodeOptions{Types: []profile.SampleType{t}})
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		return folded.Encode(w, p, folded.EncodeOptions{Type: t})
	}), nil
}

// labelRange parses the optional from, until and selector (query) of a
// label query.
func labelRange(r *http.Request) (store.Query, error) {
	from, until, err := query.ParseRange(r.URL.Query(), "")
	if err != nil {
		return store.Query{}, badRequest("%v", err)
	}
	ms, _, err := query.ParseSelector(r.URL.Query().Get("query"))
	if err != nil {
		return store.Query{}, badRequest("query: %v", err)
	}
	q := query.NewRequest(ms, "", from, until).Query
	return q, nil
}

// handleLabels answers the label names; Pyroscope's path (withName) lists
// __name__, which names the profile type, first when there is data.
func (s *Server) handleLabels(withName bool) apiFunc {
	return func(r *http.Request) (any, error) {
		q, err := labelRange(r)
		if err != nil {
			return nil, err
		}
		names, err := s.query.LabelNames(r.Context(), tenant(r), q)
		if err != nil {
			return nil, err
		}
		if withName && len(names) > 0 {
			names = append([]string{pyroscope.NameLabel}, names...)
		}
		return names, nil
	}
}

func (s *Server) handleLabelValues(r *http.Request) (any, error) {
	name := r.URL.Query().Get("name")
	if name == "" {
		name = r.URL.Query().Get("label")
	}
	if name == "" {
		return nil, badRequest("name: missing; say which label's values to list (name=spark_stage_id)")
	}
	q, err := labelRange(r)
	if err != nil {
		return nil, err
	}
	vals, err := s.query.LabelValues(r.Context(), tenant(r), name, q)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for v := range vals[name] {
		out = append(out, v)
	}
	sort.Strings(out)
	return out, nil
}

// handleDiff answers a diff of two selections (base and next query
// parameters, same type): Pyroscope's diff flamebearer with the baseline
// normalised to the new total.
func (s *Server) handleDiff(r *http.Request) (any, error) {
	if err := hasSides(r, "base", "next"); err != nil {
		return nil, err
	}
	limit, err := maxNodes(r, 0)
	if err != nil {
		return nil, err
	}
	base, _, err := s.selection(r, "base", query.KeepNone)
	if err != nil {
		return nil, err
	}
	next, nextReq, err := s.selection(r, "next", query.KeepNone)
	if err != nil {
		return nil, err
	}
	return diffAnswer(base, next, nextReq.Type, limit, nil)
}

// hasSides reports, as an error, a request that does not name both sides
// of a diff in the parameters base and next (as the caller spells them).
// An empty selector ({}) selects everything, but a missing side is more
// likely a mistake than a diff against all the data.
func hasSides(r *http.Request, base, next string) error {
	q := r.URL.Query()
	for _, side := range []string{base, next} {
		if q.Get(side) == "" {
			return badRequest("%s: missing; a diff needs both %s and %s (a selector such as {spark_app_id=\"app-1\"}; {} selects everything)", side, base, next)
		}
	}
	return nil
}

// diffAnswer is the diff of base and next in the type typ asks for
// (query.SampleType), with the frames past limit folded and the fields of
// extra added.
func diffAnswer(base, next *profile.Profile, typ string, limit int, extra map[string]any) (map[string]any, error) {
	tree, err := query.Diff(base, next, typ)
	if err != nil {
		return nil, err
	}
	folded := tree.Trim(limit)
	ans := map[string]any{
		"version":     1,
		"flamebearer": query.NewDiffFlamebearer(tree),
		"metadata":    map[string]any{"format": "double", "name": tree.Type.Name, "unit": tree.Type.Unit},
		"leftTicks":   tree.Root.BaseTotal,
		"rightTicks":  tree.Root.Total,
		"folded":      folded,
	}
	maps.Copy(ans, extra)
	return ans, nil
}

// breakdownRow is one group of a breakdown: its keys in the order asked
// and the summed value.
type breakdownRow struct {
	Keys  []string `json:"keys"`
	Value int64    `json:"value"`
}

// handleBreakdown sums the selected samples of one type by thread state
// and labels: ?by=state,spark_stage_id,spark_executor_id. It answers where
// time went without a flame graph, e.g. wall time per stage split into
// RUNNABLE, BLOCKED, WAITING and NATIVE (the latency view).
func (s *Server) handleBreakdown(r *http.Request) (any, error) {
	req, err := query.ParseRequest(r.URL.Query(), "query")
	if err != nil {
		return nil, err
	}
	by := strings.Split(r.URL.Query().Get("by"), ",")
	if len(by) == 0 || by[0] == "" || len(by) > 4 {
		return nil, badRequest("by: name 1 to 4 labels or state, comma-separated")
	}
	sum, err := s.query.Sum(r.Context(), tenant(r), req, query.Sums{Step: query.AllTime, By: by, UntimedAtUpload: true})
	if err != nil {
		return nil, err
	}
	rows := make([]*breakdownRow, 0, len(sum.Series))
	var total int64
	for _, ss := range sum.Series {
		row := &breakdownRow{Keys: ss.Labels}
		for _, pt := range ss.Points {
			row.Value += pt[1]
		}
		total += row.Value
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Value != rows[j].Value {
			return rows[i].Value > rows[j].Value
		}
		return strings.Join(rows[i].Keys, "\x00") < strings.Join(rows[j].Keys, "\x00")
	})
	return map[string]any{"type": sum.Type, "by": by, "total": total, "rows": rows}, nil
}

// seriesAnswer is the answer of /api/v1/series.
type seriesAnswer struct {
	Type    profile.SampleType `json:"type"`
	StepMs  int64              `json:"stepMs"`
	By      string             `json:"by,omitempty"`
	Series  []valueSeries      `json:"series"`
	Untimed int64              `json:"untimed"` // value of samples without a time
}

// valueSeries is one series of summed sample values: [timeMs, value] per
// step that has samples.
type valueSeries struct {
	Key    string     `json:"key,omitempty"`
	Points [][2]int64 `json:"points"`
}

// handleSeries sums the selected samples of one type per time step (?step=,
// default 10s; auto: about 300 points over the selection's samples),
// optionally one series per value of a label (?by=).
func (s *Server) handleSeries(r *http.Request) (any, error) {
	req, err := query.ParseRequest(r.URL.Query(), "query")
	if err != nil {
		return nil, err
	}
	step := 10 * time.Second
	if v := r.URL.Query().Get("step"); v == "auto" {
		step = 0 // Sum picks it
	} else if v != "" {
		d, err := duration.Parse(v)
		if err != nil || d <= 0 {
			return nil, badRequest("step %q: want a duration such as 10s or 1m", v)
		}
		step = d
	}
	by := r.URL.Query().Get("by")
	var byLabels []string
	if by != "" {
		byLabels = []string{by}
	}
	sum, err := s.query.Sum(r.Context(), tenant(r), req, query.Sums{Step: step, By: byLabels})
	if err != nil {
		return nil, err
	}
	ans := seriesAnswer{Type: sum.Type, By: by, StepMs: sum.Step.Milliseconds(), Untimed: sum.Untimed}
	for _, ss := range sum.Series {
		vs := valueSeries{Points: ss.Points}
		if by != "" {
			vs.Key = ss.Labels[0]
		}
		ans.Series = append(ans.Series, vs)
	}
	return ans, nil
}

// metricSeries is one metric series of /api/v1/metrics: [timeMs, value]
// per point.
type metricSeries struct {
	Name   string            `json:"name"`
	Unit   string            `json:"unit"`
	Labels map[string]string `json:"labels"`
	Points [][2]float64      `json:"points"`
}

// handleMetricSeries answers /api/v1/metrics: the metric series (GC
// pauses, CPU load, heap used, ...) the selected uploads carry, one per
// metric and label set over all of them.
func (s *Server) handleMetricSeries(r *http.Request) (any, error) {
	req, err := query.ParseRequest(r.URL.Query(), "query")
	if err != nil {
		return nil, err
	}
	ss, err := s.query.MetricSeries(tenant(r), req.Query, r.URL.Query().Get("name"))
	if err != nil {
		return nil, err
	}
	out := make([]metricSeries, 0, len(ss))
	for _, sr := range ss {
		ms := metricSeries{Name: sr.Name, Unit: sr.Unit, Labels: make(map[string]string, len(sr.Labels))}
		for _, l := range sr.Labels {
			ms.Labels[l.Name] = l.Value
		}
		step := (len(sr.Points) + query.MaxSteps - 1) / query.MaxSteps // thin a long series evenly
		for i := 0; i < len(sr.Points); i += max(step, 1) {
			ms.Points = append(ms.Points, [2]float64{float64(sr.Points[i].Time / 1e6), sr.Points[i].Value})
		}
		out = append(out, ms)
	}
	return map[string]any{"series": out}, nil
}
