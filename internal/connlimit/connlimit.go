// Package connlimit bounds the connections a server holds, so that a
// flood of them cannot take every file descriptor: at the bound a new
// connection takes the place of the one idle longest (with the server's
// ConnState hook), else it is answered 503 and closed at once, and the
// server keeps accepting (and answering its health checks) instead of
// stalling in accept with "too many open files".
package connlimit

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// busy is the answer to a connection past the bound: plain HTTP/1.1.
const busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\nContent-Length: 58\r\nConnection: close\r\n\r\n" +
	"sparkprof: too many connections at once; retry in a second"

// Listener is a net.Listener that holds at most Max connections open.
type Listener struct {
	net.Listener
	max  int64
	open atomic.Int64
	// Plain says the connections speak plain HTTP: those past the bound
	// get a 503 before they are closed (a TLS client could not read it).
	plain bool
	mu    sync.Mutex
	idle  map[*conn]time.Time // the connections without a request in progress, since when
}

// New bounds ln's connections to max; with plain, the connections past
// it are answered 503 before they are closed.
func New(ln net.Listener, max int, plain bool) *Listener {
	return &Listener{Listener: ln, max: int64(max), plain: plain, idle: map[*conn]time.Time{}}
}

// ConnState is the http.Server's ConnState hook: it notes the
// connections that have no request in progress (new ones that sent no
// byte yet, and those idle between requests), so that at the bound the
// one idle longest is closed to make room for a new one, which may be a
// health check: idle connections cannot keep the server from answering.
func (l *Listener) ConnState(nc net.Conn, st http.ConnState) {
	for {
		if c, ok := nc.(*conn); ok {
			l.mu.Lock()
			switch st {
			case http.StateNew, http.StateIdle:
				l.idle[c] = time.Now()
			default:
				delete(l.idle, c)
			}
			l.mu.Unlock()
			return
		}
		u, ok := nc.(interface{ NetConn() net.Conn }) // a TLS connection
		if !ok {
			return
		}
		nc = u.NetConn()
	}
}

// closeIdlest closes the connection idle longest, and reports whether
// there was one.
func (l *Listener) closeIdlest() bool {
	l.mu.Lock()
	var oldest *conn
	var since time.Time
	for c, t := range l.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = c, t
		}
	}
	delete(l.idle, oldest)
	l.mu.Unlock()
	if oldest == nil {
		return false
	}
	oldest.Close()
	return true
}

// Open returns the connections open now.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Accept accepts the next connection within the bound, answering and
// closing those past it.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			if !l.closeIdlest() {
				l.refuse(c)
				continue
			}
			l.open.Add(1)
		}
		return &conn{Conn: c, l: l}, nil
	}
}

// refuse answers c 503, if it speaks plain HTTP, and closes it, without
// waiting for a client that does not read.
func (l *Listener) refuse(c net.Conn) {
	if l.plain {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write([]byte(busy))
	}
	c.Close()
}

// conn is an accepted connection, counted until it is closed.
type conn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.mu.Lock()
		delete(c.l.idle, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// FileLimit returns the process's limit of open files (RLIMIT_NOFILE's
// soft limit, which the Go runtime raises to the hard one at start), 0
// when it cannot be read.
func FileLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
