package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

// An in-progress log is listed as running, then as finished once it has
// grown to the whole log; files that are not event logs are skipped.
func TestScanEventLogs(t *testing.T) {
	srv, _, apps := newTestPipeline(t)
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
		reps := apps.Reports("")
		if len(reps) != 1 {
			t.Fatalf("%d apps, want 1", len(reps))
		}
		if reps[0].App.EndMs == 0 {
			return "running"
		}
		return "finished"
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
	srv, _, apps := newTestPipeline(t)
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
	if n := len(apps.Reports("")); n != 3 {
		t.Errorf("%d apps, want 3", n)
	}
}

// TestWatchProfileDir imports a recording as Spark's profiler plugin copies
// it to its dfsDir, a chunk at a time (real async-profiler chunks from the
// corpus): each whole chunk once, a chunk cut short only once it is whole,
// nothing again after a restart (with its state file, or without it,
// through the upload keys), a replaced recording from its start, and a
// damaged one without stopping the watch.
func TestWatchProfileDir(t *testing.T) {
	srv, db, _ := newTestPipeline(t)
	ctx := context.Background()
	chunk1, err := format.Decompress(corpus.Read(t, "jfr", "dump1.jfr.gz"), "dump1", 0)
	if err != nil {
		t.Fatal(err)
	}
	chunk2, err := format.Decompress(corpus.Read(t, "jfr", "dump2.jfr.gz"), "dump2", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "profile-dir.json")
	rec := filepath.Join(dir, "spark-profiles", "app-20240101000000-0001", "profile-exec-3.jfr")
	os.MkdirAll(filepath.Dir(rec), 0o755)
	write := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(rec, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	uploads := func() int { return countUploads(t, db) }
	cpu := func() int64 { return storedTotal(t, db, "app-20240101000000-0001", "3", "cpu") }
	w := newProfileWatch(state, srv.log)
	steps := []struct {
		name       string
		data       []byte
		fresh      bool // a new watch, as after a restart
		dropState  bool
		imported   int
		wantUpload int
		wantCPU    int64
	}{
		{"the first chunk", chunk1, false, false, 1, 1, offlineTotal(t, chunk1, nil, "cpu")},
		{"half of the second", append(slices.Clone(chunk1), chunk2[:len(chunk2)/2]...), false, false, 0, 1, offlineTotal(t, chunk1, nil, "cpu")},
		{"the second whole", append(slices.Clone(chunk1), chunk2...), false, false, 1, 2, offlineTotal(t, append(slices.Clone(chunk1), chunk2...), nil, "cpu")},
		{"a restart", append(slices.Clone(chunk1), chunk2...), true, false, 0, 2, offlineTotal(t, append(slices.Clone(chunk1), chunk2...), nil, "cpu")},
		{"a restart without the state file", append(slices.Clone(chunk1), chunk2...), true, true, 0, 2, offlineTotal(t, append(slices.Clone(chunk1), chunk2...), nil, "cpu")},
		{"replaced by a new attempt's recording", chunk2, false, false, 1, 3, offlineTotal(t, append(append(slices.Clone(chunk1), chunk2...), chunk2...), nil, "cpu")},
	}
	for _, st := range steps {
		write(st.data)
		if st.dropState {
			os.Remove(state)
		}
		if st.fresh {
			w = newProfileWatch(state, srv.log)
		}
		if n := srv.scanProfileDir(ctx, "", dir, w); n != st.imported {
			t.Errorf("%s: %d chunks imported, want %d", st.name, n, st.imported)
		}
		if n := uploads(); n != st.wantUpload {
			t.Errorf("%s: %d uploads stored, want %d", st.name, n, st.wantUpload)
		}
		if got := cpu(); got != st.wantCPU {
			t.Errorf("%s: CPU of executor 3 %d, want %d", st.name, got, st.wantCPU)
		}
	}

	watchEdgeCases(t, srv, w, dir, rec, chunk1, chunk2)
}

// watchEdgeCases goes on with the watch w of TestWatchProfileDir over dir,
// whose recording rec holds chunk1 and chunk2: a backlog larger than a
// scan reads, a damaged recording, a directory that cannot be read for a
// while, and the senders each recording makes.
func watchEdgeCases(t *testing.T, srv *Pipeline, w *profileWatch, dir, rec string, chunk1, chunk2 []byte) {
	ctx := context.Background()
	// With a scan's read bound below a chunk's size, the chunk is still
	// read whole; a backlog of chunks takes a scan each.
	defer func(n int64) { maxScanBytes = n }(maxScanBytes)
	maxScanBytes = 1000
	backlog := filepath.Join(dir, "spark-profiles", "app-20240101000000-0001", "profile-exec-6.jfr")
	if err := os.WriteFile(backlog, append(slices.Clone(chunk1), chunk2...), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if n := srv.scanProfileDir(ctx, "", dir, w); n != 1 {
			t.Errorf("scan %d of a backlog of chunks larger than a scan reads: %d imported, want 1", i+1, n)
		}
	}
	maxScanBytes = 256 << 20

	// A damaged header after a whole chunk: the chunk is imported, the
	// damage skipped, and the watch goes on with the next chunk copied.
	other := filepath.Join(dir, "spark-profiles", "app-20240101000000-0001", "profile-exec-4.jfr")
	damaged := append(slices.Clone(chunk1), bytes.Repeat([]byte("FLR\x00 no chunk header "), 8)...)
	if err := os.WriteFile(other, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := srv.scanProfileDir(ctx, "", dir, w); n != 1 {
		t.Errorf("a damaged recording: %d chunks imported, want the 1 before the damage", n)
	}
	if err := os.WriteFile(other, append(damaged, chunk2...), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := srv.scanProfileDir(ctx, "", dir, w); n != 1 {
		t.Errorf("a chunk copied after the damage: %d imported, want 1", n)
	}

	// A directory that cannot be read for a while (a mount's hiccup) does
	// not make its recordings forgotten, and read again from their start.
	appDir := filepath.Dir(rec)
	readDir = func(dir string) ([]os.DirEntry, error) {
		if dir == appDir {
			return nil, syscall.EIO
		}
		return os.ReadDir(dir)
	}
	srv.scanProfileDir(ctx, "", dir, w)
	readDir = os.ReadDir
	if _, ok := w.files[rec]; !ok {
		t.Error("a recording of an unreadable directory was forgotten")
	}
	if n := srv.scanProfileDir(ctx, "", dir, w); n != 0 {
		t.Errorf("the directory readable again: %d chunks imported again", n)
	}

	// The agents page lists each recording, the damaged one with its error.
	agents := srv.Senders().List("")
	rows := map[string]Agent{}
	for _, a := range agents {
		rows[a.ExecutorID] = a
	}
	if a := rows["3"]; a.Uploads != 3 || a.SpyName != "spark-profiler" || a.App != "app-20240101000000-0001" || a.Errors != 0 {
		t.Errorf("executor 3's row %+v; want 3 uploads from spark-profiler, app app-20240101000000-0001, no errors", a)
	}
	if a := rows["4"]; a.Uploads != 2 || a.Errors != 1 || !strings.Contains(a.LastError, "damaged recording") {
		t.Errorf("executor 4's row %+v; want 2 uploads and the damage as its error", a)
	}
}
