// Package seaweedtest runs a real SeaweedFS server, an S3-compatible object
// store, for tests: `weed mini` on free loopback ports in a temporary
// directory, with one bucket and anonymous access.
//
// The weed binary is built by `make weed` into build/tools/weed, or named
// by the environment variable SPARKPROF_WEED. When it is missing, tests that
// need it skip, except under CI=true, where they fail.
package seaweedtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/repo"
)

// Region is the region the store answers for; SeaweedFS takes any.
const Region = "us-east-1"

// startTimeout bounds how long a start may take before the test fails:
// SeaweedFS's master, volume server, filer and S3 gateway start in turn.
const startTimeout = 2 * time.Minute

// Server is a running (or stopped) SeaweedFS server of a test.
type Server struct {
	// Bucket is the bucket the server was started with.
	Bucket string
	// Endpoint is the S3 endpoint's base URL, http://127.0.0.1:PORT.
	Endpoint string

	t     testing.TB
	bin   string
	dir   string
	ports ports
	cmd   *exec.Cmd
	exit  chan struct{} // closed when cmd has exited
	log   *os.File
}

// ports are the loopback ports of the server's parts; every gRPC port is
// named, since SeaweedFS's default of the HTTP port plus 10,000 may not
// be free or may not exist.
type ports struct {
	master, masterGRPC, volume, volumeGRPC, filer, filerGRPC, s3, s3GRPC, admin, adminGRPC int
}

// Binary returns the path of the weed binary: $SPARKPROF_WEED, else
// build/tools/weed in the module's root. When it is missing the test is
// skipped, or fails when the environment has CI=true.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("SPARKPROF_WEED")
	if bin == "" {
		root, err := repo.Root()
		if err != nil {
			t.Fatalf("seaweedtest: %v", err)
		}
		bin = filepath.Join(root, "build", "tools", "weed")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("SeaweedFS's weed binary is missing (%v): run make weed", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Start starts a SeaweedFS server with one bucket, named bucket, in a new
// temporary directory and waits until its S3 endpoint answers for the
// bucket. The server is killed and its directory removed when the test
// ends.
func Start(t testing.TB, bucket string) *Server {
	t.Helper()
	s := &Server{Bucket: bucket, t: t, bin: Binary(t), dir: t.TempDir()}
	ps, err := freePorts(10)
	if err != nil {
		t.Fatalf("seaweedtest: %v", err)
	}
	s.ports = ports{ps[0], ps[1], ps[2], ps[3], ps[4], ps[5], ps[6], ps[7], ps[8], ps[9]}
	s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(s.ports.s3)
	t.Cleanup(func() {
		s.kill()
		s.removeSockets()
		if s.log != nil {
			s.log.Close()
		}
		if t.Failed() {
			s.dumpLog()
		}
	})
	s.Start()
	return s
}

// removeSockets removes the Unix sockets weed made for the server's
// ports: it names them /tmp/seaweedfs-<part>-<port>.sock, whatever the
// temporary directory, and leaves them behind when it exits.
func (s *Server) removeSockets() {
	p := s.ports
	for _, port := range []int{p.master, p.masterGRPC, p.volume, p.volumeGRPC, p.filer, p.filerGRPC, p.s3, p.s3GRPC, p.admin, p.adminGRPC} {
		names, _ := filepath.Glob(fmt.Sprintf("/tmp/seaweedfs-*-%d.sock", port))
		for _, name := range names {
			if fi, err := os.Lstat(name); err == nil && fi.Mode()&os.ModeSocket != 0 {
				os.Remove(name)
			}
		}
	}
}

// URL returns the --storage URL of prefix in the server's bucket, as
// gocloud.dev/blob's s3blob opens it: path-style requests over plain HTTP
// to the server's endpoint.
func (s *Server) URL(prefix string) string {
	q := url.Values{
		"endpoint":       {s.Endpoint},
		"region":         {Region},
		"use_path_style": {"true"},
		"disable_https":  {"true"},
	}
	u := url.URL{Scheme: "s3", Host: s.Bucket, Path: "/" + strings.Trim(prefix, "/"), RawQuery: q.Encode()}
	if prefix == "" {
		u.Path = ""
	}
	return u.String()
}

// Env returns the environment a client of the server needs besides the
// URL: credentials, which the server accepts whatever they are, so that
// an AWS SDK signs its requests instead of looking for an instance
// profile.
func Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=seaweedtest", "AWS_SECRET_ACCESS_KEY=seaweedtest", "AWS_REGION=" + Region}
}

// Start starts the server again after Stop, on the same directory and
// ports, and waits until its S3 endpoint answers for the bucket.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("seaweedtest: Start of a running server")
	}
	if s.log == nil {
		f, err := os.Create(filepath.Join(s.dir, "weed.log"))
		if err != nil {
			s.t.Fatalf("seaweedtest: %v", err)
		}
		s.log = f
	}
	data := filepath.Join(s.dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		s.t.Fatalf("seaweedtest: %v", err)
	}
	p := s.ports
	// -logdir keeps weed's own log files out of the system temp directory.
	cmd := exec.Command(s.bin, "-logdir="+s.dir, "mini",
		"-dir="+data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+strconv.Itoa(p.master), "-master.port.grpc="+strconv.Itoa(p.masterGRPC),
		"-volume.port="+strconv.Itoa(p.volume), "-volume.port.grpc="+strconv.Itoa(p.volumeGRPC),
		"-filer.port="+strconv.Itoa(p.filer), "-filer.port.grpc="+strconv.Itoa(p.filerGRPC),
		"-s3.port="+strconv.Itoa(p.s3), "-s3.port.grpc="+strconv.Itoa(p.s3GRPC),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
		"-admin.port="+strconv.Itoa(p.admin), "-admin.port.grpc="+strconv.Itoa(p.adminGRPC), "-admin.port.legacy=0",
		"-master.telemetry=false", "-master.volumeSizeLimitMB=64",
		"-bucket="+s.Bucket)
	cmd.Env = weedEnv()
	cmd.Stdout, cmd.Stderr = s.log, s.log
	// Its own process group, so that Stop reaches whatever it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("seaweedtest: start %s: %v", s.bin, err)
	}
	s.cmd, s.exit = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(s.exit) }()
	if err := s.waitBucket(); err != nil {
		s.kill()
		s.dumpLog()
		s.t.Fatalf("seaweedtest: %v", err)
	}
}

