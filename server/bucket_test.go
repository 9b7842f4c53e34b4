package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob/fileblob"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// switchedBucket is a real bucket whose reads fail while down is set.
type switchedBucket struct {
	objstore.Bucket
	down atomic.Bool
}

func (b *switchedBucket) Write(ctx context.Context, name string, data []byte, ifNotExist bool) error {
	if b.down.Load() {
		return errors.New("injected: the bucket is unreachable")
	}
	return b.Bucket.Write(ctx, name, data, ifNotExist)
}

func (b *switchedBucket) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	if b.down.Load() {
		return errors.New("injected: the bucket is unreachable")
	}
	return b.Bucket.ReadAt(ctx, name, p, off)
}

// newBucketServer serves a store of opts over bucket b, its background
// rounds but the first an hour apart.
func newBucketServer(t *testing.T, b objstore.Bucket, opts store.Options) (*httptest.Server, *store.DB) {
	t.Helper()
	opts.Bucket, opts.FlushInterval = b, time.Hour
	db, err := store.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(newServer(t, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(func() { ts.Close(); db.Close() })
	return ts, db
}

func newSwitchedBucket(t *testing.T) *switchedBucket {
	t.Helper()
	fb, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fb.Close() })
	return &switchedBucket{Bucket: objstore.New(fb)}
}

// TestBucketDownIngest: while the bucket is down, uploads are acknowledged
// into the log up to the head's budget, then refused with 503 and
// Retry-After; once it is back, everything acknowledged reaches it.
func TestBucketDownIngest(t *testing.T) {
	b := newSwitchedBucket(t)
	ts, db := newBucketServer(t, b, store.Options{HeadBytes: 1 << 20})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	b.down.Store(true)
	acked := 0
	for i := range 50 {
		q := url.Values{"name": {"job{spark_app_id=app-1,spark_executor_id=" + strconv.Itoa(i) + "}"}, "format": {"jfr"}}
		req, _ := http.NewRequest("POST", ts.URL+"/ingest?"+q.Encode(), bytes.NewReader(jfr))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			break
		}
		if resp.StatusCode != 200 {
			t.Fatalf("upload %d: %d", i, resp.StatusCode)
		}
		acked++
	}
	if acked == 0 || acked == 50 {
		t.Fatalf("%d of 50 uploads acknowledged while the bucket was down; want some, then 503", acked)
	}
	ctx := context.Background()
	if err := db.Flush(ctx); err == nil {
		t.Fatal("a flush succeeded while the bucket was down")
	}
	b.down.Store(false)
	if err := db.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A node started now finds them all in the bucket.
	_, other := newBucketServer(t, b, store.Options{})
	if n := countUploads(t, other, "job"); n != acked {
		t.Errorf("the bucket holds %d uploads after the outage, want the %d acknowledged", n, acked)
	}
}

// TestMissingBlocks: a node whose bucket cannot be read answers from what
// it holds, naming the blocks it left out.
func TestMissingBlocks(t *testing.T) {
	b := newSwitchedBucket(t)
	ts, db := newBucketServer(t, b, store.Options{})
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
	ts2, _ := newBucketServer(t, b, store.Options{})
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

// TestQueryNodeRefusesUploads: a node of role query answers an upload
// with 422 naming its role, so that the sender's misrouting shows.
func TestQueryNodeRefusesUploads(t *testing.T) {
	ts, _ := newBucketServer(t, newSwitchedBucket(t), store.Options{Role: store.RoleQuery})
	q := url.Values{"name": {"job{spark_app_id=app-1}"}, "format": {"jfr"}}
	resp, err := http.Post(ts.URL+"/ingest?"+q.Encode(), "", bytes.NewReader(corpus.Read(t, "jfr", "dump1.jfr.gz")))
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(msg), "--role query") {
		t.Errorf("upload to a query node: %d %s, want 422 naming the role", resp.StatusCode, msg)
	}
}
