// Package sparktest runs real Spark for tests: the Spark lines that
// tools/spark/versions pins, each a pyspark distribution installed by
// scripts/spark-install.sh into build/spark/VERSION, running jobs with
// spark-submit on --master local-cluster[2,1,1024] (a master, a worker and
// two executor JVMs of one core each).
//
// When a line is not installed, tests that need it skip, except under
// CI=true, where they fail.
package sparktest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/repo"
)

// Spark is one installed Spark distribution.
type Spark struct {
	// Version is its version, as tools/spark/versions pins it: 3.5.9.
	Version string
	// Home is its SPARK_HOME, the pyspark package's directory: bin/,
	// jars/.
	Home string
	// Python is the python of its virtual environment, which has pyspark.
	Python string
}

// Major is the version's first number: 3 or 4.
func (s Spark) Major() string {
	major, _, _ := strings.Cut(s.Version, ".")
	return major
}

// Classpath is the classpath of Spark's own jars, for javac.
func (s Spark) Classpath() string { return filepath.Join(s.Home, "jars", "*") }

// Lines returns every Spark line of tools/spark/versions, installed. A line
// that is not installed skips the test, or fails it under CI=true.
func Lines(t testing.TB) []Spark {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatalf("sparktest: %v", err)
	}
	versions, err := pinned(filepath.Join(root, "tools", "spark", "versions"))
	if err != nil {
		t.Fatalf("sparktest: %v", err)
	}
	var lines []Spark
	for _, v := range versions {
		env := filepath.Join(root, "build", "spark", v)
		homes, _ := filepath.Glob(filepath.Join(env, "lib", "python3*", "site-packages", "pyspark"))
		if len(homes) == 0 {
			missing(t, fmt.Sprintf("Spark %s is not installed in %s: run scripts/spark-install.sh", v, env))
		}
		if _, err := os.Stat(filepath.Join(homes[0], "bin", "spark-submit")); err != nil {
			missing(t, fmt.Sprintf("Spark %s in %s has no bin/spark-submit (%v): run scripts/spark-install.sh", v, env, err))
		}
		lines = append(lines, Spark{Version: v, Home: homes[0], Python: filepath.Join(env, "bin", "python")})
	}
	return lines
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// pinned reads the versions file: a version a line, # comments.
func pinned(file string) ([]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var vs []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			vs = append(vs, line)
		}
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("%s names no version", file)
	}
	return vs, nil
}

var (
	jobsMu   sync.Mutex
	jobsJars = map[string]string{}
)

// JobsJar compiles the test jobs (jobs/, class dev.sparkprof.jobs.Jobs)
// against this line's jars, once per test process, into build/sparktest.
func (s Spark) JobsJar(t testing.TB) string {
	t.Helper()
	jobsMu.Lock()
	defer jobsMu.Unlock()
	if jar, ok := jobsJars[s.Version]; ok {
		return jar
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "build", "sparktest", s.Version)
	classes := filepath.Join(out, "classes")
	os.RemoveAll(out)
	if err := os.MkdirAll(classes, 0o755); err != nil {
		t.Fatal(err)
	}
	var srcs []string
	filepath.Walk(filepath.Join(root, "internal", "sparktest", "jobs"), func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".java") {
			srcs = append(srcs, p)
		}
		return nil
	})
	args := append([]string{"--release", "11", "-nowarn", "-cp", s.Classpath(), "-d", classes}, srcs...)
	if b, err := exec.Command("javac", args...).CombinedOutput(); err != nil {
		t.Fatalf("javac of the test jobs against Spark %s: %v\n%s", s.Version, err, b)
	}
	jar := filepath.Join(out, "jobs.jar")
	if b, err := exec.Command("jar", "--create", "--file", jar, "-C", classes, ".").CombinedOutput(); err != nil {
		t.Fatalf("jar: %v\n%s", err, b)
	}
	jobsJars[s.Version] = jar
	return jar
}

// Job is one spark-submit of a class of a jar, or of a Python script.
type Job struct {
	// Class and Jar are the main class and the application jar, or with
	// no Class the Python script (PythonJob); Args its arguments.
	Class, Jar string
	Args       []string
	// Conf are --conf settings; Jars, --jars.
	Conf map[string]string
	Jars []string
	// DriverJavaOptions and ExecutorJavaOptions are added to the JVMs'
	// options (after the temporary directory's).
	DriverJavaOptions, ExecutorJavaOptions string
	// Master is local-cluster[2,1,1024] unless set.
	Master string
}

