package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
)

// BenchmarkIngest measures the server's CPU time and stored bytes per
// upload for (a) a plain JFR recording (cortex, 685 KB) and (b) the
// async-profiler JFR with a LabelsSnapshot of task contexts (dump1), sent as
// the Pyroscope Java agent sends them: in the write-ahead log, and alone in
// a compacted block.
func BenchmarkIngest(b *testing.B) {
	cortex := corpus.Read(b, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	dump := corpus.Read(b, "jfr", "dump1.jfr.gz")
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
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			db, err := store.Open(dir, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s := New(Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			q := url.Values{"name": {"app.cpu{spark_app_id=app-1,spark_executor_id=1}"}, "format": {"jfr"}}.Encode()
			var cpu time.Duration
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				req := httptest.NewRequest("POST", "/ingest?"+q, bytes.NewReader(c.body))
				if c.contentType != "" {
					req.Header.Set("Content-Type", c.contentType)
				}
				w := httptest.NewRecorder()
				before := cpuTime()
				s.ServeHTTP(w, req)
				cpu += cpuTime() - before
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N)/1000, "cpu-ms/upload")
			size := dirSize(dir)
			b.ReportMetric(float64(size)/float64(b.N)/1024, "stored-KB/upload")

			// The upload alone compacted into a block: no symbols shared
			// with other uploads, the most a block spends on one.
			alone := b.TempDir()
			db2, err := store.Open(alone, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer db2.Close()
			req := httptest.NewRequest("POST", "/ingest?"+q, bytes.NewReader(c.body))
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			w := httptest.NewRecorder()
			New(Config{Store: db2}).ServeHTTP(w, req)
			if err := db2.Compact(); w.Code != http.StatusOK || err != nil {
				b.Fatalf("status %d, compaction %v", w.Code, err)
			}
			b.ReportMetric(float64(dirSize(alone))/1024, "block-KB/upload-alone")
		})
	}
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
