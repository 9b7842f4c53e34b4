package store

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(time.Hour)
	for i, e := range []string{"1", "2", "3"} {
		u := upload(t, e)
		u.From, u.Until = 10*hour+int64(i)*int64(10*time.Second), 10*hour+int64(i+1)*int64(10*time.Second)
		if err := db.Append("acme", u); err != nil {
			t.Fatal(err)
		}
	}
	u := upload(t, "1")
	u.From, u.Until = 11*hour, 11*hour+int64(10*time.Second)
	db.Append("acme", u)
	_, want := count(t, db, "acme", Query{})

	// Not ready: the uploads were received just now.
	if err := db.compact(time.Now().UnixNano(), false); err != nil {
		t.Fatal(err)
	}
	if n, _ := count(t, db, "acme", Query{}); n != 4 {
		t.Fatalf("a quiet period has not passed, yet %d uploads remain of 4", n)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	n, total := count(t, db, "acme", Query{})
	if n != 2 || total != want {
		t.Errorf("after compaction %d blocks with %d, want 2 with %d", n, total, want)
	}
	if b, w := files(t, dir, "*.block"), files(t, dir, "*.wal"); len(b) != 2 || len(w) != 0 {
		t.Errorf("files after compaction: blocks %v, segments %v", b, w)
	}
	m, _ := profile.ParseMatcher(`spark_executor_id="9"`)
	if n, _ := count(t, db, "acme", Query{Matchers: []profile.Matcher{m}}); n != 0 {
		t.Errorf("executor 9 is in no upload, yet %d blocks are selected", n)
	}
	m, _ = profile.ParseMatcher(`spark_executor_id="2"`)
	if n, _ := count(t, db, "acme", Query{Matchers: []profile.Matcher{m}}); n != 1 {
		t.Errorf("executor 2: %d blocks, want 1", n)
	}
	db.Close()

	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, total := count(t, db, "acme", Query{}); n != 2 || total != want {
		t.Errorf("reopened: %d blocks with %d, want 2 with %d", n, total, want)
	}
	late := upload(t, "4")
	late.From, late.Until = 10*hour+int64(time.Minute), 10*hour+int64(time.Minute+10*time.Second)
	if err := db.Append("acme", late); err != nil {
		t.Fatal(err)
	}
	if late.ID != 5 {
		t.Errorf("the upload after compaction got id %d, want 5", late.ID)
	}
	db.Compact()
	var uploads []int
	db.Select("acme", Query{}, func(u *Upload) error { uploads = append(uploads, u.Uploads); return nil })
	if !slices.Equal(uploads, []int{4, 1}) || len(files(t, dir, "*.block")) != 2 {
		t.Errorf("after a late upload: blocks of %v uploads, files %v", uploads, files(t, dir, "*.block"))
	}
}

// TestCompactionCrash keeps the log a compaction made obsolete, as a crash
// before its deletion would: reopening counts every upload once.
func TestCompactionCrash(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	for _, e := range []string{"1", "2"} {
		db.Append("t", upload(t, e))
	}
	_, want := count(t, db, "t", Query{})
	seg := files(t, dir, "*.wal")[0]
	saved, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	db.Compact()
	db.Close()
	if err := os.WriteFile(seg, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, total := count(t, db, "t", Query{}); n != 1 || total != want {
		t.Errorf("after a crash mid-compaction: %d uploads with %d, want 1 block with %d", n, total, want)
	}
	db.Compact()
	if w := files(t, dir, "*.wal"); len(w) != 0 {
		t.Errorf("the obsolete segment stays: %v", w)
	}
}

// TestCorruptBlock refuses to start on a damaged block, naming the file.
func TestCorruptBlock(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	db.Append("t", upload(t, "1"))
	db.Compact()
	db.Close()
	blk := files(t, dir, "*.block")[0]
	data, _ := os.ReadFile(blk)
	data[len(data)/2] ^= 0xff
	os.WriteFile(blk, data, 0o644)
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), filepath.Base(blk)) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a damaged block: %v", err)
	}
}

func TestRetentionDropsBlocks(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	defer db.Close()
	db.Append("t", upload(t, "1"))
	db.Compact()
	db.Append("t", upload(t, "2"))
	db.dropOld(time.Now().Add(time.Hour).UnixNano())
	if n, _ := count(t, db, "t", Query{}); n != 0 {
		t.Errorf("%d uploads past retention remain", n)
	}
	if f := append(files(t, dir, "*.block"), files(t, dir, "*.wal")...); len(f) != 0 {
		t.Errorf("files past retention remain: %v", f)
	}
}

// TestForeignRecord refuses to start on a log record whose checksum holds
// but whose contents this version cannot read (another version's format),
// and keeps the file as it was.
func TestForeignRecord(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	db.Append("t", upload(t, "1"))
	db.Close()
	seg := files(t, dir, "*.wal")[0]
	payload := db.enc.EncodeAll([]byte("\x05{\"ID\":1}gob!"), nil)
	rec := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(payload, castagnoli))
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(append(rec, payload...))
	f.Close()
	before, _ := os.Stat(seg)
	_, err = Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "another sparkprof version") || !strings.Contains(err.Error(), filepath.Base(seg)) {
		t.Errorf("a foreign record: %v", err)
	}
	if after, _ := os.Stat(seg); after.Size() != before.Size() {
		t.Errorf("the segment was cut from %d to %d bytes", before.Size(), after.Size())
	}
}
