package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/ingest"
)

// Defaults of the deadlines guard sets (Config).
const (
	defaultBodyTimeout  = 10 * time.Second
	defaultMinBodyRate  = 32 << 10 // bytes per second
	defaultWriteTimeout = time.Minute
)

// requestIDHeader names a request's id: the client's when it sends a
// short one, else one the server makes. Answers carry it, and a 500's log
// line names it.
const requestIDHeader = "X-Request-Id"

// guard wraps every request: it gives it an id, bounds the time its body
// may take to arrive (Config.BodyTimeout and MinBodyRate) and the time
// each write of its answer may wait for the client (Config.WriteTimeout),
// so that a slow or stalled client holds a connection only so long; and it
// turns a panic of a handler into a 500 naming the request id, logged
// with its stack and counted, instead of a dropped connection.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(requestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set(requestIDHeader, id)
		rc := http.NewResponseController(w)
		gw := &guardedWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.WriteTimeout}
		if r.Body != nil && r.Body != http.NoBody {
			body := &paced{ReadCloser: r.Body, rc: rc, start: time.Now(), grace: s.cfg.BodyTimeout, rate: s.cfg.MinBodyRate}
			body.extend(0)
			// A copy of the request: net/http reads what is left of the
			// original's body after the handler, and must see its own
			// (which knows whether "100 Continue" was sent).
			r = r.WithContext(r.Context())
			r.Body = body
		}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // net/http's own sentinel, compared as it does
				panic(v)
			}
			s.metrics.panics.Inc()
			s.log.Error("handler panicked", "request_id", id, "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if gw.wrote {
				// The answer is under way: only cutting the connection
				// tells the client it is not whole.
				panic(http.ErrAbortHandler)
			}
			httpError(w, http.StatusInternalServerError, "internal error (request id %s): the server's log has its details", id)
		}()
		h.ServeHTTP(gw, r)
	})
}

// validRequestID reports whether a client's request id is one to keep: 1
// to 64 printable ASCII characters.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := range len(id) {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// newRequestID returns a random request id.
func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// guardedWriter is a ResponseWriter that notes whether the answer has
// started, and gives each write timeout to reach the client.
type guardedWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	wrote   bool
}

func (w *guardedWriter) WriteHeader(code int) {
	w.started()
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardedWriter) Write(b []byte) (int, error) {
	w.started()
	return w.ResponseWriter.Write(b)
}

// started notes that the answer started, and sets the deadline of the
// write to come.
func (w *guardedWriter) started() {
	w.wrote = true
	if w.timeout > 0 {
		w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

// Flush implements http.Flusher, which streaming answers use.
func (w *guardedWriter) Flush() {
	w.started()
	w.rc.Flush()
}

// Unwrap returns the ResponseWriter underneath, for
// http.ResponseController.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// paced is a request body that must arrive within grace of the request's
// start plus the time its bytes take at rate bytes per second: a client
// that trickles its body (a byte every few seconds) is cut off after
// about grace, instead of holding its connection and memory for ever.
type paced struct {
	io.ReadCloser
	rc    *http.ResponseController
	start time.Time
	grace time.Duration
	rate  int64
	read  int64
	done  bool
	// mu guards the read deadline against Interrupt, which another
	// goroutine calls; interrupted keeps it in the past once it did.
	mu          sync.Mutex
	interrupted bool
}

var _ ingest.Interrupter = (*paced)(nil)

// Interrupt makes a blocked Read return at once, and every Read after it
// fail (ingest.Interrupter): the ingest memory needed what the body holds.
func (p *paced) Interrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.interrupted = true
	p.rc.SetReadDeadline(time.Now())
}

func (p *paced) Read(b []byte) (int, error) {
	n, err := p.ReadCloser.Read(b)
	p.read += int64(n)
	switch {
	case err == io.EOF && !p.done:
		// The body is in: the connection's reads are the server's own
		// again (it notices a client that goes away by them).
		p.done = true
		p.setDeadline(time.Time{})
	case isTimeout(err):
		err = &slowBodyError{err: err, read: p.read, rate: p.rate, grace: p.grace}
	case err == nil && n > 0:
		p.extend(p.read)
	}
	return n, err
}

// extend moves the read deadline to what read bytes allow.
func (p *paced) extend(read int64) {
	if p.grace <= 0 {
		return
	}
	d := p.grace
	if p.rate > 0 {
		d += time.Duration(read) * time.Second / time.Duration(p.rate)
	}
	p.setDeadline(p.start.Add(d))
}

// setDeadline sets the connection's read deadline, unless the body was
// interrupted.
func (p *paced) setDeadline(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.interrupted {
		p.rc.SetReadDeadline(t)
	}
}

// slowBodyError is a body that did not arrive in time.
type slowBodyError struct {
	err   error
	read  int64
	rate  int64
	grace time.Duration
}

func (e *slowBodyError) Error() string {
	return fmt.Sprintf("the body came too slowly: %d bytes in time, where the server waits %v plus a second per %d bytes", e.read, e.grace, e.rate)
}

func (e *slowBodyError) Unwrap() error { return e.err }

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return err != nil && errors.As(err, &ne) && ne.Timeout()
}
