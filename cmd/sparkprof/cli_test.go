package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	gpprof "github.com/google/pprof/profile"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/pproftool"
	"github.com/sparkprof/sparkprof/profile"
)

// sparkprof runs the command line in-process and returns its exit code,
// stdout and stderr.
func sparkprof(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), &env{stdout: &out, stderr: &errb}, args)
	return code, out.String(), errb.String()
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := sparkprof(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, c := range []string{"flame", "diff", "top", "convert", "version"} {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(out) {
			t.Errorf("help does not list %s:\n%s", c, out)
		}
	}
}

// help of a command, like its -h, lists its flags.
func TestHelpOfCommand(t *testing.T) {
	for _, c := range []struct{ args, want []string }{
		{[]string{"help", "serve"}, []string{"usage: sparkprof serve [--addr", "flags:", "-tls-cert", "-eventlog-dir"}},
		{[]string{"help", "top"}, []string{"usage: sparkprof top", "-sort", "-stage"}},
		{[]string{"help", "version"}, []string{"usage: sparkprof version\n"}},
	} {
		code, out, _ := sparkprof(t, c.args...)
		for _, w := range c.want {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("%v: exit %d, output lacks %q:\n%s", c.args, code, w, out)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	straggler := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	emptyToken := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(emptyToken, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"nosuch"}, 2, `unknown command "nosuch"`},
		{[]string{"flame"}, 2, "no input paths"},
		{[]string{"flame", "-o", "x.png", straggler}, 2, "want a .html or .svg file"},
		{[]string{"convert", straggler}, 2, "--to is required"},
		{[]string{"convert", "--to", "json", straggler}, 2, `--to "json"`},
		{[]string{"top", "--stage", "x", straggler}, 2, "want a stage id"},
		{[]string{"top", "--thread", "(", straggler}, 2, "--thread"},
		{[]string{"top", "--state", "SLEEPY", straggler}, 2, `unknown thread state "SLEEPY"`},
		{[]string{"top", "--format", "xml", straggler}, 2, `--format "xml"`},
		{[]string{"top", "--from", "yesterday", straggler}, 2, "want RFC 3339"},
		{[]string{"diff", straggler}, 2, "want two inputs"},
		{[]string{"top", "--type", "alloc", straggler}, 1, "no such samples; they have samples:count"},
		{[]string{"top", filepath.Join(t.TempDir(), "missing.jfr")}, 1, "missing.jfr"},
		{[]string{"top", corpus.Path(t, "pyspark-profiler", "phil_stopwatch", "profile_straggler", "s_1_1401_cpumem.json.gz")}, 1, "only metric series (python.memory.rss): sparkprof analyze draws them"},
		{[]string{"serve", "--retention", "30days"}, 2, `--retention: duration "30days"`},
		{[]string{"serve", "--block-span", "10s"}, 2, "--block-span 10s: want between 1m and 24h"},
		{[]string{"serve", "--key-window", "0s"}, 2, "--key-window 0s: want a positive duration"},
		{[]string{"serve", "--auth-token-file", emptyToken}, 1, "no token: write one in it"},
		{[]string{"serve", "--tls-cert", emptyToken}, 2, "--tls-cert and --tls-key go together"},
		{[]string{"serve", "--log-format", "xml"}, 2, `--log-format "xml": want text or json`},
		{[]string{"serve", "--tls-cert", emptyToken, "--tls-key", emptyToken}, 1, "want PEM files of a certificate and its private key"},
		{[]string{"serve", "--tls-cert", "nosuch.pem", "--tls-key", emptyToken}, 1, "nosuch.pem"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := sparkprof(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
}

// TestBadInputSkipped checks that a corrupt input among good ones is named
// on stderr while the others still produce output, and that an input with
// nothing readable fails.
func TestBadInputSkipped(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.jfr")
	if err := os.WriteFile(bad, []byte("FLR\x00\x00\x02\x00\x01garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	code, out, stderr := sparkprof(t, "top", "-n", "1", bad, good)
	if code != 0 || !strings.Contains(stderr, "broken.jfr") || !strings.Contains(stderr, "1 of 2 inputs skipped") || !strings.Contains(out, "total 47,473") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	code, _, stderr = sparkprof(t, "top", bad)
	if code != 1 || !strings.Contains(stderr, "none of the 1 inputs") {
		t.Errorf("only a bad input: exit %d, stderr %s", code, stderr)
	}
}

// TestConvertCombinedStackGolden folds phil_stopwatch's combined JVM and
// PySpark stacks exactly as its fold_stacks.py did, line numbers included.
func TestConvertCombinedStackGolden(t *testing.T) {
	in := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.json.gz")
	code, out, stderr := sparkprof(t, "convert", "--to", "folded", "--lines", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := corpus.Read(t, "jvm-profiler", "phil_stopwatch", "profile_slacker", "CombinedStack.folded.gz")
	got, wantLines := sortedLines(out), sortedLines(string(want))
	if len(got) != 43 || !slices.Equal(got, wantLines) {
		t.Errorf("folded output (%d lines) differs from the golden (%d lines)", len(got), len(wantLines))
	}
}

// TestTopStraggler checks the straggler riddle: the busy task thread spends
// ~99% of its samples in the List append (:+) called from JobStraggler, with
// TraversableOnce.nonEmpty as the top self frame.
func TestTopStraggler(t *testing.T) {
	in := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	args := []string{"top", "-n", "0", "--thread", "Executor task launch", "--state", "RUNNABLE"}
	code, out, stderr := sparkprof(t, append(args, in)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) < 3 || !strings.HasSuffix(rows[2], "scala.collection.TraversableOnce$class.nonEmpty") || !strings.Contains(rows[2], "1,044") {
		t.Errorf("top self row = %q, want TraversableOnce$class.nonEmpty with 1,044 samples\n%s", rows[2], out)
	}
	m := regexp.MustCompile(`(?m)^\s*\S+\s+\S+\s+([\d,]+)\s+([\d.]+)%\s+scala\.collection\.SeqLike\$class\.\$colon\$plus$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no SeqLike$class.$colon$plus row:\n%s", out)
	}
	if pct, _ := strconv.ParseFloat(m[2], 64); pct < 99 {
		t.Errorf(":+ covers %s%% of busy task samples, want >= 99%%", m[2])
	}
	if !strings.Contains(out, "profile.sparkjobs.JobStraggler$$anonfun$3.apply") {
		t.Errorf("JobStraggler frame missing from the table")
	}
}

func TestFlameAndDiffFiles(t *testing.T) {
	dir := t.TempDir()
	jfrFile := corpus.Path(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	a := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "profile_straggler", "Stacktrace.json.gz")
	b := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	tests := []struct {
		name string
		args []string
		out  string
		want []string // substrings of the output file
	}{
		{"html", []string{"flame", "--type", "cpu", jfrFile}, "cpu.html", []string{"<!DOCTYPE html", "kafka"}},
		{"svg alloc", []string{"flame", "--type", "alloc", jfrFile}, "alloc.svg", []string{"<svg", "alloc"}},
		{"diff html", []string{"diff", a, b}, "diff.html", []string{"<!DOCTYPE html", "JobStraggler"}},
		{"diff svg", []string{"diff", a, b}, "diff.svg", []string{"<svg", "JobStraggler"}},
		{"convert", []string{"convert", "--to", "speedscope", jfrFile}, "cpu.speedscope.json", []string{`"shared"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, tt.out)
			args := append([]string{tt.args[0], "-o", out}, tt.args[1:]...)
			code, _, stderr := sparkprof(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			// Every command that writes a file says so.
			if !strings.HasPrefix(stderr, "wrote "+out+" (") {
				t.Errorf("stderr %q does not say what was written", stderr)
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !bytes.Contains(bytes.ToLower(data), bytes.ToLower([]byte(w))) {
					t.Errorf("%s lacks %q", tt.out, w)
				}
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestConvertPprofDefaultType converts a recording of wall and CPU samples
// to pprof: go tool pprof shows its CPU time, the total top shows.
func TestConvertPprofDefaultType(t *testing.T) {
	in := corpus.Path(t, "jfr", "async-profiler.jfr.gz")
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	if code, _, stderr := sparkprof(t, "convert", "--to", "pprof", "-o", out, in); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, top, _ := sparkprof(t, "top", "-n", "1", in)
	r := pproftool.Top(t, out)
	want := "cpu:nanoseconds, total " + profile.FormatValue(r.Total, "nanoseconds") + "\n"
	if r.Type != "cpu" || !strings.HasPrefix(top, want) {
		t.Errorf("go tool pprof shows %s, total %d ns; sparkprof top says %q", r.Type, r.Total, top[:strings.IndexByte(top, '\n')+1])
	}
}

// TestFilterHint: a filter on a label none of the inputs carry says so,
// with the labels they do carry; one on a label they carry says nothing.
func TestFilterHint(t *testing.T) {
	in := corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz")
	_, _, stderr := sparkprof(t, "top", "--stage", "0", in)
	if !strings.Contains(stderr, "--stage 0 selects nothing: no sample of the inputs has a spark_stage_id label (they carry the labels host, spark_task_id, thread_pool)") {
		t.Errorf("--stage without stage labels: %q", stderr)
	}
	if _, _, stderr := sparkprof(t, "top", "--label", "spark_task_id=1", "--label", "spark_stage_id!=3", in); stderr != "" {
		t.Errorf("filters on labels the inputs carry, or that need none: %q", stderr)
	}
}

// TestConvertPprofValid checks that a JFR converted to pprof parses with
// google/pprof and keeps the sample total.
func TestConvertPprofValid(t *testing.T) {
	in := corpus.Path(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	out := filepath.Join(t.TempDir(), "cpu.pb.gz")
	if code, _, stderr := sparkprof(t, "convert", "--to", "pprof", "--type", "cpu", "-o", out, in); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := gpprof.Parse(f)
	if err != nil {
		t.Fatalf("go tool pprof could not read the output: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[0]
	}
	_, folded, _ := sparkprof(t, "convert", "--to", "folded", "--type", "cpu", in)
	var want int64
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		if strings.HasPrefix(l, "#") {
			continue // the header naming the type
		}
		var v int64
		for _, c := range l[strings.LastIndexByte(l, ' ')+1:] {
			v = v*10 + int64(c-'0')
		}
		want += v
	}
	if len(p.Sample) == 0 || sum != want {
		t.Errorf("pprof total %d over %d samples, folded total %d", sum, len(p.Sample), want)
	}
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	slices.Sort(lines)
	return lines
}

var update = flag.Bool("update", false, "rewrite golden files")

// checkGolden compares out with the golden file testdata/name, or with
// -update rewrites it; test names the tests that rewrite it.
func checkGolden(t *testing.T, name, out, test string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("the output differs from %s; run go test ./cmd/sparkprof -run %s -update and review the diff:\n%s", golden, test, out)
	}
}

// TestAnalyzeJSONGolden pins the JSON schema of analyze (docs/analyze-json.md)
// on a small real log.
func TestAnalyzeJSONGolden(t *testing.T) {
	in := corpus.Path(t, "eventlogs", "apache", "local-1642039451826")
	code, out, stderr := sparkprof(t, "analyze", "--json", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The source path depends on where the corpus is.
	out = strings.ReplaceAll(out, in, "local-1642039451826")
	checkGolden(t, "analyze-local-1642039451826.json", out, "AnalyzeJSON")
	var r struct {
		App struct {
			ID        string `json:"id"`
			TaskCount int    `json:"taskCount"`
		} `json:"app"`
		Stages   []map[string]any `json:"stages"`
		Findings []map[string]any `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.App.ID != "local-1642039451826" || r.App.TaskCount != 35 || len(r.Stages) == 0 {
		t.Errorf("report %+v", r.App)
	}
}

func TestAnalyzeInputs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // in stdout
	}{
		{"straggler from a console log", []string{corpus.Path(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz")},
			[]string{"straggler: stage 0: task 0", "7.8x", "3 tasks (0 not successful), tasks ran on the driver (local mode), 1 job, 1 stage attempt (0 stages skipped), 0 SQL executions"}},
		{"a directory of a console log", []string{corpus.Path(t, "applogs", "phil_stopwatch", "profile_straggler")},
			[]string{"straggler: stage 0: task 0", "14.2x"}},
		{"event log with failures", []string{corpus.Path(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")},
			[]string{"53 task attempts did not succeed", "50 × Resubmitted", "8 executors, 75 jobs, 135 stage attempts (95 stages skipped), 28 SQL executions",
				"5 jobs ended without a JobStart"}},
		{"log and profiler records", []string{
			corpus.Path(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"),
			corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz")},
			[]string{"straggler: stage 0: task 0"}},
		{"truncated log", []string{corpus.Path(t, "eventlogs", "nvidia", "truncated_eventlog")},
			[]string{"no ApplicationEnd event"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := sparkprof(t, append([]string{"analyze"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// Profiles alone: the recommendations of their stacks.
	code, out, stderr := sparkprof(t, "analyze", corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "Stacktrace.json.gz"))
	if code != 0 || !strings.Contains(out, "recommendations from the profiles:") || !strings.Contains(out, "list-append: appending to an immutable Scala List") ||
		!strings.Contains(out, "flame graph: sparkprof flame --type samples --focus") {
		t.Errorf("profile alone: exit %d, %s\n%s", code, stderr, out)
	}
	// A text file that is no Spark log is not analysed as an empty app.
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("a shopping list\nnot a log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = sparkprof(t, "analyze", notes)
	if code != 1 || !strings.Contains(stderr, "notes.txt: no line in a layout of Spark's logs") || out != "" {
		t.Errorf("a text file: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
}

// TestAnalyzeHTML writes the HTML report of the straggler riddle with its
// CPU metrics and checks it holds the data the timeline draws, and the
// timeline.
func TestAnalyzeHTML(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.html")
	code, _, stderr := sparkprof(t, "analyze", "--html", out,
		corpus.Path(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"),
		corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"<!DOCTYPE html>", `"kind":"straggler"`, `"metrics":[{"name":"process.cpu.load"`, `"tasks":[[`, `"data-testid":"timeline"`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("report lacks %q", w)
		}
	}
}

// TestDiffTitles: the sides of a diff are named by their file names, with
// as many directories as tell two of the same name apart.
func TestDiffTitles(t *testing.T) {
	tests := []struct{ base, next, wantBase, wantNext string }{
		{"a/run1.jfr", "b/run2.jfr", "run1.jfr", "run2.jfr"},
		{"x/profile_straggler/Stacktrace.json.gz", "x/ProfileStraggler/Stacktrace.json.gz", "profile_straggler/Stacktrace.json.gz", "ProfileStraggler/Stacktrace.json.gz"},
		{"day1/app/exec-1.jfr", "day2/app/exec-1.jfr", "day1/app/exec-1.jfr", "day2/app/exec-1.jfr"},
		{"same.jfr", "same.jfr", "same.jfr", "same.jfr"},
		{"/abs/same.jfr", "/abs/same.jfr", "abs/same.jfr", "abs/same.jfr"},
	}
	for _, tt := range tests {
		if a, b := diffTitles(tt.base, tt.next); a != tt.wantBase || b != tt.wantNext {
			t.Errorf("diffTitles(%q, %q) = %q, %q; want %q, %q", tt.base, tt.next, a, b, tt.wantBase, tt.wantNext)
		}
	}
}

// TestServePortInUse: serve on a port another process has says so, and
// how to pick another.
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := sparkprof(t, "serve", "--addr", ln.Addr().String(), "--data", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "address already in use") || !strings.Contains(stderr, "pick another with --addr") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestConvertFoldedKeepsTop converts a CPU recording to folded stacks and
// reads them back: top gives the same table, a function one row (no line
// numbers split it) and its values CPU time (the header keeps the unit).
func TestConvertFoldedKeepsTop(t *testing.T) {
	in := corpus.Path(t, "jfr", "FastSlow_2024_01_16_180855.jfr.gz")
	folded := filepath.Join(t.TempDir(), "fastslow.folded")
	if code, _, stderr := sparkprof(t, "convert", "--to", "folded", "--type", "cpu", "-o", folded, in); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	code, want, stderr := sparkprof(t, "top", "-n", "5", "--type", "cpu", in)
	if code != 0 {
		t.Fatalf("top of the recording: exit %d: %s", code, stderr)
	}
	code, got, stderr := sparkprof(t, "top", "-n", "5", folded)
	if code != 0 {
		t.Fatalf("top of the folded stacks: exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(got, "cpu:nanoseconds, total 10.1 s\n") || strings.Count(got, "FastSlow.fib") != 1 {
		t.Errorf("top of the folded stacks, want CPU time and one FastSlow.fib row:\n%s", got)
	}
	if got != want {
		t.Errorf("top of the folded stacks:\n%s\nwant, as of the recording:\n%s", got, want)
	}
}
