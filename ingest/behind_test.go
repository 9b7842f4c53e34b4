package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/store"
)

// laggingStore is a real store that says it is behind while behind is
// set, as store.DB does when its head outgrows twice its budget.
type laggingStore struct {
	*store.DB
	behind atomic.Bool
}

func (s *laggingStore) Backlogged() bool { return s.behind.Load() }

// readCounter counts the reads of a body.
type readCounter struct {
	r     io.Reader
	reads int
}

func (c *readCounter) Read(b []byte) (int, error) {
	c.reads++
	return c.r.Read(b)
}

// A store behind refuses an upload before its body is read or decoded,
// with Unavailable and a time to retry after, so a server behind spends
// no CPU on what it refuses; a retry of an upload stored before is still
// answered as stored; and once the store catches up the upload is taken.
func TestUploadRefusedBeforeItsBodyWhenBehind(t *testing.T) {
	_, db, apps := newTestPipeline(t)
	s := &laggingStore{DB: db}
	p := New(Config{Store: s, Apps: apps, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	upload := func(key string) (*readCounter, Stored, error) {
		body := &readCounter{r: strings.NewReader("main;work 5\nmain;idle 2\n")}
		q := url.Values{"name": {"app{spark_app_id=\"app-1\"}"}, "format": {"folded"}, "from": {"1700000000"}, "until": {"1700000010"}}
		st, err := p.Upload(context.Background(), Request{Key: key, Body: body, Size: -1, MaxBytes: 1 << 20,
			Protocol: &Pyroscope{Query: q}})
		return body, st, err
	}

	if _, _, err := upload("first"); err != nil {
		t.Fatal(err)
	}
	s.behind.Store(true)
	body, _, err := upload("second")
	var ke *errkind.Error
	if errkind.Of(err) != errkind.Unavailable || !errors.As(err, &ke) || ke.RetryAfter != backlogRetry || !strings.Contains(err.Error(), "behind") {
		t.Fatalf("upload to a store behind: %v, want Unavailable, retry after %v", err, backlogRetry)
	}
	if body.reads != 0 {
		t.Errorf("the refused upload's body was read %d times, want none", body.reads)
	}
	if _, st, err := upload("first"); err != nil || !st.Duplicate {
		t.Errorf("a retry of a stored upload while behind: %+v, %v, want it answered as stored", st, err)
	}
	s.behind.Store(false)
	if _, _, err := upload("second"); err != nil {
		t.Fatalf("after the store caught up: %v", err)
	}
	if n := countUploads(t, db); n != 2 {
		t.Errorf("%d uploads stored, want 2", n)
	}
}
