package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/profile"
)

// offlineCPU decodes an agent's upload body, multipart or a bare JFR, and
// returns its CPU samples' total.
func offlineCPU(t *testing.T, body []byte) int64 {
	t.Helper()
	jfr := body
	if bytes.HasPrefix(body, []byte("--")) {
		boundary := strings.TrimPrefix(string(body[:bytes.IndexByte(body, '\r')]), "--")
		mr := multipart.NewReader(bytes.NewReader(body), boundary)
		for {
			part, err := mr.NextPart()
			if err != nil {
				t.Fatalf("no jfr part: %v", err)
			}
			if part.FormName() == "jfr" {
				jfr, _ = io.ReadAll(part)
				break
			}
		}
	}
	p, err := format.Decode(jfr, "window", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ty := range p.Types {
		if ty.Family() == "cpu" {
			return p.Total(profile.TypeID(i))
		}
	}
	return 0
}

// runWorkload runs the agent's Spark-like workload (agent/test) in a real
// JVM with the plugin, returning its stdout and stderr.
func runWorkload(t *testing.T, server, fraction, outDir string, extra ...string) (string, string) {
	t.Helper()
	return runWorkloadJVM(t, nil, server, fraction, outDir, extra...)
}

// workloadCommand is the java command that runs the test workload with
// JVM flags jvm, its arguments (server, fraction, output dir) and extra
// Spark settings.
func workloadCommand(jvm []string, server, fraction, outDir string, extra ...string) *exec.Cmd {
	cp := strings.Join([]string{"../../agent/build/test", "../../agent/build/sparkprof-agent.jar", "../../agent/build/api"}, string(os.PathListSeparator))
	args := append(append(append([]string{"-Xmx256m"}, jvm...), "-cp", cp, "dev.sparkprof.agent.SparkLikeWorkload", server, fraction, outDir), extra...)
	return exec.Command("java", args...)
}

// runWorkloadJVM is runWorkload with extra JVM flags.
func runWorkloadJVM(t *testing.T, jvm []string, server, fraction, outDir string, extra ...string) (string, string) {
	t.Helper()
	cmd := workloadCommand(jvm, server, fraction, outDir, extra...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("workload: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "DONE") || strings.Contains(stderr.String(), "Exception in thread") {
		t.Fatalf("workload did not finish cleanly:\n%s\n%s", stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

func getTenant(t *testing.T, base, path, tenant string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("X-Scope-OrgID", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func ticks(t *testing.T, base, tenant, sel, typ string) int64 {
	var r struct {
		Flamebearer struct{ NumTicks int64 } `json:"flamebearer"`
	}
	getTenant(t, base, "/api/v1/render?"+url.Values{"query": {sel}, "type": {typ}}.Encode(), tenant, &r)
	return r.Flamebearer.NumTicks
}

// metricPoints returns how many points each metric series of the selection
// has, by name.
func metricPoints(t *testing.T, base, tenant, sel string) map[string]int {
	var r struct {
		Series []struct {
			Name   string
			Points [][2]float64
		}
	}
	getTenant(t, base, "/api/v1/metrics?"+url.Values{"query": {sel}}.Encode(), tenant, &r)
	n := map[string]int{}
	for _, s := range r.Series {
		n[s.Name] += len(s.Points)
	}
	return n
}

// agentEnv is what the subtests of TestAgentWithServer share: the
// sparkprof binary, a scratch directory, and the base URL of a running
// sparkprof serve.
type agentEnv struct {
	bin, dir, base string
}

// TestAgentWithServer runs the JVM agent's plugin in a real JVM against a
// real sparkprof serve: samples arrive attributed to their stage and task,
// the last window arrives at shutdown, the fraction is honoured, a dead
// server costs nothing, and file mode writes Spark 4's layout.
func TestAgentWithServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a JVM")
	}
	if _, err := exec.LookPath("java"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("java not installed")
		}
		t.Skip("java not installed")
	}
	if out, err := exec.Command("../../agent/build.sh").CombinedOutput(); err != nil {
		t.Fatalf("agent build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	bin := buildBinary(t)
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	env := agentEnv{bin: bin, dir: dir, base: base}
	for _, tt := range []struct {
		name string
		run  func(*testing.T, agentEnv)
	}{
		{"live uploads attributed to stages and tasks", agentLiveUploads},
		{"task hooks attribute pool threads", agentTaskHooks},
		{"a server that comes up late gets the windows it missed, with their task parts", agentLateServer},
		{"an unusable async-profiler falls back to the Flight Recorder", agentAsyncProfilerFallback},
		{"async-profiler records the samples", agentAsyncProfiler},
		{"async-profiler's windows with no sample are stored", agentAsyncProfilerIdle},
		{"last window shipped at shutdown", agentLastWindow},
		{"a window whose answer was lost is sent again and stored once", agentLostAnswers},
		{"fraction 0 profiles nothing", agentFractionZero},
		{"a server over TLS, trusted through the JVM's trust store", agentTLS},
		{"server down", agentServerDown},
		{"javaagent", agentJavaagent},
		{"file mode", agentFileMode},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, env) })
	}
}

func agentLiveUploads(t *testing.T, e agentEnv) {
	// A small young generation makes collections certain.
	runWorkloadJVM(t, []string{"-Xmn4m"}, e.base, "1.0", "-", "spark.sparkprof.uploadInterval=1s", "spark.sparkprof.tenant=live")
	var stages, tasks []string
	getTenant(t, e.base, "/api/v1/label-values?name=spark_stage_id", "live", &stages)
	getTenant(t, e.base, "/api/v1/label-values?name=spark_task_id", "live", &tasks)
	if fmt.Sprint(stages) != "[1 2]" || len(tasks) != 8 {
		t.Errorf("stages %v, tasks %v; want stages 1 and 2 with 8 tasks", stages, tasks)
	}
	if n := ticks(t, e.base, "live", `{spark_stage_id="1", thread_pool="task"}`, "cpu"); n == 0 {
		t.Error("no CPU samples for stage 1")
	}
	if n := ticks(t, e.base, "live", `{spark_stage_id="2"}`, "lock"); n == 0 {
		t.Error("no lock samples for stage 2")
	}
	if n := ticks(t, e.base, "live", `{spark_task_id="3", spark_executor_id="7", spark_app_id="app-20261122000000-0001"}`, "cpu"); n == 0 {
		t.Error("no CPU samples for task 3 of executor 7")
	}
	// The Flight Recorder's GC, heap and CPU load events, as metric series.
	if m := metricPoints(t, e.base, "live", `{spark_executor_id="7"}`); m["jvm.gc.pause"] == 0 || m["jvm.heap.used"] == 0 || m["jvm.cpu.user"] == 0 {
		t.Errorf("metric points of executor 7: %v; want GC pauses, heap used and CPU load", m)
	}
	var agents []struct{ Uploads int }
	getTenant(t, e.base, "/api/v1/agents", "live", &agents)
	if len(agents) != 1 || agents[0].Uploads < 2 {
		t.Errorf("agents %+v, want one with several uploads", agents)
	}
}

func agentTaskHooks(t *testing.T, e agentEnv) {
	// Thread names without stage or task: only the plugin's task
	// windows, sent in the upload's tasks part, can attribute samples.
	runWorkloadJVM(t, []string{"-Dworkload.poolThreadNames=true"}, e.base, "1.0", "-", "spark.sparkprof.tenant=pool")
	var stages, tasks []string
	getTenant(t, e.base, "/api/v1/label-values?name=spark_stage_id", "pool", &stages)
	getTenant(t, e.base, "/api/v1/label-values?name=spark_task_id", "pool", &tasks)
	if fmt.Sprint(stages) != "[1 2]" || len(tasks) != 8 {
		t.Errorf("stages %v, tasks %v from the task hooks; want stages 1 and 2 with 8 tasks", stages, tasks)
	}
	if n := ticks(t, e.base, "pool", `{spark_stage_id="1"}`, "cpu"); n == 0 {
		t.Error("no CPU samples attributed to stage 1")
	}
}

func agentLateServer(t *testing.T, e agentEnv) {
	// Pool thread names: only the task parts attribute samples. The
	// server starts once stage 1's tasks have ended and the agent has
	// dropped windows it could not send, so that uploads fail after the
	// end: a retried window must carry the parts taken when it ended, not
	// those of its retry.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	late := exec.Command(e.bin, "serve", "--addr", addr, "--data", filepath.Join(e.dir, "late"))
	defer func() {
		if late.Process != nil {
			late.Process.Signal(syscall.SIGTERM)
			late.Wait()
		}
	}()
	// A queue of 200 KB holds one or two windows: the agent drops
	// the older ones while the server is down, and says so.
	work := workloadCommand([]string{"-Dworkload.poolThreadNames=true", "-Dworkload.gate=true"}, "http://"+addr, "1.0", "-",
		"spark.sparkprof.uploadInterval=300ms", "spark.sparkprof.maxQueuedBytes=200k")
	lateBase := "http://" + addr
	stderr := runStartingLate(t, work, late, lateBase)
	if !strings.Contains(stderr, "cannot reach") {
		t.Fatalf("no upload failed; the test needs the server late:\n%s", stderr)
	}
	all := ticks(t, lateBase, "", `{thread_pool="task"}`, "cpu")
	attributed := ticks(t, lateBase, "", `{spark_stage_id=~"1|2", thread_pool="task"}`, "cpu")
	if all == 0 || (all-attributed)*10 > all {
		t.Errorf("CPU on task threads: %d, of which %d attributed to a stage; want nearly all", all, attributed)
	}
	var agents []ingest.Agent
	getTenant(t, lateBase, "/api/v1/agents", "", &agents)
	dropped := int64(0)
	for _, a := range agents {
		dropped += a.Dropped
		if a.SpyName != "sparkprof" {
			t.Errorf("agent %+v: spyName %q, want sparkprof", a, a.SpyName)
		}
	}
	if dropped == 0 {
		t.Errorf("agents %+v: no dropped windows reported; agent's log:\n%s", agents, stderr)
	}
}

// runStartingLate runs the workload work, gated between its stages, to its
// end. Once the workload says stage 1 is done and the agent says it drops
// windows it could not send, it starts the server late, waits until the
// server at base is ready, and lets the workload go on. It returns the
// workload's stderr.
func runStartingLate(t *testing.T, work, late *exec.Cmd, base string) string {
	t.Helper()
	stdin, err := work.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := work.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := work.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	// The agent's log, and its first word of a dropped window.
	var stderr strings.Builder
	dropping := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		said := false
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "dropping the oldest profile windows") {
				close(dropping)
				said = true
			}
		}
		if !said {
			close(dropping) // the workload ended without: Wait below says why
		}
	}()
	sc := bufio.NewScanner(stdout)
	var out strings.Builder
	started := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() != "STAGE 1 DONE" {
			continue
		}
		<-dropping
		if err := late.Start(); err != nil {
			t.Fatal(err)
		}
		waitReady(t, base)
		started = true
		io.WriteString(stdin, "go\n")
		stdin.Close()
	}
	<-logDone
	if err := work.Wait(); err != nil || !strings.Contains(out.String(), "DONE work_ms") {
		t.Fatalf("workload: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	if !started {
		t.Fatalf("the workload never said stage 1 was done:\n%s", out.String())
	}
	return stderr.String()
}

