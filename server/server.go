// Package server is sparkprof's HTTP hub: Pyroscope-compatible ingest,
// the query API the UI and CLI use, Pyroscope's read endpoints, health and
// metrics. Storage is behind store.Store.
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sparkprof/sparkprof/store"
	"github.com/sparkprof/sparkprof/ui"
)

// Config configures a Server.
type Config struct {
	Store store.Store
	// AuthToken, when set, must come with every request but /healthz and
	// /ready: as "Authorization: Bearer <token>", as the password of basic
	// authentication, or in the cookie a browser gets by signing in.
	AuthToken string
	// MaxBodyBytes bounds an upload's body; MaxDecodedBytes its
	// decompressed size (gzip bombs are rejected with 413).
	MaxBodyBytes, MaxDecodedBytes int64
	// MaxLogBytes bounds an event log or container log imported with
	// its kind (eventlog, logs), which streams to disk instead of memory
	// (default 16 GiB).
	MaxLogBytes int64
	// RatePerSecond bounds uploads per tenant and second (a burst of
	// twice that is allowed); zero means no limit.
	RatePerSecond float64
	// MaxConcurrentUploads bounds the uploads read and decoded at once;
	// the others wait their turn before their bodies are read, so that a
	// burst (a stage's executors ending together) costs the server time
	// rather than memory. Zero means twice GOMAXPROCS.
	MaxConcurrentUploads int
	Logger               *slog.Logger
	// AgentJar is the path of the agent jar served at /agent.jar.
	AgentJar string
	// EventLogDir keeps imported event logs, analysed again at start; empty
	// keeps them in memory only.
	EventLogDir string
	// MaxQuerySamples bounds the samples a query that keeps labels merges
	// its selection into (a pprof export with every label keeps one per
	// stack, task and thread): past it the query is refused with 422
	// rather than holding gigabytes. A flame graph, which keeps one per
	// stack, type and state, is not bounded. Zero means 1,048,576.
	MaxQuerySamples int
	// SlowQuery, when positive, logs each query that takes at least that
	// long, with its path, parameters and tenant, as a warning.
	SlowQuery time.Duration
}

// Server handles sparkprof's HTTP API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	agents  *agents
	apps    *apps
	limits  sync.Map      // tenant -> *rate.Limiter
	turns   chan struct{} // one element per upload being read and decoded
	ready   bool
	mu      sync.Mutex
}

// New returns a server over cfg.Store.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 64 << 20
	}
	if cfg.MaxDecodedBytes == 0 {
		cfg.MaxDecodedBytes = 512 << 20
	}
	if cfg.MaxQuerySamples == 0 {
		cfg.MaxQuerySamples = 1 << 20
	}
	if cfg.MaxLogBytes == 0 {
		cfg.MaxLogBytes = 16 << 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.EventLogDir == "" {
		dir, err := os.MkdirTemp("", "sparkprof-eventlogs-")
		if err != nil {
			cfg.Logger.Error("no directory for imported event logs", "err", err)
		}
		cfg.EventLogDir = dir
	}
	if cfg.MaxConcurrentUploads <= 0 {
		cfg.MaxConcurrentUploads = 2 * runtime.GOMAXPROCS(0)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), metrics: newMetrics(cfg.Store), agents: newAgents(), apps: newApps(cfg.EventLogDir),
		turns: make(chan struct{}, cfg.MaxConcurrentUploads)}
	if err := s.apps.load(); err != nil {
		s.log.Error("analysing saved event logs", "dir", cfg.EventLogDir, "err", err)
	}
	s.routes()
	return s
}

