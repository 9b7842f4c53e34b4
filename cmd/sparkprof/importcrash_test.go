package main

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
)

// TestImportKilledMidway kills the server with SIGKILL while it saves a
// container log and an event log, and starts it again: no file of the cut
// imports is left, and every app saved before, of every tenant, is listed.
func TestImportKilledMidway(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := filepath.Join(t.TempDir(), "data")
	saved := filepath.Join(data, "eventlogs")
	cmd, base := startServe(t, bin, data)
	waitReady(t, base)
	events := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	if code := importBody(t, base, "team-b", url.Values{"path": {"local-1642039451826"}, "kind": {"eventlog"}}, bytes.NewReader(events)); code != 200 {
		t.Fatalf("import the event log: %d", code)
	}
	before := savedFiles(t, saved)

	// Two imports for team-a, each sent in part and held: a container log
	// (more than the MiB the server reads before it saves one) and an
	// event log.
	log := bytes.Repeat(corpus.Read(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"), 80)
	held := []struct {
		q    url.Values
		part []byte
	}{
		{url.Values{"path": {"stderr"}, "app": {"straggler"}, "kind": {"logs"}}, log},
		{url.Values{"path": {"app-20161116163331-0000"}, "kind": {"eventlog"}}, corpus.Read(t, "eventlogs", "apache", "app-20161116163331-0000")[:64<<10]},
	}
	var bodies []*io.PipeWriter
	for _, h := range held {
		pr, pw := io.Pipe()
		bodies = append(bodies, pw)
		go importBody(t, base, "team-a", h.q, pr)
		go pw.Write(h.part)
	}
	waitFor(t, "both imports' files on disk", func() bool { return len(savedFiles(t, saved)) >= len(before)+2 })
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for _, pw := range bodies {
		pw.Close()
	}

	cmd, base = startServe(t, bin, data)
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	waitReady(t, base)
	if got := savedFiles(t, saved); !slices.Equal(got, before) {
		t.Errorf("files after the restart %q, want those saved before the kill %q", got, before)
	}
	req, _ := http.NewRequest("GET", base+"/api/v1/apps", nil)
	req.Header.Set("X-Scope-OrgID", "team-b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var apps []query.AppSummary
	err = json.NewDecoder(resp.Body).Decode(&apps)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].ID != "local-1642039451826" {
		t.Errorf("team-b's apps after the restart: %+v, want local-1642039451826", apps)
	}
}

// importBody posts body to the server's /api/v1/import for tenant and
// returns the status, 0 when the server went away.
func importBody(t *testing.T, base, tenant string, q url.Values, body io.Reader) int {
	req, _ := http.NewRequest("POST", base+"/api/v1/import?"+q.Encode(), body)
	req.Header.Set("X-Scope-OrgID", tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// savedFiles lists the files under dir, relative to it.
func savedFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	return out
}
