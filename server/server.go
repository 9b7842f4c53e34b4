// Package server is sparkprof's HTTP hub: it adapts the ingest pipeline
// (package ingest) and the query engine (package query) to HTTP and to
// Pyroscope's Connect APIs, and serves the web UI, health and metrics.
// Handlers are thin: each parses its request, calls an engine and returns
// the answer or a typed error (apiFunc), and one table registers them.
package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
	"github.com/sparkprof/sparkprof/ui"
)

// Config configures a Server.
type Config struct {
	Store store.Store
	// AuthToken, when set, must come with every request but /healthz and
	// /ready: as "Authorization: Bearer <token>", as the password of basic
	// authentication, or in the cookie a browser gets by signing in. It
	// may read and write every tenant.
	AuthToken string
	// Tokens, when set, are tokens that may come instead, each with what
	// it may do and for which tenants (ParseTokens).
	Tokens Tokens
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
	// MaxConcurrentUploads bounds the uploads decoded at once; the others
	// wait their turn with their bodies read, so that a burst (a stage's
	// executors ending together) costs the server time rather than every
	// core. Zero means twice GOMAXPROCS.
	MaxConcurrentUploads int
	// IngestMemory bounds the memory (estimated) that uploads in progress
	// hold at once (ingest.Config.MaxMemory): past it uploads get 503 with
	// Retry-After. Zero means 1 GiB.
	IngestMemory int64
	// BodyTimeout and MinBodyRate bound the time a request's body may take
	// to arrive: BodyTimeout plus a second per MinBodyRate bytes (zero:
	// 10 s, 32 KiB/s). WriteTimeout bounds each write of an answer (zero:
	// a minute). A slow or stalled client is cut off after them.
	BodyTimeout  time.Duration
	MinBodyRate  int64
	WriteTimeout time.Duration
	Logger       *slog.Logger
	// AgentJar is the agent jar served at /agent.jar; without one it
	// answers 404.
	AgentJar []byte
	// EventLogDir keeps imported event logs, analysed again at start;
	// empty keeps them in a temporary directory Close removes.
	EventLogDir string
	// MaxQuerySamples bounds the samples a query that keeps labels merges
	// its selection into (see query.Config.MaxSamples): past it the query
	// is refused with 422. Zero means 1,048,576.
	MaxQuerySamples int
	// SumsCacheBytes bounds the memory (estimated) of compacted blocks'
	// parts summed for later queries (query.Config.SumsCacheBytes); zero
	// keeps none.
	SumsCacheBytes int64
	// Thresholds decide the findings of the apps the server analyses;
	// the zero value means analysis.DefaultThresholds.
	Thresholds analysis.Thresholds
	// JobKey is the Spark property whose value names the job an app is a
	// run of (the Jobs and Compare pages); "" for spark.sparkprof.job, else
	// the app's name.
	JobKey string
	// SlowQuery, when positive, logs each query that takes at least that
	// long, with its path, parameters and tenant, as a warning.
	SlowQuery time.Duration
	// MaxConcurrentQueries bounds the queries answered at once; the others
	// wait their turn. Heavy ones (exports, diffs, series, a stage's
	// slowest tasks) take at most half the turns, so that flame graphs
	// and renders stay quick while they run. Zero means twice GOMAXPROCS.
	MaxConcurrentQueries int
}

// Server handles sparkprof's HTTP API.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	apps    *appstore.Store
	ingest  *ingest.Pipeline
	query   *query.Engine
	handler http.Handler // the routes, guarded and authenticated
	tokens  Tokens       // nil: no authentication
	queries *queryTurns
	ready   bool
	mu      sync.Mutex
}

// New returns a server over cfg.Store.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 64 << 20
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = defaultBodyTimeout
	}
	if cfg.MinBodyRate == 0 {
		cfg.MinBodyRate = defaultMinBodyRate
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = defaultWriteTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if cfg.Thresholds == (analysis.Thresholds{}) {
		cfg.Thresholds = analysis.DefaultThresholds
	}
	apps, err := appstore.Open(cfg.EventLogDir, cfg.Thresholds)
	if err != nil {
		cfg.Logger.Error("saved apps", "err", err)
	}
	for _, sk := range apps.Skipped() {
		cfg.Logger.Warn("saved app not loaded: left as it is; fix or remove it, then restart", "path", sk.Path, "err", sk.Err)
	}
	m := newMetrics(cfg.Store, apps)
	s := &Server{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), metrics: m, apps: apps,
		ingest: ingest.New(ingest.Config{Store: cfg.Store, Apps: apps, MaxDecodedBytes: cfg.MaxDecodedBytes, MaxLogBytes: cfg.MaxLogBytes,
			RatePerSecond: cfg.RatePerSecond, MaxConcurrentUploads: cfg.MaxConcurrentUploads, MaxMemory: cfg.IngestMemory, Registerer: m.reg, Logger: cfg.Logger}),
		query: query.NewEngine(query.Config{Store: cfg.Store, Apps: apps, MaxSamples: cfg.MaxQuerySamples, Logger: cfg.Logger, JobKey: cfg.JobKey, SumsCacheBytes: cfg.SumsCacheBytes}),
	}
	s.queries = newQueryTurns(cfg.MaxConcurrentQueries)
	if cfg.AuthToken != "" || len(cfg.Tokens) > 0 {
		s.tokens = Tokens{}
		maps.Copy(s.tokens, cfg.Tokens)
		if cfg.AuthToken != "" {
			s.tokens[tokenDigest(cfg.AuthToken)] = Grant{Scope: ScopeRead | ScopeWrite}
		}
	}
	s.routes()
	s.handler = s.guard(http.HandlerFunc(s.serveAuthorized))
	return s
}