// weedEnv is the test's environment without AWS credentials: SeaweedFS
// makes an identity of AWS_ACCESS_KEY_ID, which would end anonymous
// access.
func weedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// Stop kills the server (SIGKILL, as an outage would), waits for it to
// exit and leaves its directory for Start.
func (s *Server) Stop() {
	s.t.Helper()
	s.kill()
}

func (s *Server) kill() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exit
	s.cmd = nil
}

// waitBucket waits until a HEAD of the bucket answers 200: SeaweedFS's S3
// gateway is up and has created the bucket (or found it on disk).
func (s *Server) waitBucket() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodHead, s.Endpoint+"/"+s.Bucket, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
			if resp.StatusCode == http.StatusNotFound {
				s.createBucket(ctx, client) // -bucket has not made it yet
			}
		} else {
			last = err.Error()
		}
		select {
		case <-s.exit:
			return fmt.Errorf("weed mini exited before its S3 endpoint answered (last: %s)", last)
		case <-ctx.Done():
			return fmt.Errorf("bucket %s at %s not ready within %v (last: %s)", s.Bucket, s.Endpoint, startTimeout, last)
		case <-tick.C:
		}
	}
}

// createBucket sends an anonymous S3 CreateBucket for the bucket; the
// HEAD that follows says whether it took.
func (s *Server) createBucket(ctx context.Context, client *http.Client) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, s.Endpoint+"/"+s.Bucket, nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// dumpLog logs the end of the server's output, for a failed test.
func (s *Server) dumpLog() {
	b, err := os.ReadFile(filepath.Join(s.dir, "weed.log"))
	if err != nil {
		return
	}
	if len(b) > 8192 {
		b = b[len(b)-8192:]
	}
	s.t.Logf("weed mini's log, its end:\n%s", b)
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ps []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ps = append(ps, l.Addr().(*net.TCPAddr).Port)
	}
	return ps, nil
}
