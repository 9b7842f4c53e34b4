package server

import (
	"net/http"
	"strconv"
)

// intParam reads an integer query parameter at least lo, or def when it
// is absent.
func intParam(r *http.Request, name string, def, lo int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo {
		return 0, badRequest("%s %q: want a whole number of at least %d", name, v, lo)
	}
	return n, nil
}

// stageParams reads the stage of the path and the attempt parameter (-1,
// the latest, when absent).
func stageParams(r *http.Request) (stage, attempt int, err error) {
	stage, err = strconv.Atoi(r.PathValue("stage"))
	if err != nil {
		return 0, 0, badRequest("stage %q: want a stage id", r.PathValue("stage"))
	}
	attempt, err = intParam(r, "attempt", -1, 0)
	return stage, attempt, err
}

// handleStage answers a stage attempt's page: the stage, its job, the
// quantiles of its tasks' metrics and their sums per executor.
func (s *Server) handleStage(r *http.Request) (any, error) {
	stage, attempt, err := stageParams(r)
	if err != nil {
		return nil, err
	}
	return s.query.Stage(r.Context(), tenant(r), appOf(r), stage, attempt)
}

// maxTaskPage bounds the tasks one request of a stage's task table gets.
const maxTaskPage = 1000

// handleStageTasks answers a page of a stage attempt's tasks: sort (a key
// of query.StageTasks), desc=true, offset and limit (100 by default).
func (s *Server) handleStageTasks(r *http.Request) (any, error) {
	stage, attempt, err := stageParams(r)
	if err != nil {
		return nil, err
	}
	offset, err := intParam(r, "offset", 0, 0)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", 100, 1)
	if err != nil {
		return nil, err
	}
	if limit > maxTaskPage {
		return nil, badRequest("limit %d: at most %d tasks a page", limit, maxTaskPage)
	}
	desc := false
	switch v := r.URL.Query().Get("desc"); v {
	case "", "false":
	case "true":
		desc = true
	default:
		return nil, badRequest("desc %q: want true or false", v)
	}
	return s.query.StageTasks(r.Context(), tenant(r), appOf(r), stage, attempt, r.URL.Query().Get("sort"), desc, offset, limit)
}
