package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// savedAppsServer starts a server whose apps are saved in dir, ready, with
// its log written to log.
func savedAppsServer(t *testing.T, dir string, log *syncBuffer) *httptest.Server {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Store: db, EventLogDir: dir, Logger: slog.New(slog.NewTextHandler(log, nil))})
	s.SetReady()
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close(); db.Close() })
	return ts
}

// importAs posts one file to /api/v1/import for tenant and returns the
// status.
func importAs(t *testing.T, ts *httptest.Server, tenant string, q url.Values, data []byte) int {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/import?"+q.Encode(), bytes.NewReader(data))
	req.Header.Set(tenantHeader, tenant)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// analysedApps returns the ids of the tenant's analysed apps, sorted.
func analysedApps(t *testing.T, ts *httptest.Server, tenant string) []string {
	t.Helper()
	var apps []query.AppSummary
	getJSON(t, ts, "/api/v1/apps", &apps, tenantHeader, tenant)
	var ids []string
	for _, a := range apps {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	return ids
}

// Imports refused, or named as temporary files, hide no saved app after a
// restart, of this tenant or another; what the start cannot load is
// reported in the log, /ready and a metric, and does not stop it.
func TestRestartShowsEverySavedApp(t *testing.T) {
	dir := t.TempDir()
	ts := savedAppsServer(t, dir, &syncBuffer{})
	events := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	imports := []struct {
		tenant, path, kind, app string
		data                    []byte
		want                    int
	}{
		{"team-a", "stderr.tmp", "logs", "straggler", corpus.Read(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"), 200},
		{"team-a", "stderr", "logs", "refused", []byte("not a container log\n"), 422},
		{"team-a", "spark-events/local-1642039451826.tmp", "eventlog", "", events, 200},
		{"team-b", "local-1642039451826", "eventlog", "", events, 200},
	}
	for _, im := range imports {
		q := url.Values{"path": {im.path}, "kind": {im.kind}, "app": {im.app}}
		if code := importAs(t, ts, im.tenant, q, im.data); code != im.want {
			t.Errorf("import %s for %s: %d, want %d", im.path, im.tenant, code, im.want)
		}
	}
	want := map[string][]string{"team-a": analysedApps(t, ts, "team-a"), "team-b": {"local-1642039451826"}}
	if got := want["team-a"]; !slices.Equal(got, []string{"local-1642039451826", "straggler"}) {
		t.Errorf("team-a's apps %v, want local-1642039451826 and straggler", got)
	}
	// A bundle a crash left damaged.
	damaged := filepath.Join(dir, store.TenantDir("team-a"), "app-damaged", "stderr")
	if err := os.MkdirAll(filepath.Dir(damaged), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(damaged, []byte("\x00 not a log"), 0o644); err != nil {
		t.Fatal(err)
	}

	log := &syncBuffer{}
	ts = savedAppsServer(t, dir, log)
	for tenant, ids := range want {
		if got := analysedApps(t, ts, tenant); !slices.Equal(got, ids) {
			t.Errorf("%s's apps after a restart: %v, want %v", tenant, got, ids)
		}
	}
	if !strings.Contains(log.String(), "saved app not loaded") || !strings.Contains(log.String(), "app-damaged") {
		t.Errorf("the log does not name the damaged bundle:\n%s", log)
	}
	if code, body := getBody(t, ts, "/ready"); code != 200 || !strings.Contains(body, "saved apps not loaded at start: 1") {
		t.Errorf("/ready: %d %q, want 200 saying one saved app was not loaded", code, body)
	}
	if _, body := getBody(t, ts, "/metrics"); !strings.Contains(body, "\nsparkprof_apps_skipped 1\n") {
		t.Error("/metrics lacks sparkprof_apps_skipped 1")
	}
}

// A profile import that fails, sent with the path and app of a saved
// container log, leaves the log saved: the app is there after a restart.
func TestFailedImportKeepsLog(t *testing.T) {
	dir := t.TempDir()
	ts := savedAppsServer(t, dir, &syncBuffer{})
	q := url.Values{"path": {"JobStraggler.log"}, "app": {"ProfileStraggler"}, "kind": {"logs"}}
	if code := importAs(t, ts, "", q, corpus.Read(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz")); code != 200 {
		t.Fatalf("import the container log: %d", code)
	}
	// Metric records under the log's name: the bundle would be left
	// without a log, which is no app.
	q.Del("kind")
	records := corpus.Read(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz")
	if code := importAs(t, ts, "", q, records); code != 422 {
		t.Errorf("import metric records as the log: %d, want 422", code)
	}
	ts = savedAppsServer(t, dir, &syncBuffer{})
	if got := analysedApps(t, ts, ""); !slices.Equal(got, []string{"ProfileStraggler"}) {
		t.Errorf("apps after a restart %v, want ProfileStraggler", got)
	}
}

// syncBuffer is a bytes.Buffer a server's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