// PythonJob returns the path of a PySpark script of the test jobs
// (internal/sparktest/jobs/pyspark), to run as a Job's Jar.
func PythonJob(t testing.TB, name string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "internal", "sparktest", "jobs", "pyspark", name)
}

// Run is a started spark-submit.
type Run struct {
	// AppID is the application's id, once Spark has said it.
	AppID string
	// Log is spark-submit's output, stdout and stderr, with the driver's
	// log; ExecutorLogs, each executor's stderr (read by Wait).
	Log          string
	ExecutorLogs map[string]string

	spark  Spark
	cmd    *exec.Cmd
	dir    string
	out    *os.File
	appID  chan string
	done   chan error
	waited bool
	err    error
	killed atomic.Pointer[string] // why the run was killed, if it was

	linesMu sync.Mutex
	lines   []string      // the output so far, for WaitLine
	more    chan struct{} // closed and replaced when a line arrives
	ended   bool          // the output has ended
}

var appIDLine = regexp.MustCompile(`(?:app ID|application ID|with ID) (app-[0-9]+-[0-9]+)`)

// Start starts spark-submit with the job. Spark's temporary and local
// directories are the test's; the worker's directory of the app, under
// SPARK_HOME/work, is removed when the test ends.
func (s Spark) Start(t testing.TB, j Job) *Run {
	t.Helper()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	master := j.Master
	if master == "" {
		master = "local-cluster[2,1,1024]"
	}
	conf := map[string]string{
		"spark.local.dir":                 filepath.Join(dir, "local"),
		"spark.ui.enabled":                "false",
		"spark.driver.extraJavaOptions":   strings.TrimSpace("-Djava.io.tmpdir=" + tmp + " " + j.DriverJavaOptions),
		"spark.executor.extraJavaOptions": strings.TrimSpace("-Djava.io.tmpdir=" + tmp + " " + j.ExecutorJavaOptions),
	}
	for k, v := range j.Conf {
		conf[k] = v
	}
	args := []string{"--master", master}
	if j.Class != "" {
		args = append(args, "--class", j.Class)
	}
	if len(j.Jars) > 0 {
		args = append(args, "--jars", strings.Join(j.Jars, ","))
	}
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--conf", k+"="+conf[k])
	}
	args = append(append(args, j.Jar), j.Args...)
	out, err := os.Create(filepath.Join(dir, "spark-submit.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(s.Home, "bin", "spark-submit"), args...)
	cmd.Env = append(os.Environ(), "SPARK_HOME="+s.Home, "PYSPARK_PYTHON="+s.Python, "TMPDIR="+tmp)
	r := &Run{spark: s, cmd: cmd, dir: dir, out: out, appID: make(chan string, 1), done: make(chan error, 1), more: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("spark-submit: %v", err)
	}
	pw.Close()
	go r.read(pr)
	go func() { r.done <- cmd.Wait() }()
	stopWatchdog := r.killBeforeDeadline(t)
	t.Cleanup(func() {
		stopWatchdog()
		if !r.waited {
			cmd.Process.Kill()
			<-r.done
		}
		for _, id := range r.appIDs() {
			os.RemoveAll(filepath.Join(s.Home, "work", id))
		}
	})
	return r
}

// deadlineMargin is how long before the test binary's deadline a run
// still going is killed: time for its test to fail with the run's log,
// where go test's timeout would panic, skip the cleanups and leave Spark
// running.
const deadlineMargin = 2 * time.Minute

// killBeforeDeadline kills the run, driver and executors, deadlineMargin
// before t's deadline, if t has one, until stop is called.
func (r *Run) killBeforeDeadline(t testing.TB) (stop func() bool) {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return func() bool { return false }
	}
	deadline, ok := d.Deadline()
	if !ok {
		return func() bool { return false }
	}
	return time.AfterFunc(time.Until(deadline)-deadlineMargin, func() {
		why := fmt.Sprintf("killed %v before the test binary's deadline (go test -timeout)", deadlineMargin)
		r.killed.Store(&why)
		r.cmd.Process.Kill()
		killExecutors(r.appIDs())
	}).Stop
}

