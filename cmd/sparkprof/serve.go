package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sparkprof/sparkprof/agent"
	"github.com/sparkprof/sparkprof/analysis"

	"github.com/sparkprof/sparkprof/internal/connlimit"
	"github.com/sparkprof/sparkprof/internal/duration"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

func init() {
	register(&command{
		name:    "serve",
		usage:   "[--addr 127.0.0.1:4040] [--data DIR] [--retention 30d] [--auth-token-file FILE] [--tls-cert FILE --tls-key FILE] [--preload [APP=]PATH]... [--eventlog-dir DIR] [--profile-dir DIR] [--max-log-gb 16] [--log-level warn]",
		summary: "run the server: Pyroscope-compatible ingest, embedded store, query API",
		run:     runServe,
	})
}

func defaultDataDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sparkprof")
	}
	return "sparkprof-data"
}

// serveFlags are serve's flags.
type serveFlags struct {
	jobKey          *string
	addr            string
	data            string
	retention       string
	cacheMB         int64
	blockSpan       time.Duration
	headMB          int64
	tokenFile       string
	tlsCert         string
	tlsKey          string
	preload         preloadFlag
	agentJar        string
	rate            float64
	concurrent      int
	eventLogDir     string
	poll            time.Duration
	profileDir      string
	profilePoll     time.Duration
	watchTenant     string
	logFormat       string
	logLevel        string
	keyWindow       time.Duration
	maxLogGB        int64
	slowQuery       time.Duration
	maxQuerySamples int
	memoryLimit     string
	ingestMemory    string
	maxTenants      int
	maxQueries      int
	thresholds      thresholdSettings
	storage         string
	flushInterval   time.Duration
	role            string
}

// thresholdSettings is serve's --threshold: each NAME=VALUE sets the
// threshold analyze's flag of that name sets.
type thresholdSettings struct {
	th  analysis.Thresholds
	set []string
}

func (t *thresholdSettings) String() string { return strings.Join(t.set, ",") }

func (t *thresholdSettings) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("%q: want NAME=VALUE, NAME one of analyze's threshold flags", s)
	}
	fs := flag.NewFlagSet("threshold", flag.ContinueOnError)
	thresholdFlags(fs, &t.th)
	if fs.Lookup(name) == nil {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		return fmt.Errorf("no threshold %q (one of %s)", name, strings.Join(names, ", "))
	}
	if err := fs.Set(name, value); err != nil {
		return fmt.Errorf("threshold %s: %w", name, err)
	}
	t.set = append(t.set, s)
	return nil
}

