package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/store/wal"
)

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
	checkDiskBytes(t, db, dir, "the torn tail cut")
	if err := db.Append("t", upload(t, "3")); err != nil {
		t.Fatal(err)
	}
	checkDiskBytes(t, db, dir, "appended after the cut")
	if n, _ := count(t, db, "t", Query{}); n != 2 {
		t.Errorf("%d uploads, want 2", n)
	}
}

// Replay decodes records in batches on every core: a log of several
// batches and a torn tail comes back whole, in order, without the tail.
func TestReplayInOrder(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	const n = 2*replayBatch + 7
	for i := range n {
		if err := db.Append("t", upload(t, strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "*", "*.wal"))
	last := segs[len(segs)-1]
	st, _ := os.Stat(last)
	if err := os.Truncate(last, st.Size()-100); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	execs := executors(db, "t")
	if len(execs) != n-1 {
		t.Fatalf("%d uploads after a torn tail, want %d", len(execs), n-1)
	}
	for i, v := range execs {
		if v != strconv.Itoa(i) {
			t.Fatalf("upload %d is executor %s: out of order", i, v)
		}
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
	enc, _ := zstd.NewWriter(nil)
	payload := enc.EncodeAll([]byte("\x05{\"ID\":1}gob!"), nil)
	rec := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	rec = binary.LittleEndian.AppendUint32(rec, wal.Checksum(payload))
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

// TestZstdRecords reads a log whose records are zstd frames, as sparkprof
// wrote them before records were S2 blocks.
func TestZstdRecords(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	db.Append("t", upload(t, "1"))
	db.Append("t", upload(t, "2"))
	_, want := count(t, db, "t", Query{})
	db.Close()
	seg := files(t, dir, "*.wal")[0]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := zstd.NewWriter(nil)
	var old []byte
	for len(data) >= 8 {
		n := binary.LittleEndian.Uint32(data)
		raw, err := s2.Decode(nil, data[8:8+n])
		if err != nil {
			t.Fatal(err)
		}
		payload := enc.EncodeAll(raw, nil)
		old = binary.LittleEndian.AppendUint32(old, uint32(len(payload)))
		old = binary.LittleEndian.AppendUint32(old, wal.Checksum(payload))
		old = append(old, payload...)
		data = data[8+n:]
	}
	if err := os.WriteFile(seg, old, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, total := count(t, db, "t", Query{}); n != 2 || total != want {
		t.Errorf("from zstd records: %d uploads, total %d; want 2, %d", n, total, want)
	}
}

// failingSegment is a log segment whose next write stores only half its
// bytes and fails, as on a full disk, and whose truncation and fsync fail
// when told to.
type failingSegment struct {
	*os.File
	failWrite, failSync, failTruncate bool
}

func (f *failingSegment) Write(b []byte) (int, error) {
	if f.failWrite {
		f.failWrite = false
		n, _ := f.File.Write(b[:len(b)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(b)
}

func (f *failingSegment) Sync() error {
	if f.failSync {
		f.failSync = false
		return syscall.EIO
	}
	return f.File.Sync()
}

func (f *failingSegment) Truncate(size int64) error {
	if f.failTruncate {
		return syscall.EIO
	}
	return f.File.Truncate(size)
}

// TestFailedWrites: an upload whose log write or fsync fails is refused,
// and the uploads stored before and after it are all there after a
// restart: the segment is cut back to its last record, or, when it cannot
// be, left for a new one whose torn end replay ignores.
func TestFailedWrites(t *testing.T) {
	for _, tt := range []struct {
		name string
		fail func(*failingSegment)
		segs int // segment files at the end
	}{
		{"write fails halfway", func(f *failingSegment) { f.failWrite = true }, 1},
		{"fsync fails", func(f *failingSegment) { f.failSync = true }, 1},
		{"write fails, segment cannot be cut back", func(f *failingSegment) { f.failWrite, f.failTruncate = true, true }, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seg *failingSegment
			defer func(open func(string) (wal.SegmentFile, error)) { wal.OpenSegment = open }(wal.OpenSegment)
			wal.OpenSegment = func(path string) (wal.SegmentFile, error) {
				f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				seg = &failingSegment{File: f}
				return seg, err
			}
			dir := t.TempDir()
			db, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Append("t", upload(t, "1")); err != nil {
				t.Fatal(err)
			}
			tt.fail(seg)
			if err := db.Append("t", upload(t, "2")); err == nil {
				t.Fatal("an upload whose write failed was acknowledged")
			}
			if err := db.Append("t", upload(t, "3")); err != nil {
				t.Fatalf("the upload after a failed one: %v", err)
			}
			db.Close()
			if w := files(t, dir, "*.wal"); len(w) != tt.segs {
				t.Errorf("segments %v, want %d", w, tt.segs)
			}
			db, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if execs := executors(db, "t"); !slices.Equal(execs, []string{"1", "3"}) {
				t.Errorf("after a restart, executors %v; want the acknowledged uploads, 1 and 3", execs)
			}
			checkDiskBytes(t, db, dir, "after a restart")
		})
	}
}

// TestDamagedRecord: a record damaged inside a segment (a flipped bit) is
// skipped at replay; the records after it are kept, and the file is left
// as it was.
func TestDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	var offsets []int64
	for _, e := range []string{"1", "2", "3"} {
		db.Append("t", upload(t, e))
		db.mu.RLock()
		offsets = append(offsets, db.tenants["t"].segs[0].Size)
		db.mu.RUnlock()
	}
	db.Close()
	seg := files(t, dir, "*.wal")[0]
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	data[offsets[0]+100] ^= 0x40 // inside the second record's payload
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if execs := executors(db, "t"); !slices.Equal(execs, []string{"1", "3"}) {
		t.Errorf("executors %v after a damaged record; want 1 and 3", execs)
	}
	if after, _ := os.ReadFile(seg); !slices.Equal(after, data) {
		t.Error("replay changed the segment")
	}
}
