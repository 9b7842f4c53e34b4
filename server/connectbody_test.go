package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// zeros returns a gzip stream of n zero bytes: a bomb of n/1000 bytes.
func zeros(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for ; n > 0; n -= len(zero) {
		zw.Write(zero[:min(n, len(zero))])
	}
	zw.Close()
	return b.Bytes()
}

// serverOf returns the Server behind ts.
func serverOf(ts *httptest.Server) *Server { return ts.Config.Handler.(*Server) }

// Gzip bombs sent to the push API are inflated through the ingest memory,
// and refused once they pass it, before Connect reads them: they allocate
// no more than the budget each (B2: 32 pushes of 61 KB took the server to
// 4.6 GB). The allocations are the runtime's own count.
func TestPushBombsWithinBudget(t *testing.T) {
	const budget = 16 << 20
	ts, db := newTestServer(t, Config{IngestMemory: budget})
	bomb := zeros(t, 60<<20)
	const pushes = 4
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range pushes {
		req, _ := http.NewRequest("POST", ts.URL+"/push.v1.PusherService/Push", bytes.NewReader(bomb))
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("a push of %d bytes inflating to 60 MiB: %d %s, want resource_exhausted (429) or unavailable (503)", len(bomb), resp.StatusCode, body)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2*budget*pushes {
		t.Errorf("%d pushes of a 60 MiB gzip bomb allocated %d MiB, want at most twice the %d MiB ingest memory each", pushes, grew>>20, budget>>20)
	}
	if inUse, peak, limit := serverOf(ts).ingest.Memory(); inUse != 0 || peak > limit {
		t.Errorf("ingest memory: %d bytes in use after the pushes, a peak of %d of %d", inUse, peak, limit)
	}
	if n := countUploads(t, db, ""); n != 0 {
		t.Errorf("%d uploads stored", n)
	}
}

// A Connect request is read before it waits for a turn among the queries:
// one that waited past its body's deadline with its body whole was
// refused with 504 "body came too slowly".
func TestConnectBodyReadBeforeTurn(t *testing.T) {
	const grace = 200 * time.Millisecond
	ts, _ := newTestServer(t, Config{MaxConcurrentQueries: 1, BodyTimeout: grace})
	// A selector larger than the connection's read buffer, so that its
	// body is read from the connection, under its deadline.
	value := make([]byte, 32<<10)
	rand.Read(value)
	sel := `{service_name="` + hex.EncodeToString(value) + `"}`
	release, err := serverOf(ts).queries.take(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		c := querierv1connect.NewQuerierServiceClient(http.DefaultClient, ts.URL, connect.WithSendGzip())
		_, err := c.LabelNames(context.Background(), connect.NewRequest(&typesv1.LabelNamesRequest{Matchers: []string{sel}}))
		done <- err
	}()
	// Holding the only turn past the body's deadline is the point: the
	// request must not depend on how long it waits.
	time.Sleep(3 * grace)
	release()
	if err := <-done; err != nil {
		t.Errorf("a query that waited for its turn past its body's deadline: %v", err)
	}
}
