// Package connlimit bounds the connections a server holds, so that a
// flood of them cannot take every file descriptor: past the bound a
// connection is answered 503 and closed at once, and the server keeps
// accepting (and answering its health checks) instead of stalling in
// accept with "too many open files".
package connlimit

import (
	"net"
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
}

// New bounds ln's connections to max; with plain, the connections past
// it are answered 503 before they are closed.
func New(ln net.Listener, max int, plain bool) *Listener {
	return &Listener{Listener: ln, max: int64(max), plain: plain}
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
			l.refuse(c)
			continue
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
	c.once.Do(func() { c.l.open.Add(-1) })
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