// register defines the flags on fs, with their defaults.
func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "127.0.0.1:4040", "address to listen on")
	fs.StringVar(&f.data, "data", defaultDataDir(), "directory of the embedded store")
	fs.StringVar(&f.retention, "retention", "30d", "drop data older than this (e.g. 72h, 30d; 0 keeps all)")
	fs.Int64Var(&f.cacheMB, "block-cache-mb", 512, "memory (MiB, estimated) that keeps compacted blocks read from disk for later queries: a quarter for their parts, three quarters for their flame graphs and time series summed (default: an eighth of the memory limit, at most 512)")
	fs.DurationVar(&f.blockSpan, "block-span", 10*time.Minute, "time span of a compacted block, read in ten time slices by a range that cuts it: shorter ones keep the head smaller for more disk (5m: about a fifth more)")
	fs.StringVar(&f.storage, "storage", "", "object storage to keep the data in, shared by every node (s3://bucket/prefix?region=R&endpoint=URL&s3ForcePathStyle=true, gs://bucket/prefix, azblob://container/prefix, file:///dir); --data then holds only the node's write-ahead log (default: the embedded store in --data)")
	fs.DurationVar(&f.flushInterval, "flush-interval", 10*time.Second, "with --storage: how often the node ships what it took to the bucket and lists the bucket anew")
	fs.StringVar(&f.role, "role", "all", "with --storage: what the node does: all, ingest (takes uploads), query (answers queries) or compactor (compacts the bucket and applies retention)")
	fs.Int64Var(&f.headMB, "head-mb", 512, "memory (MiB, estimated) of the uploads not compacted yet; past it the oldest are compacted at once (default: a quarter of the memory limit, at most 512)")
	fs.StringVar(&f.tokenFile, "auth-token-file", "", "file holding a bearer token that every request must carry")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with; read again when the file changes")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.Var(&f.preload, "preload", "import `[APP=]PATH` at start as `sparkprof import` would: event logs, container logs and profiles, a directory walked as import walks it, APP grouping the container logs and profiles of one app (import's --app); repeatable")
	fs.StringVar(&f.agentJar, "agent-jar", "", "agent jar served at /agent.jar, read at start (default: the one built into this binary)")
	fs.Float64Var(&f.rate, "rate", 0, "uploads per second and tenant before 429 (0: no limit)")
	fs.IntVar(&f.concurrent, "max-concurrent-uploads", 0, "uploads decoded at once; more wait their turn with their bodies read (0: twice the CPUs)")
	fs.StringVar(&f.eventLogDir, "eventlog-dir", "", "analyse the event logs of this directory (spark.eventLog.dir) and its subdirectories, new and in-progress ones, as the History Server does")
	fs.DurationVar(&f.poll, "eventlog-poll", 10*time.Second, "how often --eventlog-dir is scanned for new and grown logs")
	fs.StringVar(&f.profileDir, "profile-dir", "", "import the recordings Spark's profiler plugin copies to this directory (spark.profiler.dfsDir on a local or mounted file system), each chunk once, as they grow")
	fs.DurationVar(&f.profilePoll, "profile-poll", 10*time.Second, "how often --profile-dir is scanned for new chunks")
	fs.StringVar(&f.watchTenant, "watch-tenant", "", "tenant (as X-Scope-OrgID names it) that what --eventlog-dir and --profile-dir find goes to (default: the default tenant)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log as text (key=value pairs) or json (an object a line)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "least level logged: debug, info (compactions, watched files), warn or error")
	fs.DurationVar(&f.keyWindow, "key-window", time.Hour, "how long an upload's Idempotency-Key is remembered, so that a retry of it (the agent's after a lost answer, an import run again) is not stored twice")
	fs.Int64Var(&f.maxLogGB, "max-log-gb", 16, "largest event log or container log (GiB, as sent) that /api/v1/import takes; they stream to disk")
	fs.DurationVar(&f.slowQuery, "slow-query", time.Second, "log each query that takes at least this long, with its parameters, as a warning (0: none)")
	fs.StringVar(&f.memoryLimit, "memory-limit", "", "memory the server aims to stay under (the Go runtime's limit, e.g. 3GiB; default: GOMEMLIMIT, else nine tenths of the container's limit, else of 1GiB; raise it for more than about 200 executors)")
	fs.StringVar(&f.ingestMemory, "ingest-memory", "", "memory uploads in progress may hold at once, bodies, inflated data, decoded profiles and event logs being analysed together (e.g. 512MiB); past it uploads get 503 and retry (default: a quarter of the memory limit; 1GiB under the default limit)")
	fs.IntVar(&f.maxTenants, "max-tenants", 1000, "most tenants (X-Scope-OrgID values) the server stores; uploads for more get 422 (0: no limit)")
	fs.IntVar(&f.maxQueries, "max-concurrent-queries", 0, "queries answered at once; more wait their turn, heavy ones (exports, diffs, series) for at most half the turns (0: twice the CPUs)")
	f.thresholds.th = analysis.DefaultThresholds
	f.jobKey = jobKeyFlag(fs)
	fs.Var(&f.thresholds, "threshold", "NAME=VALUE: a threshold of the findings of the apps the server analyses, named as analyze's flag (e.g. gc-share=0.2); repeatable")
	fs.IntVar(&f.maxQuerySamples, "max-query-samples", 1<<20, "most samples a query that keeps labels merges its selection into (a pprof export with labels=all keeps one per stack, task and thread; a flame graph is not bounded); past it the query gets 422")
}

// check checks the flags' values and returns what they give: the
// retention, the tokens requests must carry (nil for none), and the
// logger of --log-format, writing to stderr.
func (f *serveFlags) check(stderr io.Writer) (keep time.Duration, tokens server.Tokens, log *slog.Logger, err error) {
	if f.keyWindow <= 0 {
		return 0, nil, nil, fmt.Errorf("%w: --key-window %v: want a positive duration", errUsage, f.keyWindow)
	}
	if f.maxQuerySamples < 1 {
		return 0, nil, nil, fmt.Errorf("%w: --max-query-samples %d: want at least 1", errUsage, f.maxQuerySamples)
	}
	if f.blockSpan < time.Minute || f.blockSpan > 24*time.Hour {
		return 0, nil, nil, fmt.Errorf("%w: --block-span %v: want between 1m and 24h", errUsage, f.blockSpan)
	}
	keep, err = duration.Parse(f.retention)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%w: --retention: %v", errUsage, err)
	}
	if f.tokenFile != "" {
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("--auth-token-file: %w", err)
		}
		// An empty file is an error: starting without authentication
		// would be a surprise.
		if tokens, err = server.ParseTokens(b); err != nil {
			return 0, nil, nil, fmt.Errorf("--auth-token-file %s: %w", f.tokenFile, err)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return 0, nil, nil, fmt.Errorf("%w: --log-level %q: want debug, info, warn or error", errUsage, f.logLevel)
	}
	if log, err = newLogger(f.logFormat, stderr, level); err != nil {
		return 0, nil, nil, err
	}
	return keep, tokens, log, nil
}

