package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

func init() {
	register(&command{
		name:    "serve",
		usage:   "[--addr 127.0.0.1:4040] [--data DIR] [--retention 30d] [--auth-token-file FILE] [--preload DIR]",
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
	tokenFile := fs.String("auth-token-file", "", "file holding a bearer token that every request must carry")
	preload := fs.String("preload", "", "import the profiles of this directory at start (e.g. ../shared/testdata)")
	agentJar := fs.String("agent-jar", "agent/build/sparkprof-agent.jar", "agent jar served at /agent.jar")
	rate := fs.Float64("rate", 0, "uploads per second and tenant before 429 (0: no limit)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	keep, err := parseRetention(*retention)
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
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	db, err := store.Open(*data, store.Options{Retention: keep, Logger: log})
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := os.Stat(*agentJar); err != nil {
		*agentJar = ""
	}
	srv := server.New(server.Config{Store: db, AuthToken: token, Logger: log, AgentJar: *agentJar, RatePerSecond: *rate,
		EventLogDir: filepath.Join(*data, "eventlogs")})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(e.stderr, "sparkprof serve: listening on http://%s (data in %s)\n", ln.Addr(), *data)
	if *preload != "" {
		n, err := preloadDir(db, *preload)
		if err != nil {
			log.Warn("preload incomplete", "dir", *preload, "err", err)
		}
		apps := preloadEventLogs(srv, *preload)
		fmt.Fprintf(e.stderr, "sparkprof serve: preloaded %d profiles and %d event logs from %s\n", n, apps, *preload)
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

// preloadEventLogs imports a few event logs of the sample data, analysed as
// the apps the server shows.
func preloadEventLogs(srv *server.Server, dir string) int {
	n := 0
	for _, rel := range []string{
		"eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd",
		"eventlogs/nvidia/eventlog_4nodes_8cores_dynamic_alloc.zstd",
		"eventlogs/apache/local-1642039451826",
		"eventlogs/apache/app-20161116163331-0000",
		"eventlogs/sparklens/local-1532512550423",
		"eventlogs/sparklint/spark_event_log_example",
	} {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			continue
		}
		if err := srv.ImportEventLog("", filepath.Base(rel), data); err == nil {
			n++
		}
	}
	return n
}

func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		d, err := time.ParseDuration(days + "h")
		return 24 * d, err
	}
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// preloadDir imports the sample profiles of a corpus-like directory (JFR
// recordings and Uber Stacktrace records) into the default tenant, unless
// the store already holds them.
func preloadDir(db *store.DB, dir string) (int, error) {
	already := map[string]bool{}
	db.Select("", store.Query{}, func(u *store.Upload) error {
		already[u.Profile.Source] = true
		return nil
	})
	var paths []string
	for _, pattern := range []string{"jfr/*.jfr.gz", "jvm-profiler/*/*/Stacktrace.json.gz"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return 0, err
		}
		paths = append(paths, m...)
	}
	n := 0
	err := format.LoadAll(paths, format.Options{}, func(r format.Result) error {
		if r.Err != nil || already[r.Path] {
			return nil
		}
		app := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(r.Path), ".gz"), filepath.Ext(strings.TrimSuffix(r.Path, ".gz")))
		if strings.HasPrefix(filepath.Base(r.Path), "Stacktrace") {
			app = filepath.Base(filepath.Dir(r.Path))
		}
		ls := profile.Labels{{Name: profile.LabelServiceName, Value: app}}.Normalize()
		r.Profile.Labels = r.Profile.Labels.Merge(ls)
		if err := db.Append("", &store.Upload{From: r.Profile.Start, Until: r.Profile.End, Labels: ls, Agent: "preload", Profile: r.Profile}); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
