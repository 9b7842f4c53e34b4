package connlimit

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"
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
