package appstore

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/store"
)

// containerLog is a container log of the corpus: Phil's straggler riddle's
// console log, an app of its own.
func containerLog(t *testing.T) []byte {
	return corpus.Read(t, "applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz")
}

// eventLog is an event log of the corpus, of app local-1642039451826.
func eventLog(t *testing.T) []byte {
	return corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
}

// open opens the store of dir and fails the test on an error.
func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// appIDs returns the ids of the tenant's apps, sorted.
func appIDs(s *Store, tenant string) []string {
	var ids []string
	for _, r := range s.Reports(tenant) {
		ids = append(ids, r.App.ID)
	}
	slices.Sort(ids)
	return ids
}

// A refused import leaves nothing behind, and whatever a stop or a damaged
// file leaves in the store's directory is skipped and reported at start:
// every other saved app of every tenant is loaded.
func TestOpenSkipsDamaged(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	// A container log whose name ends in .tmp, once refused, left an empty
	// bundle directory that stopped the next start.
	if _, err := s.AddToBundle("team-a", "refused", "stderr.tmp", bytes.NewReader(containerLog(t)), nil); err != nil {
		t.Logf("stderr.tmp refused: %v", err)
	}
	if _, err := s.AddToBundle("team-a", "garbage", "stderr", strings.NewReader("not a log\n"), nil); err == nil {
		t.Fatal("a text file was taken for a container log")
	}
	for _, tenant := range []string{"team-a", "team-b"} {
		if _, err := s.AddEventLog(tenant, "local-1642039451826", bytes.NewReader(eventLog(t)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, store.TenantDir("team-a"), bundleDirPrefix+"garbage")); !os.IsNotExist(err) {
		t.Errorf("the refused import left its bundle directory behind (%v)", err)
	}
	// What a crash or another program may leave: a bundle whose files are
	// damaged, a truncated event log, a directory of no tenant.
	damaged := filepath.Join(dir, store.TenantDir("team-a"), bundleDirPrefix+"damaged")
	write(t, filepath.Join(damaged, "stderr"), "\x00\x01 not a log")
	write(t, filepath.Join(dir, store.TenantDir("team-a"), "app-0-events"), `{"Event":"SparkListenerLogStart"`)
	if err := os.Mkdir(filepath.Join(dir, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir)
	for _, tenant := range []string{"team-a", "team-b"} {
		if got := appIDs(s, tenant); !slices.Contains(got, "local-1642039451826") {
			t.Errorf("%s's apps after a restart: %v, want local-1642039451826", tenant, got)
		}
	}
	var skipped []string
	for _, sk := range s.Skipped() {
		skipped = append(skipped, sk.Path)
		if sk.Err == nil {
			t.Errorf("%s skipped without a reason", sk.Path)
		}
	}
	want := []string{"lost+found", filepath.Join(store.TenantDir("team-a"), "app-0-events"), filepath.Join(store.TenantDir("team-a"), bundleDirPrefix+"damaged")}
	if !slices.Equal(skipped, want) {
		t.Errorf("skipped %q, want %q", skipped, want)
	}
	if _, err := os.Stat(damaged); err != nil {
		t.Errorf("the damaged bundle was removed: %v", err)
	}
}

// A file saved under a name ending in .tmp is saved, not taken for a
// temporary file, and analysed again at start.
func TestSaveNamedTmp(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.AddEventLog("", "events.tmp", bytes.NewReader(eventLog(t)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddToBundle("", "straggler.tmp", "stderr.tmp", bytes.NewReader(containerLog(t)), nil); err != nil {
		t.Fatal(err)
	}
	if got := appIDs(s, ""); len(got) != 2 {
		t.Fatalf("apps %v, want the event log's and the bundle's", got)
	}
	reopened := open(t, dir)
	if got, was := appIDs(reopened, ""), appIDs(s, ""); !slices.Equal(got, was) {
		t.Errorf("apps after a restart %v, before %v", got, was)
	}
	if reopened.Bundle("", "straggler.tmp") == nil {
		t.Error("the bundle straggler.tmp is not found after a restart")
	}
}

// The temporary files of imports a stop cut short are removed at start,
// and nothing else is.
func TestOpenRemovesTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.AddEventLog("", "events", bytes.NewReader(eventLog(t)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddToBundle("", "straggler", "stderr", bytes.NewReader(containerLog(t)), nil); err != nil {
		t.Fatal(err)
	}
	tenant := filepath.Join(dir, store.TenantDir(""))
	before := files(t, dir)
	// What a kill -9 during an import leaves, from this version and the
	// ones before it.
	leftovers := []string{
		filepath.Join(tenant, "events.tmp"),
		filepath.Join(tenant, "other.tmp"),
		filepath.Join(tenant, bundleDirPrefix+"straggler", "stderr.tmp"),
		filepath.Join(tenant, bundleDirPrefix+"cut", "stderr.tmp"),
		filepath.Join(dir, tmpDir, "import-1", "events"),
	}
	for _, p := range leftovers {
		write(t, p, `{"Event":"SparkListenerLogStart","Spark Version":"3.2.0"}`+"\n")
	}
	reopened := open(t, dir)
	if got := files(t, dir); !slices.Equal(got, before) {
		t.Errorf("files after a restart:\n%s\nwant those before the crash:\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	if len(reopened.Skipped()) != 0 {
		t.Errorf("skipped %v: leftovers are removed, not reported", reopened.Skipped())
	}
	if got := appIDs(reopened, ""); len(got) != 2 {
		t.Errorf("apps %v, want the two saved", got)
	}
}

// An import that fails leaves what was saved before it as it was: a
// profile sent under the name of a bundle's container log does not
// replace, nor delete, the log.
func TestFailedAddKeepsSaved(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	rep, err := s.AddToBundle("", "ProfileStraggler", "JobStraggler.log", bytes.NewReader(containerLog(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	records := corpus.Read(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz")
	if _, err := s.AddToBundle("", "ProfileStraggler", "JobStraggler.log", bytes.NewReader(records), nil); err == nil {
		t.Fatal("metric records in place of the bundle's only log were taken")
	}
	// A server answers with the errors: they name files, not where the
	// store keeps them.
	_, errLog := s.AddToBundle("", "fresh", "stderr", strings.NewReader("\x00\x01 not a log"), nil)
	_, errBinary := s.AddEventLog("", "events", strings.NewReader("\x00\x01 not a log"), nil)
	_, errEvents := s.AddEventLog("", "events", strings.NewReader(`{"Event":"SparkListenerLogStart"}`+"\n"), nil)
	for _, err := range []error{errLog, errBinary, errEvents} {
		if err == nil || strings.Contains(err.Error(), dir) {
			t.Errorf("error %v: want one that does not name the store's directory", err)
		}
	}
	if _, err := s.AddEventLog("", "local-1642039451826", bytes.NewReader(eventLog(t)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEventLog("", "local-1642039451826", strings.NewReader("not an event log\n"), nil); err == nil {
		t.Fatal("a text file replaced an event log")
	}
	for _, st := range []*Store{s, open(t, dir)} {
		if got := st.Bundle("", "ProfileStraggler"); got == nil || got.App.ID != rep.App.ID || len(got.Tasks) != len(rep.Tasks) {
			t.Errorf("bundle after the failed import: %v, want app %s with %d tasks", got, rep.App.ID, len(rep.Tasks))
		}
		if st.Report("", "local-1642039451826") == nil {
			t.Error("the event log is gone after a failed import of the same name")
		}
	}
}

// write writes a file, making its directory.
func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// files lists the files and directories under dir, relative to it, but
// for the directory of temporary files itself.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, path)
		if err != nil || path == dir || rel == tmpDir {
			return err
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Files added to one bundle at once are all in its analysis: each is
// analysed with those saved before it.
func TestAddToBundleAtOnce(t *testing.T) {
	s := open(t, t.TempDir())
	log := containerLog(t)
	names := []string{"stderr-1", "stderr-2", "stderr-3"}
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() {
			_, err := s.AddToBundle("", "straggler", name, bytes.NewReader(log), nil)
			errs <- err
		}()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, src := range s.Bundle("", "straggler").Sources {
		got = append(got, src.Path)
	}
	if slices.Sort(got); !slices.Equal(got, names) {
		t.Errorf("the bundle's sources %v, want %v", got, names)
	}
}
