package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAgentJarBesideBinary serves the agent jar beside the sparkprof
// binary, as make puts it, from another working directory; names a jar
// that is missing, an error; and without one, answers 404.
func TestAgentJarBesideBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	data, err := os.ReadFile(buildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin", "sparkprof")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	jar := []byte("PK\x03\x04 the agent's classes")
	if err := os.WriteFile(filepath.Join(dir, "bin", "sparkprof-agent.jar"), jar, 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	fetch := func(base string) (int, []byte) {
		resp, err := http.Get(base + "/agent.jar")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	cmd, base := startServeIn(t, elsewhere, bin, filepath.Join(dir, "data"))
	code, body := fetch(base)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code != 200 || !bytes.Equal(body, jar) {
		t.Errorf("/agent.jar from another directory: %d %q; want the jar beside the binary", code, body)
	}

	if code, _, stderr := sparkprof(t, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data2"), "--agent-jar", filepath.Join(dir, "none.jar")); code != 1 || !strings.Contains(stderr, "--agent-jar: stat") {
		t.Errorf("a missing --agent-jar: exit %d, %s", code, stderr)
	}

	os.Remove(filepath.Join(dir, "bin", "sparkprof-agent.jar"))
	cmd, base = startServeIn(t, elsewhere, bin, filepath.Join(dir, "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if code, body := fetch(base); code != 404 || !strings.Contains(string(body), "make agent") {
		t.Errorf("/agent.jar without a jar: %d %q", code, body)
	}
}

// TestServeLogLevel: INFO records only with --log-level=info or below.
func TestServeLogLevel(t *testing.T) {
	for _, tt := range []struct {
		args       []string
		info, warn bool
	}{
		{nil, false, true},
		{[]string{"--log-level", "info"}, true, true},
		{[]string{"--log-level", "error", "--log-format", "json"}, false, false},
	} {
		var f serveFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		_, _, log, err := f.check(io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if log.Enabled(ctx, slog.LevelInfo) != tt.info || log.Enabled(ctx, slog.LevelWarn) != tt.warn {
			t.Errorf("%v: info %v, warn %v; want %v, %v", tt.args, log.Enabled(ctx, slog.LevelInfo), log.Enabled(ctx, slog.LevelWarn), tt.info, tt.warn)
		}
	}
	if code, _, stderr := sparkprof(t, "serve", "--log-level", "chatty"); code != 2 || !strings.Contains(stderr, "--log-level \"chatty\": want debug, info, warn or error") {
		t.Errorf("a bad level: exit %d, %s", code, stderr)
	}
}
