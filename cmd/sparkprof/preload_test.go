package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

// demoPreload returns the --preload values `make demo` passes, as
// scripts/demo-preload.sh prints them for the corpus.
func demoPreload(t *testing.T) preloadFlag {
	t.Helper()
	out, err := exec.Command("../../scripts/demo-preload.sh", corpus.Dir(t)).Output()
	if err != nil {
		t.Fatalf("demo-preload.sh: %v", err)
	}
	var f preloadFlag
	for _, arg := range strings.Fields(string(out)) {
		if err := f.Set(strings.TrimPrefix(arg, "--preload=")); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestPreloadOnce preloads the demo's sample data, compacts it as a server
// left running would, and preloads again, as `make demo` does at every
// start: every input is read, and no profile is stored twice.
func TestPreloadOnce(t *testing.T) {
	// One partition for all: the block then holds profiles of several
	// sources.
	db, err := store.Open(t.TempDir(), store.Options{Partition: 100 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := newServer(t, server.Config{Store: db})
	paths := demoPreload(t)
	res := preload(srv, db, paths)
	if len(res.failures) > 0 || len(res.skipped) > 0 || res.files != 18 {
		t.Fatalf("preload: %d files, failures %v, skipped %v; want the demo's 18 files", res.files, res.failures, res.skipped)
	}
	first := db.Stats().HeadUploads
	// dump1's LabelsSnapshot, beside it in the corpus, labels its samples.
	labelled := 0
	db.Select("", store.Query{}, func(u *store.Upload) error {
		if p := u.Profile; p != nil && strings.HasSuffix(p.Source, "jfr/dump1.jfr.gz") {
			for _, s := range p.Samples {
				if p.Label(s, profile.LabelThreadName) != "" {
					labelled++
				}
			}
		}
		return nil
	})
	if labelled == 0 {
		t.Error("no sample of dump1 got a label from the snapshot beside it")
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	again := preload(srv, db, paths)
	if st := db.Stats(); st.HeadUploads != 0 || st.BlockUploads != first || again.already != first {
		t.Errorf("after compaction and a second preload: %+v, %d profiles stored already; want the %d first uploads in blocks, none new", st, again.already, first)
	}
	// The straggler riddle's log and records are one app.
	var apps []struct{ ID, Name string }
	get(t, srv, "/api/v1/apps", &apps)
	if !slices.ContainsFunc(apps, func(a struct{ ID, Name string }) bool {
		return a.ID == "ProfileStraggler" && a.Name == "Profile Straggler"
	}) {
		t.Errorf("apps %+v: no ProfileStraggler", apps)
	}
}

// TestPreloadDirectory preloads a directory as a History Server keeps
// event logs, with files that are no event log, and names a file that is
// no input and one that is missing: every log of the directory is an app,
// its other files are passed over, and the two named are said.
func TestPreloadDirectory(t *testing.T) {
	dir := t.TempDir()
	logs := []string{"app-20231025121456-0004-eventLog-finished", "app-20231122115433-0000-eventLog-finished-stages"}
	for _, name := range logs {
		if err := os.WriteFile(filepath.Join(dir, name), corpus.Read(t, "eventlogs", "sparkscope", name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not a log\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.zstd"), []byte("\x28\xb5\x2f\xfdnot zstd at all"), 0o644)
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := newServer(t, server.Config{Store: db})
	res := preload(srv, db, preloadFlag{{path: dir}, {path: notes}, {path: filepath.Join(dir, "missing")}})
	if res.files != 2 || len(res.skipped) != 2 || len(res.failures) != 2 ||
		!strings.Contains(res.failures[0].Error(), "notes.txt: not a container log") || !strings.Contains(res.failures[1].Error(), "missing") {
		t.Errorf("preloaded %d files, passed over %v, failures %v; want the 2 logs, 2 passed over, notes.txt and missing named", res.files, res.skipped, res.failures)
	}
	var apps []struct{ ID string }
	get(t, srv, "/api/v1/apps", &apps)
	if len(apps) != 2 {
		t.Errorf("apps %+v, want the directory's two", apps)
	}
}

// TestPreloadFlag reads --preload's values: a path, or APP=PATH.
func TestPreloadFlag(t *testing.T) {
	var f preloadFlag
	for _, v := range []string{"logs/app-1", "Straggler=logs/run.log", "dir/a=b", "=x"} {
		if err := f.Set(v); (err != nil) != (v == "=x") {
			t.Errorf("Set(%q): %v", v, err)
		}
	}
	want := preloadFlag{{path: "logs/app-1"}, {app: "Straggler", path: "logs/run.log"}, {path: "dir/a=b"}}
	if !slices.Equal(f, want) {
		t.Errorf("values %+v, want %+v", f, want)
	}
}

// get decodes the JSON srv answers to GET path into v.
func get(t *testing.T, srv *server.Server, path string, v any) {
	t.Helper()
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatal(err)
	}
}