func agentAsyncProfilerFallback(t *testing.T, e agentEnv) {
	_, stderr := runWorkload(t, e.base, "1.0", "-", "spark.sparkprof.uploadInterval=1s", "spark.sparkprof.tenant=apfallback",
		"spark.sparkprof.asyncProfiler="+filepath.Join(e.dir, "no-such-libasyncProfiler.so"))
	if !strings.Contains(stderr, "cannot be used; the Flight Recorder records the samples instead") {
		t.Errorf("no fallback message:\n%s", stderr)
	}
	if n := ticks(t, e.base, "apfallback", `{spark_stage_id="1"}`, "cpu"); n == 0 {
		t.Error("no CPU samples for stage 1 after the fallback")
	}
}

func agentAsyncProfiler(t *testing.T, e agentEnv) {
	// async-profiler's library from Maven Central, which
	// scripts/senders-install.sh extracts; SPARKPROF_ASYNC_PROFILER_LIB
	// names another build.
	lib := os.Getenv("SPARKPROF_ASYNC_PROFILER_LIB")
	if lib == "" {
		lib = senderFile(t, "libasyncProfiler-*.so")
	}
	_, stderr := runWorkloadJVM(t, []string{"-Xmn4m"}, e.base, "1.0", "-", "spark.sparkprof.uploadInterval=1s", "spark.sparkprof.tenant=ap",
		"spark.sparkprof.asyncProfiler="+lib)
	if !strings.Contains(stderr, "records the samples; garbage collections come from the JVM's notifications") || strings.Contains(stderr, "cannot be used") {
		t.Errorf("async-profiler not in use, or the Flight Recorder records collections:\n%s", stderr)
	}
	// Collections from the gc part; heap and CPU load from async-profiler's own events.
	if m := metricPoints(t, e.base, "ap", `{spark_executor_id="7"}`); m["jvm.gc.pause"] == 0 || m["jvm.heap.used"] == 0 || m["jvm.cpu.user"] == 0 {
		t.Errorf("metric points of executor 7: %v; want GC pauses, heap used and CPU load", m)
	}
	for _, c := range []struct{ sel, typ string }{
		{`{spark_stage_id="1", thread_pool="task"}`, "cpu"},
		{`{spark_task_id="3", spark_executor_id="7"}`, "cpu"},
		{`{spark_stage_id="2"}`, "lock"},
		{`{spark_executor_id="7"}`, "alloc"},
	} {
		if n := ticks(t, e.base, "ap", c.sel, c.typ); n == 0 {
			t.Errorf("no %s samples for %s", c.typ, c.sel)
		}
	}
	// Wall-clock samples beside CPU ones, when asked for.
	_, stderr = runWorkload(t, e.base, "1.0", "-", "spark.sparkprof.uploadInterval=1s", "spark.sparkprof.tenant=apwall",
		"spark.sparkprof.asyncProfiler="+lib, "spark.sparkprof.events=cpu,wall,gc")
	if strings.Contains(stderr, "cannot be used") {
		t.Errorf("async-profiler not in use with events=cpu,wall,gc:\n%s", stderr)
	}
	for _, typ := range []string{"cpu", "wall"} {
		if n := ticks(t, e.base, "apwall", `{spark_stage_id="1"}`, typ); n == 0 {
			t.Errorf("no %s samples for stage 1 with events=cpu,wall,gc", typ)
		}
	}
}

