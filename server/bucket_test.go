package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
)

// switchedBucket is a real bucket whose reads fail while down is set.
type switchedBucket struct {
	store.Bucket
	down atomic.Bool
}

func (b *switchedBucket) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if b.down.Load() {
		return errors.New("injected: the bucket is unreachable")
	}
	return b.Bucket.ReadAt(ctx, name, p, off)
}

// newBucketServer serves a store over bucket b.
func newBucketServer(t *testing.T, b store.Bucket) (*httptest.Server, *store.DB) {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{Bucket: b, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(newServer(t, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(func() { ts.Close(); db.Close() })
	return ts, db
}

// TestMissingBlocks: a node whose bucket cannot be read answers from what
// it holds, naming the blocks it left out.
func TestMissingBlocks(t *testing.T) {
	fb, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	b := &switchedBucket{Bucket: store.NewBucket(fb)}
	ts, db := newBucketServer(t, b)
	q := url.Values{"name": {"job{spark_app_id=app-1,spark_executor_id=1}"}, "format": {"jfr"}}
	if code := post(t, ts, q, "", corpus.Read(t, "jfr", "dump1.jfr.gz")); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	ctx := context.Background()
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.CompactBucket(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	whole := render(t, ts, "job{}", "cpu")
	if whole.Samples == 0 || whole.MissingBlocks != nil {
		t.Fatalf("with the bucket up: %d samples, missing %v", whole.Samples, whole.MissingBlocks)
	}
	// A node started now has read the block's meta but none of its parts.
	ts2, _ := newBucketServer(t, b)
	b.down.Store(true)
	r := render(t, ts2, "job{}", "cpu")
	if len(r.MissingBlocks) != 1 || !strings.Contains(r.MissingBlocks[0], "/blocks/") || r.Samples != 0 {
		t.Errorf("with the bucket down: %d samples, missing %v; want the block named", r.Samples, r.MissingBlocks)
	}
	var top map[string]any
	getJSON(t, ts2, "/api/v1/top?"+url.Values{"query": {"job{}"}}.Encode(), &top)
	if m, _ := top["missingBlocks"].([]any); len(m) != 1 {
		t.Errorf("top with the bucket down names missing blocks %v", top["missingBlocks"])
	}
	b.down.Store(false)
	if r := render(t, ts2, "job{}", "cpu"); r.MissingBlocks != nil || r.Samples != whole.Samples {
		t.Errorf("with the bucket back: %d samples, missing %v; want %d", r.Samples, r.MissingBlocks, whole.Samples)
	}
}
