package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/sparkprof/sparkprof/internal/errkind"
)

// apiFunc answers a request with a value, written as JSON, or a response
// that writes itself (a responder); or with an error, written as JSON with
// the status its kind maps to (statusOf). Handlers are apiFuncs over the
// engines of packages ingest and query, registered in one table (routes).
type apiFunc func(r *http.Request) (any, error)

// responder is an answer that is not JSON, or needs headers of its own: an
// export, an HTML page, an upload's acknowledgement.
type responder interface {
	respond(w http.ResponseWriter) error
}

// responderFunc makes a function a responder.
type responderFunc func(w http.ResponseWriter) error

func (f responderFunc) respond(w http.ResponseWriter) error { return f(w) }

// serve adapts an apiFunc to net/http: its answer is written as JSON or
// responds itself, its error is written with its status.
func (s *Server) serve(fn apiFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		if err != nil {
			writeError(w, err)
			return
		}
		if res, ok := v.(responder); ok {
			if err := res.respond(w); err != nil {
				s.log.Warn("answer failed", "path", r.URL.Path, "err", err)
			}
			return
		}
		writeJSON(w, v)
	}
}

// timed wraps a query handler of class c: it waits for a turn
// (queryTurns), its time goes into the query latency histogram, and one at
// least Config.SlowQuery long is logged.
func (s *Server) timed(h http.Handler, c queryClass) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		release, err := s.queries.take(r.Context(), c == heavyQuery)
		if err != nil {
			writeError(w, err)
			return
		}
		defer release()
		h.ServeHTTP(w, r)
		d := time.Since(start)
		s.metrics.query.Observe(d.Seconds())
		if s.cfg.SlowQuery > 0 && d >= s.cfg.SlowQuery {
			s.log.Warn("slow query", "path", r.URL.Path, "params", r.URL.RawQuery, "tenant", tenant(r), "took", d.Round(time.Millisecond))
		}
	})
}

// statusOf is the HTTP status of an error of the engines, by its kind.
func statusOf(err error) int {
	switch errkind.Of(err) {
	case errkind.BadInput:
		return http.StatusBadRequest
	case errkind.Unprocessable:
		return http.StatusUnprocessableEntity
	case errkind.TooLarge:
		return http.StatusRequestEntityTooLarge
	case errkind.OverLimit:
		return http.StatusTooManyRequests
	case errkind.Unavailable:
		return http.StatusServiceUnavailable
	case errkind.NotFound:
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// connectError is an error of the engines as the Connect APIs answer it,
// by its kind. A profile too large is invalid, not resource_exhausted,
// which clients such as Alloy retry: the same profile would be refused
// again.
func connectError(err error) *connect.Error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	code := connect.CodeInternal
	switch errkind.Of(err) {
	case errkind.BadInput, errkind.Unprocessable, errkind.TooLarge:
		code = connect.CodeInvalidArgument
	case errkind.OverLimit:
		code = connect.CodeResourceExhausted
	case errkind.Unavailable:
		code = connect.CodeUnavailable
	case errkind.NotFound:
		code = connect.CodeNotFound
	}
	out := connect.NewError(code, err)
	if d := errkind.RetryAfter(err); d > 0 {
		out.Meta().Set("Retry-After", retryAfter(d))
	}
	return out
}

// writeError answers err: its status (statusOf), a Retry-After header when
// it says when to retry, and {"error": message}.
func writeError(w http.ResponseWriter, err error) {
	if d := errkind.RetryAfter(err); d > 0 {
		w.Header().Set("Retry-After", retryAfter(d))
	}
	httpError(w, statusOf(err), "%v", err)
}

// maxErrorBytes bounds an error's message in an answer: a request's
// parameters quoted in it are the client's own, and need not come back
// whole.
const maxErrorBytes = 2000

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxErrorBytes {
		msg = strings.ToValidUTF8(msg[:maxErrorBytes], "") + "…"
	}
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		// The client went away; nothing to tell it.
		return
	}
}

// badRequest is a request the handler itself finds malformed.
func badRequest(format string, args ...any) error {
	return errkind.Errorf(errkind.BadInput, format, args...)
}