// startWork does what the flags ask of a server at start: it preloads
// --preload, and starts watching --eventlog-dir and --profile-dir until
// ctx ends.
func (f *serveFlags) startWork(ctx context.Context, srv *server.Server, db *store.DB, log *slog.Logger, say func(line, msg string, args ...any)) error {
	if len(f.preload) > 0 {
		preloadAll(srv, db, f.preload, log, say)
	}
	if f.eventLogDir != "" {
		if _, err := os.Stat(f.eventLogDir); err != nil {
			return fmt.Errorf("--eventlog-dir: %w", err)
		}
		go srv.Ingest().WatchEventLogs(ctx, f.watchTenant, f.eventLogDir, f.poll)
	}
	if f.profileDir != "" {
		if _, err := os.Stat(f.profileDir); err != nil {
			return fmt.Errorf("--profile-dir: %w", err)
		}
		go srv.Ingest().WatchProfileDir(ctx, f.watchTenant, f.profileDir, f.profilePoll, filepath.Join(f.data, "profile-dir.json"))
	}
	return nil
}

// sayer returns the function that tells the operator what the server is
// doing, whatever the --log-level: a plain line in text logs, a record in
// JSON ones.
func (f *serveFlags) sayer(stderr io.Writer) func(line, msg string, args ...any) {
	sayLog, _ := newLogger(f.logFormat, stderr, slog.LevelInfo)
	return func(line, msg string, args ...any) {
		if f.logFormat == "json" {
			sayLog.Info(msg, args...)
			return
		}
		fmt.Fprintf(stderr, "sparkprof serve: %s\n", line)
	}
}

