package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// trickle opens a connection to ts that sends an upload's headers and
// then its body a byte at a time, every gap; it returns the connection,
// and a channel that gets its answer's status line once one comes.
func trickle(t *testing.T, ts *httptest.Server, gap time.Duration) (net.Conn, <-chan string) {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /ingest?name=slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		answer <- strings.TrimSpace(line)
	}()
	go func() {
		for {
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(gap)
		}
	}()
	return c, answer
}

// Connections that trickle their bodies hold no upload turn: with all four
// turns' worth of them open, a normal upload is stored at once, while they
// are still sending. And a body slower than the minimum rate is cut off
// with a 400 that says why.
func TestTricklingBodies(t *testing.T) {
	ts, _ := newTestServer(t, Config{MaxConcurrentUploads: 4, BodyTimeout: time.Hour})
	var answers []<-chan string
	for range 4 {
		c, answer := trickle(t, ts, 50*time.Millisecond)
		defer c.Close()
		answers = append(answers, answer)
	}
	if code := post(t, ts, url.Values{"name": {"normal"}}, "", []byte("main;work 3\n")); code != 200 {
		t.Fatalf("a normal upload beside trickling ones: %d", code)
	}
	for i, a := range answers {
		select {
		case line := <-a:
			t.Errorf("trickling connection %d answered %q before its body was in", i, line)
		default:
		}
	}
	if got := render(t, ts, "normal{}", "samples").Flamebearer.NumTicks; got != 3 {
		t.Errorf("stored %d samples, want 3", got)
	}

	ts2, _ := newTestServer(t, Config{BodyTimeout: 100 * time.Millisecond, MinBodyRate: 1000})
	c, answer := trickle(t, ts2, 300*time.Millisecond)
	defer c.Close()
	if line := <-answer; !strings.Contains(line, "400") {
		t.Errorf("a body slower than the minimum rate: %q, want a 400", line)
	}
}

// A handler's panic is answered 500 with the request id, which the log
// names with the panic's stack, and counted.
func TestPanicAnswers500(t *testing.T) {
	var log bytes.Buffer
	s := newServer(t, Config{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	h := s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("a handler's bug")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/render", nil))
	id := rec.Header().Get(requestIDHeader)
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 500 || id == "" || !strings.Contains(string(body), id) {
		t.Errorf("panic: %d, request id %q, answer %s; want 500 naming the id", rec.Code, id, body)
	}
	if !strings.Contains(log.String(), "request_id="+id) || !strings.Contains(log.String(), "guard_test.go") {
		t.Errorf("the log lacks the request id or the stack:\n%s", log.String())
	}
	var m dto.Metric
	s.metrics.panics.Write(&m)
	if n := m.GetCounter().GetValue(); n != 1 {
		t.Errorf("sparkprof_http_panics_total = %v, want 1", n)
	}
	// A client's own short id is kept.
	req := httptest.NewRequest("GET", "/api/v1/render", nil)
	req.Header.Set(requestIDHeader, "trace-42")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got := rec.Header().Get(requestIDHeader); got != "trace-42" {
		t.Errorf("request id %q, want the client's", got)
	}
}

// A request body interrupted (the ingest memory needed what it held)
// fails its reads from then on, however fast its client sends: the
// deadline the bytes it sent would extend stays in the past.
func TestInterruptedBody(t *testing.T) {
	got := make(chan error, 1)
	s := newServer(t, Config{BodyTimeout: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := r.Body.(*paced)
		first := make([]byte, 1)
		if _, err := io.ReadFull(body, first); err != nil {
			got <- err
			return
		}
		body.Interrupt()
		_, err := io.Copy(io.Discard, body)
		got <- err
	})))
	defer ts.Close()
	c, _ := trickle(t, ts, time.Millisecond)
	defer c.Close()
	if err := <-got; !isTimeout(err) {
		t.Errorf("reading an interrupted body: %v, want a timeout", err)
	}
}