// appIDs returns the ids of the apps spark-submit named: a driver that
// runs one SparkContext after another names each, and a test need not
// have asked for any (App).
func (r *Run) appIDs() []string {
	r.linesMu.Lock()
	defer r.linesMu.Unlock()
	ids := []string{}
	if r.AppID != "" {
		ids = append(ids, r.AppID)
	}
	for _, l := range r.lines {
		if m := appIDLine.FindStringSubmatch(l); m != nil && !slices.Contains(ids, m[1]) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// read copies spark-submit's output to its log file, noting the app id.
func (r *Run) read(pr *os.File) {
	defer pr.Close()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(r.out, line)
		if m := appIDLine.FindStringSubmatch(line); m != nil && !sent {
			r.appID <- m[1]
			sent = true
		}
		r.linesMu.Lock()
		r.lines = append(r.lines, line)
		close(r.more)
		r.more = make(chan struct{})
		r.linesMu.Unlock()
	}
	if !sent {
		close(r.appID)
	}
	r.linesMu.Lock()
	r.ended = true
	close(r.more)
	r.linesMu.Unlock()
}

// WaitLine waits until spark-submit prints a line that contains s (the
// driver's output or log) and returns it. It fails the test when the output
// ends first.
func (r *Run) WaitLine(t testing.TB, s string) string {
	t.Helper()
	seen := 0
	for {
		r.linesMu.Lock()
		lines, ended, more := r.lines, r.ended, r.more
		r.linesMu.Unlock()
		for ; seen < len(lines); seen++ {
			if strings.Contains(lines[seen], s) {
				return lines[seen]
			}
		}
		if ended {
			t.Fatalf("spark-submit ended without printing %q:\n%s", s, r.tail())
		}
		<-more
	}
}

// App waits until Spark names the application's id and returns it.
func (r *Run) App(t testing.TB) string {
	t.Helper()
	if r.AppID == "" {
		id, ok := <-r.appID
		if !ok {
			t.Fatalf("spark-submit ended without naming its application:\n%s", r.tail())
		}
		r.AppID = id
	}
	return r.AppID
}

// Wait waits for spark-submit to end and reads its log and the executors'.
// It fails the test when the job failed.
func (r *Run) Wait(t testing.TB) {
	t.Helper()
	if err := r.End(); err != nil {
		t.Fatalf("spark-submit on Spark %s: %v\n%s", r.spark.Version, err, r.tail())
	}
}

// End is Wait for a job that may fail: it returns spark-submit's error.
func (r *Run) End() error {
	if !r.waited {
		r.err = <-r.done
		if why := r.killed.Load(); why != nil {
			r.err = fmt.Errorf("%s: %w", *why, r.err)
		}
		r.waited = true
		r.out.Close()
		b, _ := os.ReadFile(r.out.Name())
		r.Log = string(b)
		if r.AppID == "" {
			if m := appIDLine.FindStringSubmatch(r.Log); m != nil {
				r.AppID = m[1]
			}
		}
		if r.AppID != "" {
			// spark-submit's end is the driver's: its executors' JVMs, which
			// its worker ended, may still be shipping their last profiles.
			waitExecutorsGone(r.AppID)
		}
		r.ExecutorLogs = map[string]string{}
		if r.AppID != "" {
			logs, _ := filepath.Glob(filepath.Join(r.spark.Home, "work", r.AppID, "*", "stderr"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				r.ExecutorLogs[filepath.Base(filepath.Dir(l))] = string(b)
			}
		}
	}
	return r.err
}

// Dir is the run's temporary directory.
func (r *Run) Dir() string { return r.dir }

// Pid is spark-submit's process id: the driver's JVM, whose children are
// the executors' JVMs in local-cluster mode.
func (r *Run) Pid() int { return r.cmd.Process.Pid }

// tail is the end of the log, for failure messages.
func (r *Run) tail() string {
	b, _ := os.ReadFile(r.out.Name())
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// waitExecutorsGone waits until no executor JVM of the app runs: a
// process whose command line is Spark's executor backend's with the app's
// id. Only the test's timeout bounds the wait.
func waitExecutorsGone(appID string) {
	for executorsRunning(appID) {
		time.Sleep(100 * time.Millisecond)
	}
}

// executorsRunning reports whether a process of the app's executors runs.
func executorsRunning(appID string) bool { return len(executorPids(appID)) > 0 }

// killExecutors kills the executors' JVMs of the apps.
func killExecutors(appIDs []string) {
	for _, id := range appIDs {
		for _, pid := range executorPids(id) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// executorPids returns the processes of the app's executors: those whose
// command line is Spark's executor backend's with the app's id.
func executorPids(appID string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		backend, app := false, false
		for i, a := range args {
			backend = backend || strings.HasSuffix(a, "ExecutorBackend")
			app = app || a == "--app-id" && i+1 < len(args) && args[i+1] == appID
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && backend && app {
			pids = append(pids, pid)
		}
	}
	return pids
}
