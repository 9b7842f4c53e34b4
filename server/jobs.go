package server

import (
	"net/http"
	"strconv"

	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/query"
)

// handleJobs lists the jobs (the apps of one spark.sparkprof.job, else of
// one name) and their runs, priced at priceCoreHour and priceGiBHour when
// given.
func (s *Server) handleJobs(r *http.Request) (any, error) {
	opt, err := prices(r)
	if err != nil {
		return nil, err
	}
	return s.query.Jobs(r.Context(), tenant(r), opt), nil
}

// handleCompare compares the run new (an app id, newAttempt its attempt)
// with the run old, or with the previous run of its job without old.
func (s *Server) handleCompare(r *http.Request) (any, error) {
	q := r.URL.Query()
	if q.Get("new") == "" {
		return nil, badRequest("new: want the app id of the run to compare (and old, the earlier run's, else the previous run of its job)")
	}
	opt, err := prices(r)
	if err != nil {
		return nil, err
	}
	return s.query.Compare(r.Context(), tenant(r), runOf(q.Get("old"), q, "oldAttempt"), runOf(q.Get("new"), q, "newAttempt"), opt)
}

// runOf names an app attempt by id and the attempt parameter, the latest
// attempt without it.
func runOf(id string, q map[string][]string, param string) query.AppAttempt {
	a := query.AppAttempt{ID: id}
	if v, ok := q[param]; ok && len(v) > 0 {
		a.Attempt = &v[0]
	}
	return a
}

// prices reads the priceCoreHour and priceGiBHour parameters.
func prices(r *http.Request) (compare.Options, error) {
	var opt compare.Options
	for _, p := range []struct {
		name string
		to   *float64
	}{{"priceCoreHour", &opt.PricePerCoreHour}, {"priceGiBHour", &opt.PricePerGiBHour}} {
		v := r.URL.Query().Get(p.name)
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return opt, badRequest("%s=%q: want a price, a number at least 0", p.name, v)
		}
		*p.to = f
	}
	return opt, nil
}
