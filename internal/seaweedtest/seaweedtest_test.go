package seaweedtest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStopStart stores an object, stops the server, sees its endpoint
// refuse, starts it again on the same directory and ports and reads the
// object back.
func TestStopStart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs SeaweedFS")
	}
	s := Start(t, "seaweedtest")
	obj := s.Endpoint + "/" + s.Bucket + "/dir/object"
	body := []byte("stored before the outage")
	req, _ := http.NewRequest(http.MethodPut, obj, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %s", obj, resp.Status)
	}

	s.Stop()
	if resp, err := http.Get(obj); err == nil {
		resp.Body.Close()
		t.Fatalf("GET while stopped: %s, want a refused connection", resp.Status)
	}

	s.Start()
	resp, err = http.Get(obj)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("GET after a restart: %s %q, want 200 %q", resp.Status, got, body)
	}
	if u := s.URL("sparkprof/x"); !strings.HasPrefix(u, "s3://seaweedtest/sparkprof/x?") || !strings.Contains(u, "use_path_style=true") {
		t.Errorf("URL: %s", u)
	}
}

// TestLeavesNoSockets: the Unix sockets weed makes in /tmp for a server's
// ports are gone once its test has ended.
func TestLeavesNoSockets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs SeaweedFS")
	}
	var s *Server
	var made []string
	t.Run("server", func(t *testing.T) {
		s = Start(t, "seaweedtest")
		p := s.ports
		for _, port := range []int{p.master, p.masterGRPC, p.volume, p.volumeGRPC, p.filer, p.filerGRPC, p.s3, p.s3GRPC, p.admin, p.adminGRPC} {
			names, _ := filepath.Glob(fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", port))
			made = append(made, names...)
		}
	})
	if len(made) == 0 {
		t.Skip("weed made no socket for its ports: nothing to check")
	}
	t.Logf("weed made %d sockets: %v", len(made), made)
	for _, name := range made {
		if _, err := os.Lstat(name); err == nil {
			t.Errorf("%s is left after the test", name)
		}
	}
}
