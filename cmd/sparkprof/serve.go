package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/internal/duration"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

func init() {
	register(&command{
		name:    "serve",
		usage:   "[--addr 127.0.0.1:4040] [--data DIR] [--retention 30d] [--auth-token-file FILE] [--tls-cert FILE --tls-key FILE] [--preload DIR] [--eventlog-dir DIR] [--profile-dir DIR] [--max-log-gb 16]",
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

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve")
	addr := fs.String("addr", "127.0.0.1:4040", "address to listen on")
	data := fs.String("data", defaultDataDir(), "directory of the embedded store")
	retention := fs.String("retention", "30d", "drop data older than this (e.g. 72h, 30d; 0 keeps all)")
	cacheMB := fs.Int64("block-cache-mb", 512, "memory (MiB, estimated) that keeps compacted blocks read from disk for later queries")
	blockSpan := fs.Duration("block-span", 10*time.Minute, "time span of a compacted block, read in ten time slices by a range that cuts it: shorter ones keep the head smaller for more disk (5m: about a fifth more)")
	headMB := fs.Int64("head-mb", 512, "memory (MiB, estimated) of the uploads not compacted yet; past it the oldest are compacted at once")
	tokenFile := fs.String("auth-token-file", "", "file holding a bearer token that every request must carry")
	tlsCert := fs.String("tls-cert", "", "PEM certificate (chain) to serve HTTPS with; read again when the file changes")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	preload := fs.String("preload", "", "import the profiles of this directory at start (e.g. ../shared/testdata)")
	agentJar := fs.String("agent-jar", "agent/build/sparkprof-agent.jar", "agent jar served at /agent.jar")
	rate := fs.Float64("rate", 0, "uploads per second and tenant before 429 (0: no limit)")
	concurrent := fs.Int("max-concurrent-uploads", 0, "uploads read and decoded at once; more wait their turn, which bounds a burst's memory (0: twice the CPUs)")
	eventLogDir := fs.String("eventlog-dir", "", "analyse the event logs of this directory (spark.eventLog.dir) and its subdirectories, new and in-progress ones, as the History Server does")
	poll := fs.Duration("eventlog-poll", 10*time.Second, "how often --eventlog-dir is scanned for new and grown logs")
	profileDir := fs.String("profile-dir", "", "import the recordings Spark's profiler plugin copies to this directory (spark.profiler.dfsDir on a local or mounted file system), each chunk once, as they grow")
	profilePoll := fs.Duration("profile-poll", 10*time.Second, "how often --profile-dir is scanned for new chunks")
	watchTenant := fs.String("watch-tenant", "", "tenant (as X-Scope-OrgID names it) that what --eventlog-dir and --profile-dir find goes to (default: the default tenant)")
	logFormat := fs.String("log-format", "text", "log as text (key=value pairs) or json (an object a line)")
	keyWindow := fs.Duration("key-window", time.Hour, "how long an upload's Idempotency-Key is remembered, so that a retry of it (the agent's after a lost answer, an import run again) is not stored twice")
	maxLogGB := fs.Int64("max-log-gb", 16, "largest event log or container log (GiB, as sent) that /api/v1/import takes; they stream to disk")
	slowQuery := fs.Duration("slow-query", time.Second, "log each query that takes at least this long, with its parameters, as a warning (0: none)")
	maxQuerySamples := fs.Int("max-query-samples", 1<<20, "most samples a query that keeps labels merges its selection into (a pprof export with labels=all keeps one per stack, task and thread; a flame graph is not bounded); past it the query gets 422")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	if *keyWindow <= 0 {
		return fmt.Errorf("%w: --key-window %v: want a positive duration", errUsage, *keyWindow)
	}
	if *maxQuerySamples < 1 {
		return fmt.Errorf("%w: --max-query-samples %d: want at least 1", errUsage, *maxQuerySamples)
	}
	if *blockSpan < time.Minute || *blockSpan > 24*time.Hour {
		return fmt.Errorf("%w: --block-span %v: want between 1m and 24h", errUsage, *blockSpan)
	}
	keep, err := duration.Parse(*retention)
	if err != nil {
		return fmt.Errorf("%w: --retention: %v", errUsage, err)
	}
	var token string
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return fmt.Errorf("--auth-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			// Starting without authentication would be a surprise.
			return fmt.Errorf("--auth-token-file: %s is empty: write the token in it", *tokenFile)
		}
	}
	var log *slog.Logger
	switch *logFormat {
	case "text":
		log = slog.New(slog.NewTextHandler(e.stderr, nil))
	case "json":
		log = slog.New(slog.NewJSONHandler(e.stderr, nil))
	default:
		return fmt.Errorf("%w: --log-format %q: want text or json", errUsage, *logFormat)
	}
	// say tells the operator what the server is doing: a plain line in
	// text logs, a record in JSON ones.
	say := func(line, msg string, args ...any) {
		if *logFormat == "json" {
			log.Info(msg, args...)
			return
		}
		fmt.Fprintf(e.stderr, "sparkprof serve: %s\n", line)
	}
	var certs *certReloader
	if *tlsCert != "" || *tlsKey != "" {
		if *tlsCert == "" || *tlsKey == "" {
			return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
		}
		if certs, err = newCertReloader(*tlsCert, *tlsKey, log); err != nil {
			return err
		}
	}
	// Listen first: replaying a large write-ahead log after a crash takes
	// seconds, during which the port answers 503 (and /healthz 200)
	// instead of refusing connections.
	ln, err := net.Listen("tcp", *addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w: another server (a sparkprof serve already running?) has the port; stop it, or pick another with --addr", err)
	}
	if err != nil {
		return err
	}
	var g gate
	hs := &http.Server{Handler: &g, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	scheme := "http"
	if certs != nil {
		scheme = "https"
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get}
		ln = tls.NewListener(ln, hs.TLSConfig)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	defer hs.Close()
	db, err := store.Open(*data, store.Options{Retention: keep, Partition: *blockSpan, CacheBytes: *cacheMB << 20, HeadBytes: *headMB << 20, KeyWindow: *keyWindow, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		hs.Close() // no request reaches a closed store
		db.Close()
	}()
	if _, err := os.Stat(*agentJar); err != nil {
		*agentJar = ""
	}
	srv := server.New(server.Config{Store: db, AuthToken: token, Logger: log, AgentJar: *agentJar, RatePerSecond: *rate, MaxConcurrentUploads: *concurrent,
		EventLogDir: filepath.Join(*data, "eventlogs"), MaxLogBytes: *maxLogGB << 30, MaxQuerySamples: *maxQuerySamples, SlowQuery: *slowQuery})
	defer srv.Close()
	g.open(srv)
	base := scheme + "://" + ln.Addr().String()
	say(fmt.Sprintf("listening on %s (data in %s)", base, *data), "listening", "url", base, "data", *data)
	if host, port, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			hint := "only this machine can connect; for executors on other hosts, listen on all interfaces (--addr :" + port + ")"
			say(hint, hint)
		}
	}
	if *preload != "" {
		n, err := preloadDir(srv, db, *preload)
		if err != nil {
			log.Warn("preload incomplete", "dir", *preload, "err", err)
		}
		say(fmt.Sprintf("preloaded %d files from %s", n, *preload), "preloaded", "files", n, "dir", *preload)
	}
	if *eventLogDir != "" {
		if _, err := os.Stat(*eventLogDir); err != nil {
			return fmt.Errorf("--eventlog-dir: %w", err)
		}
		go srv.Ingest().WatchEventLogs(ctx, *watchTenant, *eventLogDir, *poll)
	}
	if *profileDir != "" {
		if _, err := os.Stat(*profileDir); err != nil {
			return fmt.Errorf("--profile-dir: %w", err)
		}
		go srv.Ingest().WatchProfileDir(ctx, *watchTenant, *profileDir, *profilePoll, filepath.Join(*data, "profile-dir.json"))
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

// preloadFile is one file of the sample data the server preloads.
type preloadFile struct {
	path, kind, app string
}

// preloadFiles returns the sample data to preload from a corpus-like
// directory: a few event logs, Phil's straggler riddle (console log, Uber
// CPU/memory records and stacks, one app), and the JFR recordings and Uber
// stacks as profiles.
func preloadFiles(dir string) []preloadFile {
	files := []preloadFile{
		{"eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd", "eventlog", ""},
		{"eventlogs/nvidia/eventlog_4nodes_8cores_dynamic_alloc.zstd", "eventlog", ""},
		{"eventlogs/apache/local-1642039451826", "eventlog", ""},
		{"eventlogs/apache/app-20161116163331-0000", "eventlog", ""},
		{"eventlogs/sparklens/local-1532512550423", "eventlog", ""},
		{"eventlogs/sparklint/spark_event_log_example", "eventlog", ""},
		{"applogs/phil_stopwatch/ProfileStraggler/JobStraggler.log.gz", "logs", "ProfileStraggler"},
		{"jvm-profiler/phil_stopwatch/ProfileStraggler/CpuAndMemory.json.gz", "profile", "ProfileStraggler"},
		{"jvm-profiler/phil_stopwatch/ProfileStraggler/Stacktrace.json.gz", "profile", "ProfileStraggler"},
		{"applogs/phil_stopwatch/profile_straggler/Straggler_PySpark.log.gz", "logs", "profile_straggler"},
		{"jvm-profiler/phil_stopwatch/profile_straggler/CpuAndMemory.json.gz", "profile", "profile_straggler"},
		{"jvm-profiler/phil_stopwatch/profile_straggler/Stacktrace.json.gz", "profile", "profile_straggler"},
	}
	jfrs, _ := filepath.Glob(filepath.Join(dir, "jfr", "*.jfr.gz"))
	for _, p := range jfrs {
		rel, _ := filepath.Rel(dir, p)
		files = append(files, preloadFile{rel, "profile", ""})
	}
	return files
}

// preloadDir imports the sample data of dir into the default tenant. Event
// logs and container logs are imported again (replacing the same files);
// profiles only when the store does not hold them yet.
func preloadDir(srv *server.Server, db *store.DB, dir string) (int, error) {
	if _, err := os.Stat(dir); err != nil {
		return 0, err
	}
	already := map[string]bool{}
	db.Select("", store.Query{}, func(u *store.Upload) error {
		if u.Profile != nil {
			already[u.Profile.Source] = true
		}
		for _, src := range u.Sources {
			already[src] = true
		}
		return nil
	})
	n := 0
	var errs []error
	for _, f := range preloadFiles(dir) {
		if f.kind == "profile" && already[f.path] {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, f.path))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		imp := ingest.File{Name: f.path, Kind: f.kind, App: f.app, Data: data}
		if lp := format.LabelsBeside(filepath.Join(dir, f.path)); lp != "" {
			if imp.JFRLabels, err = os.ReadFile(lp); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if _, err := srv.Ingest().Import("", imp); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.path, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
