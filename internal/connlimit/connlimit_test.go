package connlimit

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Past its bound a listener answers 503 and closes, and goes on
// accepting: a connection closed makes room for the next.
func TestListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(inner, 2, true)
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	status := func(c net.Conn) string {
		c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line)
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dial(), dial()
	if s := status(a); !strings.Contains(s, "200") {
		t.Fatalf("first connection: %q", s)
	}
	if s := status(b); !strings.Contains(s, "200") {
		t.Fatalf("second connection: %q", s)
	}
	c := dial()
	if s := status(c); !strings.Contains(s, "503") {
		t.Errorf("a third connection of two: %q, want 503", s)
	}
	c.Close()
	a.Close()
	for range 100 { // the server notices a's close when it next reads
		d := dial()
		s := status(d)
		d.Close()
		if strings.Contains(s, "200") {
			return
		}
	}
	t.Error("no room after a connection closed")
}

// Connections that send nothing do not keep a health check out: at the
// bound, with the server's ConnState hook, a new connection takes the
// place of the one idle longest (with 704 idle connections /healthz was
// answered 503 until the header timeout closed them).
func TestIdleConnectionsMakeRoom(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const bound = 4
	ln := New(inner, bound, true)
	accepted := make(chan struct{}, bound)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }),
		ConnState: func(c net.Conn, st http.ConnState) {
			ln.ConnState(c, st)
			if st == http.StateNew {
				accepted <- struct{}{}
			}
		},
	}
	go srv.Serve(ln)
	defer srv.Close()
	var idle []net.Conn
	for range bound {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
		<-accepted
	}
	resp, err := http.Get("http://" + inner.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a health check past %d idle connections: %d, want 200", bound, resp.StatusCode)
	}
	// The first idle connection was closed to make room (it is, by the
	// time the health check is answered; the deadline only bounds a
	// failure).
	idle[0].SetReadDeadline(time.Now().Add(time.Minute))
	if n, err := idle[0].Read(make([]byte, 1)); n != 0 || err == nil {
		t.Errorf("the connection idle longest: read %d bytes, %v; want it closed", n, err)
	}
}
