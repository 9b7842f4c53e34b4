package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

// startServe runs the sparkprof binary's serve command on a free port, with
// extra flags, and returns its base URL.
func startServe(t *testing.T, bin, data string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	return startServeIn(t, "", bin, data, extra...)
}

// startServeIn is startServe in the working directory dir ("" for the
// test's).
func startServeIn(t *testing.T, dir, bin, data string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, extra...)...)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if _, after, ok := strings.Cut(sc.Text(), "listening on "); ok {
			base, _, _ := strings.Cut(after, " ")
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd, base
		}
	}
	t.Fatalf("serve did not start: %v", sc.Err())
	return nil, ""
}

// waitFor polls done until it reports true. A busy machine may take long:
// only the test binary's -timeout bounds the wait, and what was waited for
// is said shortly before it would strike.
func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	waitUntil(t, what, func() error {
		if !done() {
			return errors.New("not yet")
		}
		return nil
	})
}

// waitUntil is waitFor of a check that says what it still misses: its
// last error is said with what was waited for.
func waitUntil(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline, bounded := t.Deadline()
	for err := check(); err != nil; err = check() {
		if bounded && time.Until(deadline) < 15*time.Second {
			t.Fatalf("still waiting for %s as the test's -timeout nears: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReady waits until the server at base answers /ready with 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	waitFor(t, base+"/ready", func() bool {
		resp, err := http.Get(base + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// newServer returns a server of cfg, logging nowhere, its event logs in a
// directory of the test's, closed when the test ends.
func newServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.EventLogDir == "" {
		cfg.EventLogDir = t.TempDir()
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s := server.New(cfg)
	t.Cleanup(func() { s.Close() })
	return s
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// TestMain runs the tests with a temporary directory of their own, and
// fails them if they leave anything in it: tests clean up what they make.
func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "sparkprof-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("TMPDIR", tmp)
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 && code == 0 {
		names := make([]string, len(left))
		for i, e := range left {
			names[i] = e.Name()
		}
		fmt.Fprintf(os.Stderr, "the tests left %s in the temporary directory\n", strings.Join(names, ", "))
		code = 1
	}
	os.RemoveAll(tmp)
	os.Exit(code)
}

// buildBinary builds the sparkprof binary once for the package's tests that
// run it as a process.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sparkprof-test-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "sparkprof")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestCrashSafety kills the server with SIGKILL during a stream of uploads,
// restarts it, sends again the uploads that got no answer, as an agent
// does, and checks that every upload is there exactly once: each
// acknowledged one survived, and a retry of one stored before the kill,
// its answer lost, was not stored twice.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	data := filepath.Join(dir, "data")
	cmd, base := startServe(t, bin, data)

	var mu sync.Mutex
	acked := map[int]bool{}
	unanswered := map[int]bool{} // sent when the server died
	send := func(base string, i int) (int, error) {
		// Each upload's value is unique: a duplicate would double it.
		body := fmt.Sprintf("main;work;step%d %d\n", i%7, i+1)
		req, _ := http.NewRequest("POST", base+"/ingest?"+url.Values{"name": {fmt.Sprintf("app%d", i)}}.Encode(), strings.NewReader(body))
		req.Header.Set("Idempotency-Key", fmt.Sprintf("upload-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i += 4 {
				select {
				case <-stop:
					return
				default:
				}
				code, err := send(base, i)
				if err != nil { // the server is gone
					mu.Lock()
					unanswered[i] = true
					mu.Unlock()
					return
				}
				if code == 200 {
					mu.Lock()
					acked[i] = true
					mu.Unlock()
				}
			}
		}()
	}
	for {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 40 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	close(stop)
	wg.Wait()

	cmd, base = startServe(t, bin, data)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	for i := range unanswered {
		if code, err := send(base, i); err != nil || code != 200 {
			t.Fatalf("retry of upload %d: %d %v", i, code, err)
		}
		acked[i] = true
	}
	for i := range acked {
		resp, err := http.Get(base + "/api/v1/render?" + url.Values{"query": {fmt.Sprintf(`{service_name="app%d"}`, i)}, "type": {"samples"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Flamebearer struct{ NumTicks int64 } `json:"flamebearer"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if r.Flamebearer.NumTicks != int64(i+1) {
			t.Errorf("acknowledged upload app%d: total %d after the crash, want %d", i, r.Flamebearer.NumTicks, i+1)
		}
	}
	t.Logf("%d uploads survived kill -9, %d of them sent again", len(acked), len(unanswered))
	if _, err := os.Stat(data); err != nil {
		t.Fatal(err)
	}
}

// TestImportSparkProfilerDir imports a directory laid out as Spark 4's
// profiler writes it and finds the executor labels on the server.
func TestImportSparkProfilerDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	out := filepath.Join(dir, "profiles", "app-20240101000000-0001")
	os.MkdirAll(out, 0o755)
	for i, src := range []string{"dump1.jfr.gz", "dump2.jfr.gz"} {
		data, err := os.ReadFile(corpus.Path(t, "jfr", src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(out, fmt.Sprintf("profile-exec-%d.jfr", i+1)), data, 0o644)
	}
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	// A rolling event log (a directory) goes as the History Server's zip.
	code, _, stderr := sparkprof(t, "import", "--server", base, filepath.Join(dir, "profiles"),
		corpus.Path(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"),
		corpus.Path(t, "eventlogs", "nvidia", "eventlog_v2_local-1623876083964"))
	if code != 0 || !strings.Contains(stderr, "imported 4 of 4") {
		t.Fatalf("import: exit %d, %s", code, stderr)
	}
	resp, err := http.Get(base + "/api/v1/label-values?name=spark_executor_id")
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	json.NewDecoder(resp.Body).Decode(&vals)
	resp.Body.Close()
	if fmt.Sprint(vals) != "[1 2]" {
		t.Errorf("executor ids %v, want [1 2]", vals)
	}
	resp, err = http.Get(base + "/api/v1/apps")
	if err != nil {
		t.Fatal(err)
	}
	var apps []struct {
		ID, Status      string
		FailedTaskCount int
	}
	json.NewDecoder(resp.Body).Decode(&apps)
	resp.Body.Close()
	got := map[string]int{}
	status := map[string]string{}
	for _, a := range apps {
		got[a.ID], status[a.ID] = a.FailedTaskCount, a.Status
	}
	// The profiler's app, whose event log was not imported, is listed from
	// its profiles.
	if _, rolling := got["local-1623876083964"]; len(apps) != 3 || got["application_1603128018386_7846"] != 53 || !rolling ||
		status["app-20240101000000-0001"] != "profiles" {
		t.Errorf("apps after importing the event logs: %+v", apps)
	}

	// The profiler's directory imported again, with a file it did not
	// hold: only the new one is stored.
	before := ticks(t, base, "", `{spark_executor_id="1"}`, "cpu")
	data, err := os.ReadFile(corpus.Path(t, "jfr", "dump1.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(out, "profile-exec-3.jfr"), data, 0o644)
	code, _, stderr = sparkprof(t, "import", "--server", base, filepath.Join(dir, "profiles"))
	if code != 0 || !strings.Contains(stderr, "imported 3 of 3") || !strings.Contains(stderr, "2 of them were profiles the server had already") {
		t.Fatalf("import again: exit %d, %s", code, stderr)
	}
	if after := ticks(t, base, "", `{spark_executor_id="1"}`, "cpu"); after != before || before == 0 {
		t.Errorf("executor 1's CPU samples: %d before importing again, %d after", before, after)
	}
	if n := ticks(t, base, "", `{spark_executor_id="3"}`, "cpu"); n != before {
		t.Errorf("executor 3's CPU samples: %d, want %d (the same recording as executor 1's)", n, before)
	}
}

// Until the store is open the port answers, but only /healthz succeeds;
// then the server's own answers take over.
func TestGate(t *testing.T) {
	var g gate
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w
	}
	if w := get("/healthz"); w.Code != 200 {
		t.Errorf("healthz while starting: %d", w.Code)
	}
	if w := get("/api/v1/apps"); w.Code != 503 || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "replaying") {
		t.Errorf("query while starting: %d %q", w.Code, w.Body.String())
	}
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g.open(newServer(t, server.Config{Store: db}))
	if w := get("/api/v1/apps"); w.Code != 200 {
		t.Errorf("query once open: %d %s", w.Code, w.Body.String())
	}
}

// TestImportMixedDir imports a directory as a user keeps Spark's outputs:
// a History Server log directory (a log file and a rolling log), a YARN
// application log directory and a JFR with the LabelsSnapshot Pyroscope's
// agent dumped beside it, among files that are neither.
func TestImportMixedDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	copyTo := func(from, to string) {
		t.Helper()
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		to = filepath.Join(dir, "outputs", to)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyTo(corpus.Path(t, "eventlogs", "apache", "local-1642039451826"), "spark-events/local-1642039451826")
	rolling := corpus.Path(t, "eventlogs", "apache", "eventlog_v2_local-1766844910796")
	for _, name := range []string{"appstatus_local-1766844910796", "events_1_local-1766844910796"} {
		copyTo(filepath.Join(rolling, name), filepath.Join("spark-events", "eventlog_v2_local-1766844910796", name))
	}
	copyTo(corpus.Path(t, "jfr", "dump1.jfr.gz"), "pyroscope/dump1.jfr.gz")
	copyTo(corpus.Path(t, "jfr", "dump1.labels.pb.gz"), "pyroscope/dump1.labels.pb.gz")
	copyTo(corpus.Path(t, "eventlogs", "golden", "apache", "app_environment_expectation.json"), "expected.json")
	// A YARN application log directory: the driver's log in the AM's container.
	copyTo(corpus.Path(t, "applogs", "nvidia", "driverlog"), "yarn/application_1700000000000_0001/container_1700000000000_0001_01_000001/stderr")

	cmd, base := startServe(t, bin, filepath.Join(dir, "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	code, _, stderr := sparkprof(t, "import", "--server", base, filepath.Join(dir, "outputs"))
	if code != 0 || !strings.Contains(stderr, "imported 4 of 4") || !strings.Contains(stderr, "skipped 1 file that is neither an event log nor a profile") {
		t.Fatalf("import: exit %d, %s", code, stderr)
	}
	getJSON := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var apps []struct {
		ID        string
		TaskCount int
	}
	getJSON("/api/v1/apps", &apps)
	got := map[string]int{}
	for _, a := range apps {
		got[a.ID] = a.TaskCount
	}
	// The YARN app's tasks are those its driver log reports (32).
	if _, ok := got["local-1642039451826"]; len(apps) != 3 || got["application_1700000000000_0001"] != 32 || !ok {
		t.Errorf("apps %+v, want the two event logs' and the YARN directory's", apps)
	}
	var threads []string
	getJSON("/api/v1/label-values?name=thread_name", &threads)
	if len(threads) == 0 || !strings.HasPrefix(threads[0], "pool-2-thread-") {
		t.Errorf("thread_name values %v, want the snapshot's pool-2-thread-N", threads)
	}
}

// import waits for a server that is still replaying its log (503 with
// Retry-After) and sends again, instead of reporting the file refused.
func TestImportWaitsForStartingServer(t *testing.T) {
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var g gate
	var requests atomic.Int32
	srv := newServer(t, server.Config{Store: db})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			// The first request finds the store replaying; then it opens.
			defer g.open(srv)
		}
		g.ServeHTTP(w, r)
	}))
	defer ts.Close()
	code, _, stderr := sparkprof(t, "import", "--server", ts.URL, corpus.Path(t, "jfr", "dump1.jfr.gz"))
	if code != 0 || !strings.Contains(stderr, "imported 1 of 1") || requests.Load() != 2 {
		t.Errorf("exit %d after %d requests: %s", code, requests.Load(), stderr)
	}
}

// An import with no server at its address says so, and how to name one,
// instead of Go's dial error alone.
func TestImportWithoutServer(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	addr := ts.URL
	ts.Close() // nothing listens there now
	code, _, stderr := sparkprof(t, "import", "--server", addr, corpus.Path(t, "jfr", "dump1.jfr.gz"))
	if code == 0 || !strings.Contains(stderr, "no sparkprof server answers at "+addr) || !strings.Contains(stderr, "--server") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// With --log-format json every line serve writes is a JSON object, the
// address it listens on among them.
func TestServeJSONLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var base string
	for base == "" && sc.Scan() {
		var rec struct{ Msg, URL string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %q", sc.Text())
		}
		if rec.Msg == "listening" {
			base = rec.URL
		}
	}
	if base == "" {
		t.Fatalf("no listening record: %v", sc.Err())
	}
	// "listening" comes as the port opens; /ready follows once the server
	// is set up.
	waitReady(t, base)
}

// import takes the server, tenant and token from the agent's environment
// variables when its flags do not name them.
func TestImportSettingsFromEnvironment(t *testing.T) {
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ts := httptest.NewServer(newServer(t, server.Config{Store: db, AuthToken: "s3cret"}))
	defer ts.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	t.Setenv("SPARKPROF_SERVER", ts.URL)
	t.Setenv("SPARKPROF_TENANT", "team-a")
	t.Setenv("SPARKPROF_AUTH_TOKEN_FILE", tokenFile)
	code, _, stderr := sparkprof(t, "import", corpus.Path(t, "jfr", "dump1.jfr.gz"))
	if code != 0 || !strings.Contains(stderr, "imported 1 of 1 inputs into "+ts.URL) {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The token itself, as the agent takes it.
	t.Setenv("SPARKPROF_AUTH_TOKEN_FILE", "")
	t.Setenv("SPARKPROF_AUTH_TOKEN", "s3cret")
	if code, _, stderr := sparkprof(t, "import", corpus.Path(t, "jfr", "dump2.jfr.gz")); code != 0 {
		t.Fatalf("with SPARKPROF_AUTH_TOKEN: exit %d: %s", code, stderr)
	}
	if got := db.Tenants(); !slices.Contains(got, "team-a") {
		t.Errorf("tenants %v, want team-a", got)
	}
}

// TestServeProfileDir runs serve --profile-dir over a directory laid out as
// Spark's profiler plugin copies recordings to its dfsDir: a chunk copied
// is imported into the --watch-tenant, and after a restart only the chunk
// copied since.
func TestServeProfileDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	profiles := filepath.Join(dir, "profiles")
	rec := filepath.Join(profiles, "app-20240101000000-0001", "profile-exec-5.jfr")
	os.MkdirAll(filepath.Dir(rec), 0o755)
	chunk1, chunk2 := corpus.Read(t, "jfr", "dump1.jfr.gz"), corpus.Read(t, "jfr", "dump2.jfr.gz")
	// wait waits for executor 5's CPU total to reach want.
	wait := func(base string, want int64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("executor 5's CPU total to reach %d", want), func() bool {
			return ticks(t, base, "spark4", `{spark_app_id="app-20240101000000-0001", spark_executor_id="5"}`, "cpu") == want
		})
	}
	data := filepath.Join(dir, "data")
	cmd, base := startServe(t, bin, data, "--profile-dir", profiles, "--profile-poll", "100ms", "--watch-tenant", "spark4")
	if err := os.WriteFile(rec, chunk1, 0o644); err != nil {
		t.Fatal(err)
	}
	wait(base, offlineCPU(t, chunk1))
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()

	cmd, base = startServe(t, bin, data, "--profile-dir", profiles, "--profile-poll", "100ms", "--watch-tenant", "spark4")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	both := append(slices.Clone(chunk1), chunk2...)
	if err := os.WriteFile(rec, both, 0o644); err != nil {
		t.Fatal(err)
	}
	wait(base, offlineCPU(t, both))
}

// TestImportFolded imports the folded stacks convert wrote, with an event
// log: the server takes them as a CPU profile, and import names the apps
// it filled with their pages.
func TestImportFolded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	folded := filepath.Join(dir, "fastslow.folded")
	if code, _, stderr := sparkprof(t, "convert", "--to", "folded", "--type", "cpu", "-o", folded, corpus.Path(t, "jfr", "FastSlow_2024_01_16_180855.jfr.gz")); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	code, _, stderr := sparkprof(t, "import", "--server", base, folded, corpus.Path(t, "eventlogs", "apache", "local-1642039451826"))
	if code != 0 || !strings.Contains(stderr, "imported 2 of 2") {
		t.Fatalf("import: exit %d, %s", code, stderr)
	}
	for _, page := range []string{
		`local-1642039451826 "Spark shell": ` + base + "/#/apps/local-1642039451826",
		"fastslow (profiles): " + base + "/#/flame?query=" + url.QueryEscape(`{service_name="fastslow"}`),
	} {
		if !strings.Contains(stderr, "\n  "+page+"\n") {
			t.Errorf("import does not name %q:\n%s", page, stderr)
		}
	}
	if n := ticks(t, base, "", `{service_name="fastslow"}`, "cpu"); n != 10_120_000_000 {
		t.Errorf("CPU time of the folded stacks: %d ns, want 10,120,000,000 (the recording's 10.1 s)", n)
	}
}
