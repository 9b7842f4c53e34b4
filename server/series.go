package server

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

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
func (s *Server) handleMetricSeries(w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r, "query")
	if err != nil {
		httpError(w, http.StatusBadRequest, "query: %v", err)
		return
	}
	ss, err := s.selectSeries(tenant(r), req.query, r.URL.Query().Get("name"))
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	out := make([]metricSeries, 0, len(ss))
	for _, sr := range ss {
		ms := metricSeries{Name: sr.Name, Unit: sr.Unit, Labels: make(map[string]string, len(sr.Labels))}
		for _, l := range sr.Labels {
			ms.Labels[l.Name] = l.Value
		}
		step := (len(sr.Points) + maxSteps - 1) / maxSteps // thin a long series evenly
		for i := 0; i < len(sr.Points); i += max(step, 1) {
			ms.Points = append(ms.Points, [2]float64{float64(sr.Points[i].Time / 1e6), sr.Points[i].Value})
		}
		out = append(out, ms)
	}
	writeJSON(w, map[string]any{"series": out})
}

// selectSeries returns the metric series of the uploads q selects whose
// labels match all of q's matchers (a label a series lacks matches as
// ""), and of name if given: points outside q's time range are left out,
// and the series of one metric and label set in several uploads are joined
// in time order.
func (s *Server) selectSeries(tenant string, q store.Query, name string) ([]profile.Series, error) {
	var out []profile.Series
	index := map[string]int{}
	err := s.cfg.Store.Select(tenant, q, func(u *store.Upload) error {
		ss, err := u.LoadSeries()
		if err != nil {
			return err
		}
		for _, sr := range ss {
			if (name != "" && sr.Name != name) || !sr.Labels.Match(q.Matchers) {
				continue
			}
			key := sr.Name + "\x00" + sr.Unit + "\x00" + sr.Labels.String()
			i, ok := index[key]
			if !ok {
				i = len(out)
				index[key] = i
				out = append(out, profile.Series{Name: sr.Name, Unit: sr.Unit, Labels: sr.Labels})
			}
			for _, pt := range sr.Points {
				if (q.From == 0 || pt.Time >= q.From) && (q.Until == 0 || pt.Time < q.Until) {
					out[i].Points = append(out[i].Points, pt)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(sr profile.Series) bool { return len(sr.Points) == 0 })
	for i := range out {
		slices.SortStableFunc(out[i].Points, func(a, b profile.Point) int { return cmp.Compare(a.Time, b.Time) })
	}
	slices.SortFunc(out, func(a, b profile.Series) int {
		return strings.Compare(a.Name+"\x00"+a.Labels.String(), b.Name+"\x00"+b.Labels.String())
	})
	return out, nil
}

// withLiveMetrics returns rep's metrics and those of the app's live
// uploads (the agent's GC, heap and CPU load), as report series.
func (s *Server) withLiveMetrics(tenant string, rep *analysis.Report) []analysis.Series {
	m, err := profile.NewMatcher(profile.LabelAppID, profile.MatchEqual, rep.App.ID)
	if err != nil {
		return rep.Metrics
	}
	ss, err := s.selectSeries(tenant, store.Query{Matchers: []profile.Matcher{m}}, "")
	if err != nil {
		s.log.Warn("reading the app's metric series failed", "app", rep.App.ID, "err", err)
		return rep.Metrics
	}
	return append(slices.Clip(rep.Metrics), analysis.ReportSeries(ss, "", "")...)
}
