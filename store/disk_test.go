package store

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

func upload(t testing.TB, exec string) *Upload {
	t.Helper()
	p, err := format.Load(corpus.Path(t, "jfr", "dump1.jfr.gz"), format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &Upload{Labels: profile.Labels{{Name: profile.LabelServiceName, Value: "app"}, {Name: profile.LabelExecutorID, Value: exec}}, Profile: p, From: 1, Until: 2}
}

func count(t *testing.T, db Store, tenant string, q Query) (n int, total int64) {
	t.Helper()
	err := db.Select(tenant, q, func(u *Upload) error {
		n++
		p, err := u.Load()
		if err != nil {
			return err
		}
		for _, s := range p.Samples {
			total += s.Value
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, total
}

func TestReopenAndTenants(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"1", "2", "3"} {
		if err := db.Append("acme", upload(t, e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Append("other/../x", upload(t, "9")); err != nil {
		t.Fatal(err)
	}
	n, total := count(t, db, "acme", Query{})
	db.Close()

	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n2, total2 := count(t, db, "acme", Query{})
	if n != 3 || n2 != 3 || total2 != total || total == 0 {
		t.Errorf("before reopen %d uploads (%d), after %d (%d)", n, total, n2, total2)
	}
	m, _ := profile.ParseMatcher(`spark_executor_id="2"`)
	if n, _ := count(t, db, "acme", Query{Matchers: []profile.Matcher{m}}); n != 1 {
		t.Errorf("executor 2: %d uploads", n)
	}
	if n, _ := count(t, db, "other/../x", Query{}); n != 1 {
		t.Errorf("second tenant: %d uploads", n)
	}
	if n, _ := count(t, db, "nobody", Query{}); n != 0 {
		t.Errorf("unknown tenant: %d uploads", n)
	}
	if err := db.Append("acme", upload(t, "4")); err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	db.Select("acme", Query{}, func(u *Upload) error { ids = append(ids, u.ID); return nil })
	if len(ids) != 4 || ids[3] != 4 {
		t.Errorf("ids after reopen: %v", ids)
	}
}

// executors returns the executor label of each of tenant's uploads, in
// the order the store selects them.
func executors(db Store, tenant string) []string {
	var execs []string
	db.Select(tenant, Query{}, func(u *Upload) error {
		v, _ := u.Labels.Get(profile.LabelExecutorID)
		execs = append(execs, v)
		return nil
	})
	return execs
}

func files(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*", pattern))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompaction merges uploads of one partition into a block: the sample
// totals stay, the log segments go, a reopened store reads the block, and
// a late upload for the partition joins the block at the next compaction.
// checkDiskBytes compares Stats().DiskBytes with the sizes of the store's
// block and log files under dir.
func checkDiskBytes(t *testing.T, db *DB, dir, when string) {
	t.Helper()
	var want int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".block") || strings.HasSuffix(path, ".parquet") || strings.HasSuffix(path, ".wal")) {
			if fi, err := d.Info(); err == nil {
				want += fi.Size()
			}
		}
		return nil
	})
	if got := db.Stats().DiskBytes; got != want || want == 0 {
		t.Errorf("%s: DiskBytes %d, files %d bytes", when, got, want)
	}
}

// TestEmptyUpload: an upload with no sample (an idle JVM's window) is
// stored, compacted and read back beside others.
func TestEmptyUpload(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	empty := &Upload{Labels: profile.Labels{{Name: profile.LabelServiceName, Value: "app"}, {Name: profile.LabelExecutorID, Value: "2"}},
		Profile: profile.New(), From: 1, Until: 2}
	for _, u := range []*Upload{upload(t, "1"), upload(t, "3"), empty} {
		if err := db.Append("acme", u); err != nil {
			t.Fatal(err)
		}
	}
	n, want := count(t, db, "acme", Query{})
	if n != 3 {
		t.Errorf("%d uploads in the head, want 3", n)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, total := count(t, db, "acme", Query{}); total != want {
		t.Errorf("after compaction: %d, want %d", total, want)
	}
}
