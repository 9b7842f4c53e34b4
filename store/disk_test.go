package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

func upload(t *testing.T, exec string) *Upload {
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
		for _, s := range u.Profile.Samples {
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

// TestTornWrite cuts the last record as a crash during a write would: the
// records before it survive and the next Append works.
func TestTornWrite(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	db.Append("t", upload(t, "1"))
	db.Append("t", upload(t, "2"))
	db.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "*", "*.wal"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	st, _ := os.Stat(segs[0])
	if err := os.Truncate(segs[0], st.Size()-100); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, _ := count(t, db, "t", Query{}); n != 1 {
		t.Errorf("%d uploads after a torn write, want 1", n)
	}
	if err := db.Append("t", upload(t, "3")); err != nil {
		t.Fatal(err)
	}
	if n, _ := count(t, db, "t", Query{}); n != 2 {
		t.Errorf("%d uploads, want 2", n)
	}
}