func agentAsyncProfilerIdle(t *testing.T, e agentEnv) {
	// Lock samples alone, and a pause between the stages: the windows of
	// the pause have no sample and no metric series, as an idle JVM's.
	lib := senderFile(t, "libasyncProfiler-*.so")
	_, stderr := runWorkloadJVM(t, []string{"-Dworkload.pauseMs=3000"}, e.base, "1.0", "-", "spark.sparkprof.uploadInterval=1s",
		"spark.sparkprof.tenant=apidle", "spark.sparkprof.asyncProfiler="+lib, "spark.sparkprof.events=lock")
	if strings.Contains(stderr, "refused") || strings.Contains(stderr, "cannot be used") {
		t.Errorf("async-profiler not in use, or windows refused:\n%s", stderr)
	}
	var agents []struct{ Uploads, Errors int }
	getTenant(t, e.base, "/api/v1/agents", "apidle", &agents)
	if len(agents) != 1 || agents[0].Uploads < 4 || agents[0].Errors != 0 {
		t.Errorf("agents %+v, want one with an upload a second of the pause and no error", agents)
	}
	if n := ticks(t, e.base, "apidle", `{spark_stage_id="2"}`, "lock"); n == 0 {
		t.Error("no lock samples for stage 2")
	}
}

func agentLastWindow(t *testing.T, e agentEnv) {
	// With a 10-minute interval, only the shutdown flush can deliver.
	runWorkload(t, e.base, "1.0", "-", "spark.sparkprof.uploadInterval=10m", "spark.sparkprof.tenant=last")
	if n := ticks(t, e.base, "last", `{spark_stage_id="2"}`, "lock"); n == 0 {
		t.Error("the last window did not arrive")
	}
}

