package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"

	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
)

// benchPipeline returns a pipeline into a new store and app store, closed
// when b ends.
func benchPipeline(b *testing.B) *Pipeline {
	db, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	apps, err := appstore.Open(b.TempDir(), analysis.DefaultThresholds)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close(); apps.Close() })
	return New(Config{Store: db, Apps: apps, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// BenchmarkContentKey measures the digest that tells a retry of an upload
// without an Idempotency-Key (ContentKey): for the plain JFR of
// BenchmarkIngest (a), what each Pyroscope-agent upload now pays.
func BenchmarkContentKey(b *testing.B) {
	cortex, err := format.Decompress(corpus.Read(b, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"), "cortex", 0)
	if err != nil {
		b.Fatal(err)
	}
	q := url.Values{"name": {"app{}"}, "format": {"jfr"}, "from": {"1764000000"}, "until": {"1764000010"}}
	b.SetBytes(int64(len(cortex)))
	for b.Loop() {
		if ContentKey(q, Parts{Data: cortex}) == "" {
			b.Fatal("no key")
		}
	}
}

// BenchmarkScanProfileDir measures a poll of serve --profile-dir when
// nothing was copied since the last one: 1,000 executors' recordings (10
// apps of 100), each looked at with a stat, none opened.
func BenchmarkScanProfileDir(b *testing.B) {
	dir := b.TempDir()
	for app := range 10 {
		d := filepath.Join(dir, fmt.Sprintf("app-20240101000000-%04d", app))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for e := range 100 {
			// Not a recording: the first poll skips past it, as past a
			// damaged one, and it is then unchanged.
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("profile-exec-%d.jfr", e)), bytes.Repeat([]byte("x"), 100), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := benchPipeline(b)
	w := newProfileWatch("", s.log)
	s.scanProfileDir(context.Background(), "", dir, w)
	for b.Loop() {
		if n := s.scanProfileDir(context.Background(), "", dir, w); n != 0 {
			b.Fatalf("%d chunks imported from an unchanged directory", n)
		}
	}
}
