package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	runtimemetrics "runtime/metrics"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/store"
)

// BenchmarkIngest measures the server's CPU time and stored bytes per
// upload for (a) a plain JFR recording (cortex, 685 KB) and (b) the
// async-profiler JFR with a LabelsSnapshot of task contexts (dump1), sent as
// the Pyroscope Java agent sends them: in the write-ahead log, and alone in
// a compacted block; and (b) with its samples spread over the task
// contexts of a busy executor's window (contexts-N: 5, 300, 1,300 and
// 5,000 tasks, synth.WithTaskContexts). With a JDK on PATH, also (a) as the
// JDK's own Flight
// Recorder writes it: the corpus has no JDK recording, so one is made first
// (10 s, about 12 s of set-up); and (a) as the agent sends a JVM's windows
// (jvm-windows, see benchmarkJVMWindows).
func BenchmarkIngest(b *testing.B) {
	// Each recording is dated to the window its uploads name (query,
	// below), so that its samples keep their times, a second apart, as a
	// live agent's window does, rather than all being moved to the start
	// of a window they lie years away from.
	const window = 1764000000000 // ms, the start of a partition
	dated := func(data []byte) []byte {
		d, err := jfr.Redate(data, window*1e6)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	cortex := dated(corpus.Read(b, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"))
	dump := dated(corpus.Read(b, "jfr", "dump1.jfr.gz"))
	labels := corpus.Read(b, "jfr", "dump1.labels.pb.gz")
	ct, multi := multipartJFR(b, gzipBytes(b, dump), gzipBytes(b, labels))
	cases := []struct {
		name        string
		body        []byte
		contentType string
	}{
		{"plain-jfr", cortex, ""},
		{"labelled-jfr", multi, ct},
	}
	for _, n := range []int{5, 300, 1300, 5000} {
		data, labels, err := synth.WithTaskContexts(dump, n)
		if err != nil {
			b.Fatal(err)
		}
		ct, body := multipartJFR(b, gzipBytes(b, data), gzipBytes(b, labels))
		cases = append(cases, struct {
			name        string
			body        []byte
			contentType string
		}{fmt.Sprintf("contexts-%d", n), body, ct})
	}
	if jdk := jdkRecording(b); jdk != nil {
		cases = append(cases, struct {
			name        string
			body        []byte
			contentType string
		}{"jdk-jfr", dated(jdk), ""})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			s, db := benchServer(b, dir)
			// Each upload names a window, as the Pyroscope Java agent's do:
			// the server keys such an upload by its content (contentKey),
			// and a window sent again would be a retry. The windows start a
			// millisecond apart, so that all fall in one partition, as the
			// same recording sent again did before uploads named windows.
			query := func(i int) string {
				from := window + i
				return url.Values{"name": {"app.cpu{spark_app_id=app-1,spark_executor_id=1}"}, "format": {"jfr"},
					"from": {strconv.Itoa(from)}, "until": {strconv.Itoa(from + 10000)}}.Encode()
			}
			var cpu time.Duration
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			i := 0
			for b.Loop() {
				cpu += ingestOne(b, s, query(i), c.body, c.contentType)
				i++
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/upload")
			size := dirSize(dir)
			b.ReportMetric(float64(size)/float64(b.N)/1024, "stored-KB/upload")
			reportCompaction(b, db, dir, b.N)

			// The upload alone compacted into a block: no symbols shared
			// with other uploads, the most a block spends on one.
			alone := b.TempDir()
			s2, db2 := benchServer(b, alone)
			ingestOne(b, s2, query(0), c.body, c.contentType)
			if err := db2.Compact(); err != nil {
				b.Fatalf("compaction: %v", err)
			}
			b.ReportMetric(float64(dirSize(alone))/1024, "block-KB/upload-alone")
		})
	}
	b.Run("jvm-windows", func(b *testing.B) { benchmarkJVMWindows(b, false) })
	b.Run("jvm-windows-gzip", func(b *testing.B) { benchmarkJVMWindows(b, true) })
}

// benchmarkJVMWindows measures the server's CPU time and stored bytes per
// upload for a JVM's consecutive uploads: 10 s windows of a thread
// compiling the agent's sources, recorded by the agent at its defaults, sent
// in order under one series name. Unlike the jdk-jfr case, which sends one
// recording again and again, every upload holds stacks its JVM's earlier
// uploads did not (see BENCHMARKS.md). After the last window the next
// uploads are another JVM's (another executor id). The windows are made
// when the case runs (about 65 s); SPARKPROF_JDK_WINDOWS names a recording
// of windows to use instead, for side-by-side runs of two builds. With gz,
// each window is gzipped, as the agent sends it with compression=gzip.
func benchmarkJVMWindows(b *testing.B, gz bool) {
	windows := jdkWindows(b)
	if gz {
		for i, w := range windows {
			windows[i] = gzipBytes(b, w)
		}
	}
	dir := b.TempDir()
	s, db := benchServer(b, dir)
	var cpu time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		name := fmt.Sprintf("app.cpu{spark_app_id=app-1,spark_executor_id=%d}", n/len(windows))
		q := url.Values{"name": {name}, "format": {"jfr"}}.Encode()
		cpu += ingestOne(b, s, q, windows[n%len(windows)], "")
		n++
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(n)/1000, "cpu-ms/upload")
	b.ReportMetric(float64(dirSize(dir))/float64(n)/1024, "stored-KB/upload")
	reportCompaction(b, db, dir, n)
}

// BenchmarkHead sends a JVM's agent windows (see benchmarkJVMWindows), as
// 100 executors would, to a store whose head is unbounded and to one with a
// 256 MiB budget, and reports the peak live heap (and the block cache's
// estimate of its share, bounded on its own), and the CPU time per
// upload: while uploading (handlers and background compaction) and in the
// compaction that makes the partition one block at the end. Run it with
// -benchtime 600x (a minute of 100 executors) or more.
func BenchmarkHead(b *testing.B) {
	windows := jdkWindows(b)
	for _, c := range []struct {
		name   string
		budget int64
	}{{"unbounded", 1 << 50}, {"head-256MiB", 256 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			db, err := store.Open(dir, store.Options{HeadBytes: c.budget})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := newServer(b, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			live := []runtimemetrics.Sample{{Name: "/gc/heap/live:bytes"}}
			var peak uint64
			var peakCache int64 // the block cache's estimate then
			n := 0
			start := cpuTime()
			for b.Loop() {
				name := fmt.Sprintf("app.cpu{spark_app_id=app-1,spark_executor_id=%d}", n%100)
				q := url.Values{"name": {name}, "format": {"jfr"}}.Encode()
				ingestOne(b, s, q, windows[(n/100)%len(windows)], "")
				n++
				runtimemetrics.Read(live)
				if v := live[0].Value.Uint64(); v > peak {
					peak, peakCache = v, db.Stats().CacheBytes
				}
			}
			upload := cpuTime() - start
			before := cpuTime()
			if err := db.Compact(); err != nil {
				b.Fatalf("compaction: %v", err)
			}
			final := cpuTime() - before
			b.ReportMetric(float64(peak)/(1<<20), "peak-live-heap-MB")
			b.ReportMetric(float64(upload.Microseconds())/float64(n)/1000, "cpu-ms/upload")
			b.ReportMetric(float64(final.Microseconds())/float64(n)/1000, "final-compact-cpu-ms/upload")
			b.ReportMetric(float64(db.Stats().Compactions), "compactions")
			b.ReportMetric(float64(peakCache)/(1<<20), "cache-MB-at-peak")
		})
	}
}

// reportCompaction compacts the n uploads of the store in dir into blocks,
// as the server does in the background once their partition is quiet, and
// reports that work's CPU time and the store's size afterwards, per upload:
// the rest of what an upload costs the server.
func reportCompaction(b *testing.B, db *store.DB, dir string, n int) {
	before := cpuTime()
	if err := db.Compact(); err != nil {
		b.Fatalf("compaction: %v", err)
	}
	cpu := cpuTime() - before
	b.ReportMetric(float64(cpu.Microseconds())/float64(n)/1000, "compact-cpu-ms/upload")
	b.ReportMetric(float64(dirSize(dir))/float64(n)/1024, "compacted-KB/upload")
}

// benchServer returns a server on a new store in dir, both closed when b
// ends.
func benchServer(b *testing.B, dir string) (*Server, *store.DB) {
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return newServer(b, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), db
}

// ingestOne sends one upload through s's handler, failing b unless it is
// accepted, and returns the process's CPU time it took.
func ingestOne(b *testing.B, s *Server, query string, body []byte, contentType string) time.Duration {
	req := httptest.NewRequest("POST", "/ingest?"+query, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	before := cpuTime()
	s.ServeHTTP(w, req)
	cpu := cpuTime() - before
	if w.Code != http.StatusOK {
		b.Fatalf("status %d: %s", w.Code, w.Body)
	}
	return cpu
}

// jdkWindows returns the windows of benchmarkJVMWindows, in order: the
// chunks of what the agent wrote for outputDir (each window a chunk) while
// a thread compiled the agent's sources (bench/jfr/Compile.java) for 60 s.
// SPARKPROF_JDK_WINDOWS names such a recording to use instead.
func jdkWindows(b *testing.B) [][]byte {
	rec := os.Getenv("SPARKPROF_JDK_WINDOWS")
	if rec == "" {
		if _, err := exec.LookPath("javac"); err != nil {
			b.Skip("no JDK on PATH")
		}
		if out, err := exec.Command(filepath.Join("..", "agent", "build.sh")).CombinedOutput(); err != nil {
			b.Fatalf("agent build: %v\n%s", err, out)
		}
		dir := b.TempDir()
		output := filepath.Join(dir, "output")
		if !runCompile(b, dir, 60, "-javaagent:"+filepath.Join("..", "agent", "build", "sparkprof-agent.jar")+"=outputDir="+output) {
			b.Skip("no JDK on PATH")
		}
		rec = filepath.Join(output, "unknown-app", "profile-driver.jfr")
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		b.Fatal(err)
	}
	windows, err := jfr.Chunks(data)
	if err != nil {
		b.Fatalf("%s: %v", rec, err)
	}
	if len(windows) < 2 {
		b.Fatalf("%s: %d windows, want several", rec, len(windows))
	}
	return windows
}

// jdkRecording returns a 10 s recording of the JDK's Flight Recorder at its
// "profile" settings (10 ms CPU sampling, allocation samples, locks, GC and
// the JDK's periodic events) of a thread compiling the agent's sources with
// the JDK's compiler (bench/jfr/Compile.java): deep, varied stacks, as a
// Spark executor's. It returns nil, and says why, without a JDK.
// SPARKPROF_JDK_JFR names a recording to use instead, for side-by-side runs
// of two builds on the same file.
func jdkRecording(b *testing.B) []byte {
	if f := os.Getenv("SPARKPROF_JDK_JFR"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	dir := b.TempDir()
	rec := filepath.Join(dir, "rec.jfr")
	if !runCompile(b, dir, 10, "-XX:StartFlightRecording=settings=profile,filename="+rec, "-Xlog:jfr=warning") {
		b.Log("no JDK on PATH: no jdk-jfr case")
		return nil
	}
	data, err := os.ReadFile(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("jdk-jfr: a JDK recording of %d bytes", len(data))
	return data
}

// runCompile runs the compile workload (bench/jfr/Compile.java: a thread
// compiling the agent's sources with the JDK's compiler) for seconds in a
// JVM started with flags, its classes and output in dir. It reports false,
// running nothing, without a JDK on PATH.
func runCompile(b *testing.B, dir string, seconds int, flags ...string) bool {
	java, err1 := exec.LookPath("java")
	javac, err2 := exec.LookPath("javac")
	if err1 != nil || err2 != nil {
		return false
	}
	if out, err := exec.Command(javac, "-d", dir, filepath.Join("..", "bench", "jfr", "Compile.java")).CombinedOutput(); err != nil {
		b.Fatalf("javac: %v\n%s", err, out)
	}
	args := append(flags, "-cp", dir, "Compile", strconv.Itoa(seconds), "1", filepath.Join(dir, "out"),
		filepath.Join("..", "agent", "src"), filepath.Join("..", "agent", "spark-api"))
	if out, err := exec.Command(java, args...).CombinedOutput(); err != nil {
		b.Fatalf("java: %v\n%s", err, out)
	}
	return true
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dirSize is the total size of the files under dir.
func dirSize(dir string) int64 {
	var size int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	return size
}