// answerLosingProxy forwards uploads to a server and loses the answer of
// every other one among the first dozen: the server stored the window,
// the agent saw its connection close.
type answerLosingProxy struct {
	base       string // the server's
	mu         sync.Mutex
	firstBody  map[string][]byte // each key's first body the server took
	sent, lost int
}

func (p *answerLosingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequest(r.Method, p.base+r.URL.RequestURI(), bytes.NewReader(body))
	for _, h := range []string{"Content-Type", "Idempotency-Key", "X-Scope-OrgID"} {
		req.Header.Set(h, r.Header.Get(h))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	resp.Body.Close()
	key := r.Header.Get("Idempotency-Key")
	p.mu.Lock()
	p.sent++
	if _, ok := p.firstBody[key]; !ok && resp.StatusCode == 200 {
		p.firstBody[key] = body
	}
	lose := p.sent%2 == 1 && p.sent < 12 && resp.StatusCode == 200
	if lose {
		p.lost++
	}
	p.mu.Unlock()
	if lose {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Idempotent-Replayed", resp.Header.Get("Idempotent-Replayed"))
	w.WriteHeader(resp.StatusCode)
}

func agentLostAnswers(t *testing.T, e agentEnv) {
	p := &answerLosingProxy{base: e.base, firstBody: map[string][]byte{}}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	runWorkloadJVM(t, []string{"-Dworkload.pauseMs=1500"}, proxy.URL, "1.0", "-", "spark.sparkprof.uploadInterval=200ms", "spark.sparkprof.tenant=lost")
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost == 0 || p.sent <= len(p.firstBody) {
		t.Fatalf("%d uploads sent, %d answers lost, %d windows: the test needs lost answers and retries", p.sent, p.lost, len(p.firstBody))
	}
	var want int64
	for key, body := range p.firstBody {
		if key == "" {
			t.Fatal("an upload without an Idempotency-Key")
		}
		want += offlineCPU(t, body)
	}
	if got := ticks(t, e.base, "lost", "{}", "cpu"); got != want || want == 0 {
		t.Errorf("CPU samples stored %d, want %d: those of the %d distinct windows (%d uploads sent, %d answers lost)", got, want, len(p.firstBody), p.sent, p.lost)
	}
	t.Logf("%d windows, %d uploads sent, %d answers lost", len(p.firstBody), p.sent, p.lost)
}

func agentFractionZero(t *testing.T, e agentEnv) {
	_, stderr := runWorkload(t, e.base, "0", "-", "spark.sparkprof.tenant=zero")
	var agents []any
	getTenant(t, e.base, "/api/v1/agents", "zero", &agents)
	if len(agents) != 0 || !strings.Contains(stderr, "not picked") {
		t.Errorf("fraction 0: agents %v, stderr %s", agents, stderr)
	}
}

func agentTLS(t *testing.T, e agentEnv) {
	tdir := t.TempDir()
	certFile, keyFile := filepath.Join(tdir, "cert.pem"), filepath.Join(tdir, "key.pem")
	cert := writeCert(t, certFile, keyFile, 1)
	store := filepath.Join(tdir, "trust.p12")
	if out, err := exec.Command("keytool", "-importcert", "-noprompt", "-alias", "sparkprof", "-file", certFile,
		"-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput(); err != nil {
		t.Fatalf("keytool: %v\n%s", err, out)
	}
	tcmd, tbase := startServe(t, e.bin, filepath.Join(tdir, "data"), "--tls-cert", certFile, "--tls-key", keyFile)
	defer func() { tcmd.Process.Signal(syscall.SIGTERM); tcmd.Wait() }()
	runWorkloadJVM(t, []string{"-Djavax.net.ssl.trustStore=" + store, "-Djavax.net.ssl.trustStorePassword=changeit"}, tbase, "1.0", "-")
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := client.Get(tbase + "/api/v1/render?" + url.Values{"query": {`{spark_stage_id="1"}`}, "type": {"cpu"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Flamebearer struct{ NumTicks int64 } `json:"flamebearer"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Flamebearer.NumTicks == 0 {
		t.Errorf("CPU samples of stage 1 over TLS: %d (%v)", r.Flamebearer.NumTicks, err)
	}
}

func agentServerDown(t *testing.T, e agentEnv) {
	// Nothing listens on the discard port. The workload runs to its end
	// (runWorkload fails on an exception that reached it), and the agent
	// says that it could not send and what it dropped.
	ln := "http://127.0.0.1:9"
	_, stderr := runWorkload(t, ln, "1.0", "-", "spark.sparkprof.uploadInterval=500ms")
	if !strings.Contains(stderr, "cannot reach") || !strings.Contains(stderr, "stopped: 0 uploads") {
		t.Errorf("a dead server: the agent's log does not say that it could not send:\n%s", stderr)
	}
}

func agentJavaagent(t *testing.T, e agentEnv) {
	// The same workload started with -javaagent: the plugin finds the
	// running agent and adds its labels. With a 10-minute interval only
	// the JVM shutdown hook can ship the data (the recorder's own hook
	// may run first), which it waits for as long as the machine needs.
	// The window is gzipped, as the agent sends it with compression=gzip.
	cmd := workloadCommand([]string{"-javaagent:../../agent/build/sparkprof-agent.jar=server=" + e.base + ",tenant=ja,uploadInterval=10m,compression=gzip,stopWait=10m"}, "-", "1.0", "-")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "DONE") {
		t.Fatalf("javaagent run: %v\n%s", err, out)
	}
	if n := ticks(t, e.base, "ja", `{spark_stage_id="1", spark_executor_id="7"}`, "cpu"); n == 0 {
		t.Error("no CPU samples for stage 1 through the javaagent")
	}
}

func agentFileMode(t *testing.T, e agentEnv) {
	out := filepath.Join(e.dir, "profiles")
	runWorkload(t, "-", "1.0", out, "spark.sparkprof.uploadInterval=1s")
	path := filepath.Join(out, "app-20261122000000-0001", "profile-exec-7.jfr")
	p, err := format.Load(path, format.Options{})
	if err != nil {
		t.Fatalf("the output file: %v", err)
	}
	if id, _ := p.Labels.Get(profile.LabelExecutorID); id != "7" {
		t.Errorf("executor label from the path: %q", id)
	}
	stages := map[string]bool{}
	for _, s := range p.Samples {
		stages[p.Label(s, profile.LabelStageID)] = true
	}
	if !stages["1"] || !stages["2"] {
		t.Errorf("stages in the output file: %v", stages)
	}
}