// certs returns the reloader of --tls-cert and --tls-key, nil without them.
func (f *serveFlags) certs(log *slog.Logger) (*certReloader, error) {
	if f.tlsCert == "" && f.tlsKey == "" {
		return nil, nil
	}
	if f.tlsCert == "" || f.tlsKey == "" {
		return nil, fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	return newCertReloader(f.tlsCert, f.tlsKey, log)
}

// newHTTPServer returns the HTTP server of g, the listener it serves
// (ln with its connections bounded, over TLS with certs when set) and its
// scheme.
func newHTTPServer(g *gate, ln net.Listener, certs *certReloader, log *slog.Logger) (*http.Server, net.Listener, string) {
	hs := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	ln = limitConnections(ln, certs == nil)
	if l, ok := ln.(*connlimit.Listener); ok {
		hs.ConnState = l.ConnState // idle connections make room for new ones
	}
	if certs == nil {
		return hs, ln, "http"
	}
	hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
	return hs, tls.NewListener(ln, hs.TLSConfig), "https"
}

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve")
	var f serveFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	keep, tokens, log, err := f.check(e.stderr)
	if err != nil {
		return err
	}
	say := f.sayer(e.stderr)
	certs, err := f.certs(log)
	if err != nil {
		return err
	}
	// Listen first: replaying a large write-ahead log after a crash takes
	// seconds, during which the port answers 503 (and /healthz 200)
	// instead of refusing connections.
	ln, err := net.Listen("tcp", f.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: another server (a sparkprof serve already running?) has the port; stop it, or pick another with --addr", err)
	}
	if err != nil {
		return err
	}
	mem, err := resolveMemory(f.memoryLimit, f.ingestMemory)
	if err != nil {
		return err
	}
	mem.apply(log)
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	mem.sizeStore(&f, set)
	var g gate
	hs, ln, scheme := newHTTPServer(&g, ln, certs, log)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	defer hs.Close()
	bucket, err := f.openBucket(ctx)
	if err != nil {
		return err
	}
	partsCache, sumsCache := cacheSplit(f.cacheMB)
	db, err := store.Open(f.data, store.Options{Retention: keep, Partition: f.blockSpan, CacheBytes: partsCache, HeadBytes: f.headMB << 20, KeyWindow: f.keyWindow,
		MaxTenants: f.maxTenants, MaxOpenSegments: maxOpenSegments, Logger: log, Bucket: bucket.b, FlushInterval: f.flushInterval, Role: bucket.role})
	if err != nil {
		bucket.close()
		return err
	}
	defer bucket.close()
	defer func() {
		hs.Close() // no request reaches a closed store
		db.Close()
	}()
	jar, err := agentJar(f.agentJar)
	if err != nil {
		return err
	}
	srv := server.New(server.Config{Store: db, Tokens: tokens, Logger: log, AgentJar: jar, RatePerSecond: f.rate, MaxConcurrentUploads: f.concurrent,
		EventLogDir: filepath.Join(f.data, "eventlogs"), MaxLogBytes: f.maxLogGB << 30, MaxQuerySamples: f.maxQuerySamples, SumsCacheBytes: sumsCache, SlowQuery: f.slowQuery,
		IngestMemory: mem.ingest, MaxConcurrentQueries: f.maxQueries, Thresholds: f.thresholds.th, JobKey: *f.jobKey})
	defer srv.Close()
	g.open(srv)
	base := scheme + "://" + ln.Addr().String()
	say(fmt.Sprintf("listening on %s (data in %s)", base, f.data), "listening", "url", base, "data", f.data)
	if host, port, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			hint := "only this machine can connect; for executors on other hosts, listen on all interfaces (--addr :" + port + ")"
			say(hint, hint)
		}
	}
	if err := f.startWork(ctx, srv, db, log, say); err != nil {
		return err
	}
	srv.SetReady()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	// Graceful shutdown: stop accepting, let uploads in flight finish
	// (each is acknowledged only after it is fsynced), then close.
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// gate serves the server once it is open; before, while the store replays
// its log, it answers 503 (a liveness probe, /healthz, 200).
type gate struct{ srv atomic.Pointer[server.Server] }

func (g *gate) open(s *server.Server) { g.srv.Store(s) }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s := g.srv.Load(); s != nil {
		s.ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/healthz" {
		fmt.Fprintln(w, "ok")
		return
	}
	w.Header().Set("Retry-After", "2")
	http.Error(w, "sparkprof is starting: the store is replaying its write-ahead log; retry in a few seconds", http.StatusServiceUnavailable)
}

// newLogger returns the logger of --log-format, writing records of level
// or above to w.
func newLogger(format string, w io.Writer, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", errUsage, format)
}

// agentJar returns the agent jar to serve at /agent.jar: the one
// --agent-jar names, else the one built into the binary.
func agentJar(flagged string) ([]byte, error) {
	if flagged == "" {
		return agent.Jar, nil
	}
	jar, err := os.ReadFile(flagged)
	if err != nil {
		return nil, fmt.Errorf("--agent-jar: %w", err)
	}
	return jar, nil
}
