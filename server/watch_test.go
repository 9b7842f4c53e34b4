package server

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// An in-progress log is listed as running, then as finished once it has
// grown to the whole log; files that are not event logs are skipped.
func TestScanEventLogs(t *testing.T) {
	ts, _ := newTestServer(t, Config{EventLogDir: t.TempDir()})
	srv := ts.Config.Handler.(*Server)
	dir := t.TempDir()
	full := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	half := full[:bytes.LastIndexByte(full[:len(full)/2], '\n')+1]
	path := filepath.Join(dir, "local-1642039451826.inprogress")
	if err := os.WriteFile(path, half, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not an event log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seen := newLogWatch()
	status := func() string {
		var apps []AppSummary
		getJSON(t, ts, "/api/v1/apps", &apps)
		if len(apps) != 1 {
			t.Fatalf("%d apps, want 1", len(apps))
		}
		return apps[0].Status
	}
	if n := srv.scanEventLogs("", dir, seen); n != 1 {
		t.Fatalf("first scan analysed %d logs, want 1", n)
	}
	if got := status(); got != "running" {
		t.Errorf("half a log: status %q, want running", got)
	}
	if n := srv.scanEventLogs("", dir, seen); n != 0 {
		t.Errorf("unchanged dir: analysed %d logs again", n)
	}
	if err := os.WriteFile(path, full, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, time.Now(), time.Now().Add(time.Second))
	if n := srv.scanEventLogs("", dir, seen); n != 1 {
		t.Fatalf("grown log: analysed %d, want 1", n)
	}
	if got := status(); got != "finished" {
		t.Errorf("whole log: status %q, want finished", got)
	}
}

// A directory of clusters' log directories: the logs below it are found,
// and a log added to a subdirectory later is found at the next scan.
func TestScanEventLogSubdirs(t *testing.T) {
	ts, _ := newTestServer(t, Config{EventLogDir: t.TempDir()})
	srv := ts.Config.Handler.(*Server)
	dir := t.TempDir()
	put := func(rel string, data []byte) {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put("emr/local-1642039451826", corpus.Read(t, "eventlogs", "apache", "local-1642039451826"))
	put("k8s/prod/app-20161116163331-0000", corpus.Read(t, "eventlogs", "apache", "app-20161116163331-0000"))
	put("k8s/prod/README", []byte("not an event log\n"))
	w := newLogWatch()
	if n := srv.scanEventLogs("", dir, w); n != 2 {
		t.Fatalf("first scan analysed %d logs, want 2", n)
	}
	if n := srv.scanEventLogs("", dir, w); n != 0 {
		t.Errorf("unchanged tree: analysed %d logs again", n)
	}
	put("k8s/prod/local-1532512550423", corpus.Read(t, "eventlogs", "sparklens", "local-1532512550423"))
	if n := srv.scanEventLogs("", dir, w); n != 1 {
		t.Errorf("a new log in a subdirectory: analysed %d, want 1", n)
	}
	var apps []AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps)
	if len(apps) != 3 {
		t.Errorf("%d apps, want 3", len(apps))
	}
}