func (s *Server) routes() {
	s.mux.HandleFunc("POST /ingest", s.handleIngest)
	s.mux.HandleFunc("POST /api/v1/import", s.handleImport)
	// Queries of the store: timed (sparkprof_query_duration_seconds) and,
	// past Config.SlowQuery, logged.
	s.mux.Handle("GET /api/v1/render", s.timed(s.handleRender))
	s.mux.Handle("GET /api/v1/top", s.timed(s.handleTop))
	s.mux.Handle("GET /api/v1/breakdown", s.timed(s.handleBreakdown))
	s.mux.Handle("GET /api/v1/series", s.timed(s.handleSeries))
	s.mux.Handle("GET /api/v1/metrics", s.timed(s.handleMetricSeries))
	s.mux.Handle("GET /api/v1/diff", s.timed(s.handleDiff))
	s.mux.Handle("GET /pyroscope/render-diff", s.timed(s.handlePyroscopeDiff))
	s.mux.Handle("GET /api/v1/export", s.timed(s.handleExport))
	s.mux.Handle("GET /api/v1/labels", s.timed(s.handleLabels(false)))
	s.mux.Handle("GET /api/v1/label-values", s.timed(s.handleLabelValues))
	s.mux.HandleFunc("GET /api/v1/agents", s.handleAgents)
	s.mux.HandleFunc("GET /api/v1/apps", s.handleApps)
	s.mux.Handle("GET /api/v1/apps/{id}", s.timed(s.handleApp))
	s.mux.Handle("GET /api/v1/apps/{id}/stages/{stage}/slow-vs-rest", s.timed(s.handleSlowVsRest))
	s.mux.Handle("GET /pyroscope/render", s.timed(s.handlePyroscopeRender))
	s.mux.Handle("GET /pyroscope/label-values", s.timed(s.handlePyroscopeLabelValues))
	s.mux.Handle("GET /pyroscope/labels", s.timed(s.handleLabels(true)))
	querierPath, querier := s.handleQuerier()
	s.mux.Handle(querierPath, s.timed(querier.ServeHTTP))
	s.mux.Handle(s.handlePush())
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("GET /ready", s.handleReady)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	// The Go runtime's profiles of the server itself, as net/http/pprof
	// serves them (behind the same authentication as everything else).
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	s.mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	s.mux.HandleFunc("GET /agent.jar", s.handleAgentJar)
	s.mux.Handle("GET /flame", s.timed(s.handleFlame))
	s.mux.HandleFunc("GET /apps/{id}/report", s.handleReport)
	s.mux.HandleFunc("POST /login", s.handleLogin)
	s.mux.HandleFunc("GET /{$}", ui.Index)
	s.mux.Handle("GET /ui/", ui.Assets("/ui/"))
}

// SetReady marks the server ready (after start-up work such as preloading).
func (s *Server) SetReady() {
	s.mu.Lock()
	s.ready = true
	s.mu.Unlock()
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if !ready {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (s *Server) handleAgentJar(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AgentJar == "" {
		http.Error(w, "no agent jar configured: build it with `make agent` and start serve with --agent-jar", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/java-archive")
	http.ServeFile(w, r, s.cfg.AgentJar)
}

// ServeHTTP implements http.Handler: authentication, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AuthToken != "" && !s.authorized(r) {
		switch r.URL.Path {
		case "/healthz", "/ready", "/login":
		default:
			s.unauthorized(w, r)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// timed wraps a query handler: its time goes into the query latency
// histogram, and one at least Config.SlowQuery long is logged.
func (s *Server) timed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h(w, r)
		d := time.Since(start)
		s.metrics.query.Observe(d.Seconds())
		if s.cfg.SlowQuery > 0 && d >= s.cfg.SlowQuery {
			s.log.Warn("slow query", "path", r.URL.Path, "params", r.URL.RawQuery, "tenant", tenant(r), "took", d.Round(time.Millisecond))
		}
	})
}

// tenant returns the request's tenant (X-Scope-OrgID, as Pyroscope and the
// Grafana stack use), "" when none is given.
func tenant(r *http.Request) string { return headerTenant(r.Header) }

// headerTenant returns the tenant request headers name: the Connect APIs'
// handlers see headers, not the request.
func headerTenant(h http.Header) string { return h.Get("X-Scope-OrgID") }

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(format, args...)})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		// The client went away; nothing to tell it.
		return
	}
}

// allow takes one upload from the tenant's rate limit, which lets bursts of
// two seconds' uploads through. Over the limit, it returns false and how
// long until the next upload would be allowed.
func (s *Server) allow(tenant string) (bool, time.Duration) {
	limit := s.cfg.RatePerSecond
	if limit <= 0 {
		return true, 0
	}
	v, ok := s.limits.Load(tenant)
	if !ok {
		v, _ = s.limits.LoadOrStore(tenant, rate.NewLimiter(rate.Limit(limit), max(1, int(math.Ceil(2*limit)))))
	}
	lim := v.(*rate.Limiter)
	now := time.Now()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// turn waits for one of the MaxConcurrentUploads turns to read and decode
// an upload, and returns the function that gives it back. It fails when ctx
// ends first: the client gave up waiting.
func (s *Server) turn(ctx context.Context) (release func(), err error) {
	select {
	case s.turns <- struct{}{}:
		return func() { <-s.turns }, nil
	default:
	}
	s.metrics.waiting.Inc()
	defer s.metrics.waiting.Dec()
	select {
	case s.turns <- struct{}{}:
		return func() { <-s.turns }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waited for a turn among %d uploads in progress: %w", cap(s.turns), ctx.Err())
	}
}

// retryAfter is the Retry-After header's value for a delay: whole
// seconds, at least one.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