// Ingest returns the server's ingest pipeline: what it imports at start
// (serve --preload) and finds in watched directories goes through it.
func (s *Server) Ingest() *ingest.Pipeline { return s.ingest }

// Close releases what the server holds beside its store: a temporary
// directory of imported event logs.
func (s *Server) Close() error { return s.apps.Close() }

// routes registers every endpoint.
func (s *Server) routes() {
	for _, e := range s.api() {
		h := http.Handler(s.serve(e.fn))
		if e.class != notQuery {
			h = s.timed(h, e.class)
		}
		s.mux.Handle(e.pattern, h)
	}
	querierPath, querier := s.handleQuerier()
	// Connect requests are read before they wait for a turn, through
	// the ingest memory (readConnect).
	s.mux.Handle(querierPath, s.readConnect(s.timed(querier, quickQuery)))
	pushPath, push := s.handlePush()
	s.mux.Handle(pushPath, s.readConnect(push))
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
	s.mux.HandleFunc("POST /login", s.handleLogin)
	s.mux.HandleFunc("GET /{$}", ui.Index)
	s.mux.Handle("GET /ui/", ui.Assets("/ui/"))
}

// endpoint is one route of the API: its pattern, handler, and whether it
// is a query (timed, and waiting for a turn) and how heavy.
type endpoint struct {
	pattern string
	fn      apiFunc
	class   queryClass
}

// api lists the API's endpoints.
func (s *Server) api() []endpoint {
	return []endpoint{
		{"POST /ingest", s.handleIngest, notQuery},
		{"POST /api/v1/import", s.handleImport, notQuery},
		{"GET /api/v1/render", s.handleRender, quickQuery},
		{"GET /api/v1/top", s.handleTop, quickQuery},
		{"GET /api/v1/breakdown", s.handleBreakdown, quickQuery},
		{"GET /api/v1/series", s.handleSeries, heavyQuery},
		{"GET /api/v1/metrics", s.handleMetricSeries, quickQuery},
		{"GET /api/v1/diff", s.handleDiff, heavyQuery},
		{"GET /api/v1/export", s.handleExport, heavyQuery},
		{"GET /api/v1/labels", s.handleLabels(false), quickQuery},
		{"GET /api/v1/label-values", s.handleLabelValues, quickQuery},
		{"GET /api/v1/agents", s.handleAgents, notQuery},
		{"GET /api/v1/apps", s.handleApps, notQuery},
		{"GET /api/v1/apps/{id}", s.handleApp, quickQuery},
		{"GET /api/v1/apps/{id}/stages/{stage}", s.handleStage, quickQuery},
		{"GET /api/v1/apps/{id}/stages/{stage}/tasks", s.handleStageTasks, quickQuery},
		{"GET /api/v1/apps/{id}/stages/{stage}/slow-vs-rest", s.handleSlowVsRest, heavyQuery},
		{"GET /api/v1/jobs", s.handleJobs, notQuery},
		{"GET /api/v1/compare", s.handleCompare, heavyQuery},
		{"GET /pyroscope/render", s.handlePyroscopeRender, quickQuery},
		{"GET /pyroscope/render-diff", s.handlePyroscopeDiff, heavyQuery},
		{"GET /pyroscope/label-values", s.handlePyroscopeLabelValues, quickQuery},
		{"GET /pyroscope/labels", s.handleLabels(true), quickQuery},
		{"GET /flame", s.handleFlame, quickQuery},
		{"GET /apps/{id}/report", s.handleReport, notQuery},
	}
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
	if b := s.cfg.Store.Stats().Bucket; b != nil {
		state := "reachable"
		if !b.Up {
			state = "unreachable: queries answer from what this node holds and name the blocks they could not read"
		}
		fmt.Fprintf(w, "bucket: %s\n", state)
	}
	// The count alone: /ready needs no token, and the paths name tenants.
	if n := len(s.apps.Skipped()); n > 0 {
		fmt.Fprintf(w, "saved apps not loaded at start: %d (event logs or bundles left as they are; the log names them and why)\n", n)
	}
}

func (s *Server) handleAgentJar(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AgentJar == nil {
		http.Error(w, "no agent jar configured: start serve with --agent-jar", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/java-archive")
	http.ServeContent(w, r, "sparkprof-agent.jar", time.Time{}, bytes.NewReader(s.cfg.AgentJar))
}

// ServeHTTP implements http.Handler: the guard (request ids, deadlines,
// panics), authentication, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serveAuthorized checks a request's tenant and token, and routes it.
func (s *Server) serveAuthorized(w http.ResponseWriter, r *http.Request) {
	if err := store.CheckTenant(tenant(r)); err != nil {
		httpError(w, http.StatusBadRequest, "X-Scope-OrgID: %v", err)
		return
	}
	if s.authorize(w, r) {
		s.mux.ServeHTTP(w, r)
	}
}

// tenant returns the request's tenant (X-Scope-OrgID, as Pyroscope and the
// Grafana stack use), "" when none is given.
func tenant(r *http.Request) string { return headerTenant(r.Header) }

// headerTenant returns the tenant request headers name: the Connect APIs'
// handlers see headers, not the request.
func headerTenant(h http.Header) string { return h.Get(tenantHeader) }

// tenantHeader names a request's tenant.
const tenantHeader = "X-Scope-OrgID"

// retryAfter is the Retry-After header's value for a delay: whole
// seconds, at least one.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
