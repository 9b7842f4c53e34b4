package server

import (
	"bytes"
	"context"
	"fmt"
	"github.com/sparkprof/sparkprof/internal/synth"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jfrpprof "github.com/grafana/jfr-parser/pprof"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
)

// hostileBudget is the ingest memory of the hostile-input suite: small,
// so that every bomb reaches it.
const hostileBudget = 16 << 20

// hostileServer is a server over a store in dir, to be restarted on it.
type hostileServer struct {
	t    *testing.T
	dir  string
	logs *scanLog // the server's log
	db   *store.DB
	srv  *Server
	ts   *httptest.Server
}

func (h *hostileServer) start() {
	h.t.Helper()
	db, err := store.Open(filepath.Join(h.dir, "data"), store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.db = db
	h.srv = New(Config{Store: db, IngestMemory: hostileBudget, EventLogDir: filepath.Join(h.dir, "eventlogs"),
		Logger: slog.New(h.logs)})
	h.ts = httptest.NewServer(h.srv)
}

func (h *hostileServer) stop() {
	h.ts.Close()
	h.srv.Close()
	h.db.Close()
}

// send posts body to path with the headers hdr (pairs), and returns the
// status and answer; a connection the server cut is status 0.
func (h *hostileServer) send(path string, body []byte, hdr ...string) (int, string) {
	req, _ := http.NewRequest("POST", h.ts.URL+path, bytes.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stored is what the suite stores before its attacks, and finds after
// each: the flame graph total of its folded upload, and its app.
type stored struct {
	ticks int64
	apps  string
}

func (h *hostileServer) stored() stored {
	h.t.Helper()
	var r renderResponse
	getJSON(h.t, h.ts, "/api/v1/render?query="+url.QueryEscape(`{service_name="before"}`), &r)
	var apps []struct {
		ID string `json:"id"`
	}
	getJSON(h.t, h.ts, "/api/v1/apps", &apps)
	var ids []string
	for _, a := range apps {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	return stored{ticks: r.Flamebearer.NumTicks, apps: strings.Join(ids, " ")}
}

// headerOnly opens n connections that send a request's headers, saying a
// body of 16 MiB, and nothing more; it returns them, to close.
func (h *hostileServer) headerOnly(path string, n int) []net.Conn {
	h.t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("tcp", h.ts.Listener.Addr().String())
		if err != nil {
			h.t.Fatal(err)
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/proto\r\nContent-Length: %d\r\n\r\n", path, 16<<20)
		conns = append(conns, c)
	}
	return conns
}

// hugeLabels returns a LabelsSnapshot of one context with n labels.
func hugeLabels(t *testing.T, n int) []byte {
	t.Helper()
	snap := &jfrpprof.LabelsSnapshot{Contexts: map[int64]*jfrpprof.Context{1: {Labels: map[int64]int64{}}}, Strings: map[int64]string{}}
	for i := range int64(n) {
		snap.Contexts[1].Labels[i+1] = 1
		snap.Strings[i+1] = fmt.Sprintf("label_%d", i)
	}
	b, err := snap.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// manyLabels returns n labels of distinct names, as an upload's name
// carries them.
func manyLabels(n int) string {
	var ls []string
	for i := range n {
		ls = append(ls, fmt.Sprintf("l%d=v", i))
	}
	return strings.Join(ls, ",")
}

// nested returns data gzipped n times.
func nested(t *testing.T, data []byte, n int) []byte {
	for range n {
		data = gzipBytes(t, data)
	}
	return data
}

// TestHostileInputs sends every entry point what a hostile or unlucky
// client might: gzip bombs, streams cut short or nested too deep, counts
// that overflow, huge label sets, bodies that never come, event logs of
// lines too long or too costly to decode (imported, or in a watched
// directory); and restarts
// the server after each. None is answered with a 5xx but the documented
// 503 of a spent budget, the ingest memory's own accounting never passes
// its limit and comes back to nothing, and what was stored before is
// still there after each restart.
func TestHostileInputs(t *testing.T) {
	h := &hostileServer{t: t, dir: t.TempDir(), logs: &scanLog{scanned: make(chan struct{}, 1)}}
	h.start()
	defer func() { h.stop() }()
	if code, body := h.send("/ingest?name=before&format=folded", []byte("main;work 7\nmain;idle 3\n")); code != 200 {
		t.Fatalf("the upload before: %d %s", code, body)
	}
	eventLog := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	if code, body := h.send("/api/v1/import?kind=eventlog&path=local-1642039451826", eventLog); code != 200 {
		t.Fatalf("the event log before: %d %s", code, body)
	}
	before := h.stored()
	if before.ticks != 10 || before.apps == "" {
		t.Fatalf("stored before: %+v, want 10 ticks and an app", before)
	}

	bomb := zeros(t, 60<<20)
	cut := gzipBytes(t, bytes.Repeat([]byte("main;work 1\n"), 1<<16))
	cut = cut[:len(cut)/2]
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	labelsCT, labelsBody := multipartJFR(t, jfr, hugeLabels(t, 100_000))
	pushOf := func(raw []byte) []byte {
		b, err := proto.Marshal(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
			Labels:  []*typesv1.LabelPair{{Name: "service_name", Value: "hostile"}},
			Samples: []*pushv1.RawSample{{RawProfile: raw}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const (
		push    = "/push.v1.PusherService/Push"
		querier = "/querier.v1.QuerierService/LabelNames"
	)
	plain, gzipped := []string{"Content-Type", "application/proto"}, []string{"Content-Type", "application/proto", "Content-Encoding", "gzip"}
	attacks := []struct {
		name string
		path string
		body []byte
		hdr  []string
		want []int // the statuses allowed; 0: the server cut the connection
	}{
		{"ingest: gzip bomb", "/ingest?name=hostile&format=folded", bomb, nil, []int{413, 503}},
		{"ingest: gzip bomb as Content-Encoding", "/ingest?name=hostile&format=folded", bomb, []string{"Content-Encoding", "gzip"}, []int{413, 503}},
		{"ingest: gzip stream cut short", "/ingest?name=hostile&format=folded", cut, nil, []int{422}},
		{"ingest: gzip nested four deep", "/ingest?name=hostile&format=folded", nested(t, []byte("main;work 1\n"), 4), nil, []int{422}},
		{"ingest: count past int64", "/ingest?name=hostile&format=folded", []byte("main;work 9223372036854775807\nmain;work 9223372036854775807\n"), nil, []int{400}},
		{"ingest: window past the end of time", "/ingest?name=hostile&format=folded&from=1&until=9999999999999999999", []byte("main;work 1\n"), nil, []int{400}},
		{"ingest: a context of 100,000 labels", "/ingest?name=hostile&format=jfr", labelsBody, []string{"Content-Type", labelsCT}, []int{422}},
		{"ingest: more than 30 labels", "/ingest?name=" + url.QueryEscape("hostile{"+manyLabels(40)+"}"), []byte("main;work 1\n"), nil, []int{400}},
		{"push: gzip bomb", push, bomb, gzipped, []int{429, 503}},
		{"push: gzip stream cut short", push, cut, gzipped, []int{400}},
		{"push: a profile that is a gzip bomb", push, pushOf(bomb), plain, []int{400, 503}},
		{"push: garbage", push, []byte("\xff\xff\xff\xff"), plain, []int{400}},
		{"querier: gzip bomb", querier, bomb, gzipped, []int{429, 503}},
		{"querier: gzip stream cut short", querier, cut, gzipped, []int{400}},
		{"import: gzip bomb as a profile", "/api/v1/import?path=bomb.jfr.gz", bomb, nil, []int{413, 503}},
		{"import: gzip stream cut short", "/api/v1/import?path=cut.folded.gz", cut, nil, []int{422}},
		{"import: event log that is garbage", "/api/v1/import?kind=eventlog&path=garbage", []byte("\x28\xb5\x2f\xfd garbage"), nil, []int{422}},
		{"import: event log of a 64 MiB line", "/api/v1/import?kind=eventlog&path=long.gz", gzipBytes(t, synth.EventLogBomb(synth.LongJSONString(64<<20))), nil, []int{413}},
		{"import: event log of a line of 512 KiB of values", "/api/v1/import?kind=eventlog&path=values.gz", gzipBytes(t, synth.EventLogBomb(synth.ManyJSONValues(512<<10))), nil, []int{413}},
	}
	for _, a := range attacks {
		code, body := h.send(a.path, a.body, a.hdr...)
		if !slices.Contains(a.want, code) {
			t.Errorf("%s: %d %.300s, want one of %v", a.name, code, body, a.want)
		}
		h.checkMemory(a.name)
		h.restart(a.name, before)
	}

	h.watchedBomb(before)

	// Connections that send headers and no body hold a first read's buffer
	// each, not the body they announce, and give it back when they go.
	for _, path := range []string{"/ingest?name=hostile", push, "/api/v1/import?path=x.jfr"} {
		conns := h.headerOnly(path, 20)
		h.waitMemory(func(inUse int64) bool { return inUse == 20*64<<10 }, path+": 20 connections that sent headers only")
		for _, c := range conns {
			c.Close()
		}
		h.waitMemory(func(inUse int64) bool { return inUse == 0 }, path+": the header-only connections closed")
		h.checkMemory(path + ": header-only connections")
		h.restart(path+": header-only connections", before)
	}
}

// checkMemory checks that the ingest memory never passed its limit, and
// is all back once the requests are answered.
func (h *hostileServer) checkMemory(what string) {
	h.t.Helper()
	h.waitMemory(func(inUse int64) bool { return inUse == 0 }, what+": the ingest memory given back")
	if _, peak, limit := h.srv.ingest.Memory(); peak > limit {
		h.t.Errorf("%s: the ingest memory reached %d bytes, past its limit of %d", what, peak, limit)
	}
}

// waitMemory waits until the ingest memory in use is as ok wants it: the
// server gives it back as its handlers end, after the client has its
// answer. The wait is bounded by a minute, only for a failure.
func (h *hostileServer) waitMemory(ok func(inUse int64) bool, what string) {
	h.t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if inUse, _, _ := h.srv.ingest.Memory(); ok(inUse) {
			return
		}
	}
	inUse, _, _ := h.srv.ingest.Memory()
	h.t.Fatalf("%s: %d bytes of ingest memory in use", what, inUse)
}

// restart stops and starts the server on its data, and checks that what
// was stored before is there.
func (h *hostileServer) restart(what string, before stored) {
	h.t.Helper()
	h.stop()
	h.start()
	if after := h.stored(); after != before {
		h.t.Errorf("%s, then a restart: stored %+v, want %+v", what, after, before)
	}
}

// watchedBomb has the server watch a directory (serve --eventlog-dir)
// holding event-log bombs beside a real log, for one scan: the bombs are
// not analysed, saying why, within the ingest memory, and the real log
// is.
func (h *hostileServer) watchedBomb(before stored) {
	h.t.Helper()
	dir := h.t.TempDir()
	for name, data := range map[string][]byte{
		"long.gz":             gzipBytes(h.t, synth.EventLogBomb(synth.LongJSONString(64<<20))),
		"values.gz":           gzipBytes(h.t, synth.EventLogBomb(synth.ManyJSONValues(512<<10))),
		"local-1642039451826": corpus.Read(h.t, "eventlogs", "apache", "local-1642039451826"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.srv.Ingest().WatchEventLogs(ctx, "", dir, time.Hour)
	}()
	<-h.logs.scanned
	cancel()
	<-done
	if refused := h.logs.refused(); len(refused) != 2 {
		h.t.Errorf("watched bombs: %d refused (%q), want 2", len(refused), refused)
	} else {
		for _, msg := range refused {
			if !strings.Contains(msg, "--ingest-memory") {
				h.t.Errorf("watched bomb refused with %q, which does not say how to raise the ingest memory", msg)
			}
		}
	}
	if apps := h.stored().apps; strings.Contains(apps, "app-bomb") || !strings.Contains(apps, "local-1642039451826") {
		h.t.Errorf("apps after the watched bombs: %s", apps)
	}
	h.checkMemory("watched event-log bombs")
	h.restart("watched event-log bombs", before)
}

// scanLog is a log handler that says when a scan of a watched event-log
// directory ended, and keeps why logs were not analysed.
type scanLog struct {
	scanned chan struct{}
	mu      sync.Mutex
	errs    []string
}

func (l *scanLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *scanLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *scanLog) WithGroup(string) slog.Handler            { return l }

func (l *scanLog) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "event log directory scanned":
		select {
		case l.scanned <- struct{}{}:
		default:
		}
	case "event log not analysed":
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				l.mu.Lock()
				l.errs = append(l.errs, a.Value.String())
				l.mu.Unlock()
			}
			return true
		})
	}
	return nil
}

func (l *scanLog) refused() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}
