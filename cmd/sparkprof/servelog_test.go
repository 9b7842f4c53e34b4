package main

import (
	"archive/zip"
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

// TestAgentJarEmbedded serves the agent jar built into the binary, from a
// binary alone in its directory, as go install puts it: the committed
// jar, whose manifest names the agent's entry point. --agent-jar serves
// another; one that is missing stops the start.
func TestAgentJarEmbedded(t *testing.T) {
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
	fetch := func(base string) (int, []byte) {
		resp, err := http.Get(base + "/agent.jar")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	cmd, base := startServeIn(t, t.TempDir(), bin, filepath.Join(dir, "data"))
	code, body := fetch(base)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	want, err := os.ReadFile("../../agent/dist/sparkprof-agent.jar")
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || !bytes.Equal(body, want) {
		t.Fatalf("/agent.jar of a binary alone: %d, %d bytes; want agent/dist/sparkprof-agent.jar's %d", code, len(body), len(want))
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("/agent.jar is no jar: %v", err)
	}
	mf, err := zr.Open("META-INF/MANIFEST.MF")
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := io.ReadAll(mf)
	if !strings.Contains(string(manifest), "Premain-Class: dev.sparkprof.agent.Agent") {
		t.Errorf("the jar's manifest names no agent:\n%s", manifest)
	}

	other := filepath.Join(dir, "other.jar")
	if err := os.WriteFile(other, []byte("PK\x03\x04 another agent"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, base = startServeIn(t, t.TempDir(), bin, filepath.Join(dir, "data"), "--agent-jar", other)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if code, body := fetch(base); code != 200 || string(body) != "PK\x03\x04 another agent" {
		t.Errorf("/agent.jar with --agent-jar: %d %q", code, body)
	}
	if code, _, stderr := sparkprof(t, "serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data2"), "--agent-jar", filepath.Join(dir, "none.jar")); code != 1 || !strings.Contains(stderr, "--agent-jar: open") {
		t.Errorf("a missing --agent-jar: exit %d, %s", code, stderr)
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
