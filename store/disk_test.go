package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

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
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".block") || strings.HasSuffix(path, ".wal")) {
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
	checkDiskBytes(t, db, dir, "in the log")

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
	checkDiskBytes(t, db, dir, "compacted")
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
	checkDiskBytes(t, db, dir, "reopened, a late upload in the log")
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

// TestCorruptBlock: a damaged block meta stops the start, a damaged part
// fails the queries that read it; both errors name the file.
func TestCorruptBlock(t *testing.T) {
	load := func(u *Upload) error { _, err := u.Load(); return err }
	for _, c := range []struct {
		name   string
		offset func(b *block) int64 // of the flipped byte
		atOpen bool
		read   func(u *Upload) error
	}{
		{"meta", func(*block) int64 { return int64(len(blockMagic)) + 8 + 2 }, true, nil},
		{"samples", func(b *block) int64 { return b.parts[partSamples].off + 2 }, false, load},
		{"series", func(b *block) int64 { return b.parts[partSeries].off + 2 }, false, func(u *Upload) error {
			_, err := u.LoadSeries()
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db, _ := Open(dir, Options{})
			db.Append("t", upload(t, "1"))
			db.Compact()
			db.Close()
			blk := files(t, dir, "*.block")[0]
			b, err := readBlock(blk)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(blk)
			data[c.offset(b)] ^= 0xff
			os.WriteFile(blk, data, 0o644)
			named := func(err error) bool {
				return err != nil && strings.Contains(err.Error(), filepath.Base(blk)) &&
					(strings.Contains(err.Error(), "checksum") || strings.Contains(err.Error(), "meta"))
			}
			db, err = Open(dir, Options{})
			if c.atOpen {
				if !named(err) {
					t.Errorf("open with a damaged block meta: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("open with a damaged block part: %v", err)
			}
			defer db.Close()
			err = db.Select("t", Query{}, c.read)
			if !named(err) {
				t.Errorf("query of a damaged block: %v", err)
			}
		})
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
	enc, _ := zstd.NewWriter(nil)
	payload := enc.EncodeAll([]byte("\x05{\"ID\":1}gob!"), nil)
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

// TestBlockCache: blocks stay on disk until a query reads them; what is
// read is cached within the budget, least recently used out first, and a
// replaced block's parts leave the cache.
func TestBlockCache(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	hour := int64(time.Hour)
	for i := range 3 {
		u := upload(t, "1")
		u.From, u.Until = int64(10+i)*hour, int64(10+i)*hour+int64(10*time.Second)
		db.Append("t", u)
	}
	_, want := count(t, db, "t", Query{})
	db.Compact()
	db.Close()

	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Blocks != 3 || st.CacheBytes != 0 || st.CacheMisses != 0 {
		t.Fatalf("after open: %+v, want 3 blocks and nothing read", st)
	}
	count(t, db, "t", Query{})
	one := db.Stats().CacheBytes / 3 // the blocks hold the same samples
	db.Close()

	// A budget smaller than a block's samples keeps none of them.
	db, err = Open(dir, Options{CacheBytes: one / 2})
	if err != nil {
		t.Fatal(err)
	}
	count(t, db, "t", Query{From: 12 * hour})
	count(t, db, "t", Query{From: 12 * hour})
	if st := db.Stats(); st.CacheBytes != 0 || st.CacheMisses != 2 || st.CacheHits != 0 {
		t.Errorf("a block larger than the budget, read twice: %+v, want nothing kept, 2 misses", st)
	}
	db.Close()

	db, err = Open(dir, Options{CacheBytes: one * 3 / 2}) // one block's samples fit, not two
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 2 {
		if _, total := count(t, db, "t", Query{}); total != want {
			t.Errorf("round %d: total %d, want %d", round, total, want)
		}
	}
	st := db.Stats()
	if st.CacheMisses != 6 || st.CacheHits != 0 || st.CacheEvictions != 5 || st.CacheBytes > one*3/2 {
		t.Errorf("two rounds over three blocks that do not fit: %+v, want 6 misses, 5 evictions, at most %d bytes", st, one*3/2)
	}
	// The last block read is cached: reading it again is a hit.
	last := Query{From: 12 * hour}
	if n, total := count(t, db, "t", last); n != 1 || total != want/3 {
		t.Errorf("the last block: %d with %d, want 1 with %d", n, total, want/3)
	}
	if st := db.Stats(); st.CacheHits != 1 {
		t.Errorf("reading the cached block again: %+v, want a hit", st)
	}

	// A late upload replaces the last block: the old block's parts go.
	u := upload(t, "2")
	u.From, u.Until = 12*hour, 12*hour+int64(time.Second)
	db.Append("t", u)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// The new block comes in cached; the old one's parts are gone.
	db.cache.mu.Lock()
	for k := range db.cache.byKey {
		if _, err := os.Stat(k.path); err != nil {
			t.Errorf("the cache holds %s part %d of a replaced block", k.path, k.part)
		}
	}
	db.cache.mu.Unlock()
	misses := db.Stats().CacheMisses
	var rollups int
	db.Select("t", Query{From: 12 * hour}, func(u *Upload) error {
		if _, err := u.LoadRollup(); err != nil {
			t.Fatal(err)
		}
		rollups++
		return nil
	})
	if st := db.Stats(); rollups != 1 || st.CacheMisses != misses {
		t.Errorf("reading the rollup of the block compaction just wrote: %d misses, want none", st.CacheMisses-misses)
	}
	if _, total := count(t, db, "t", Query{From: 12 * hour}); total != want/3+want/3 {
		t.Errorf("after the late upload: total %d, want %d", total, want/3+want/3)
	}
	if _, total := count(t, db, "t", Query{}); total != want+want/3 {
		t.Errorf("after the late upload: total %d, want %d", total, want+want/3)
	}
}

// TestBlockGoneDuringQuery: a block file removed between a query's
// selection and its read gives an error that says to run the query again.
func TestBlockGoneDuringQuery(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	db.Append("t", upload(t, "1"))
	db.Compact()
	db.Close()
	db, _ = Open(dir, Options{}) // nothing cached
	defer db.Close()
	err := db.Select("t", Query{}, func(u *Upload) error {
		os.Remove(files(t, dir, "*.block")[0])
		_, err := u.Load()
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "run it again") {
		t.Errorf("reading a removed block: %v", err)
	}
}

// TestSampleLabels: a block meta lists each sample label's values, up to
// maxMetaValues of them.
func TestSampleLabels(t *testing.T) {
	p := profile.New()
	for i := range maxMetaValues + 1 {
		p.Add(profile.Sample{Value: 1, Labels: p.AddLabels(profile.Labels{
			{Name: "task", Value: strconv.Itoa(i)},
			{Name: "stage", Value: strconv.Itoa(i % 3)},
		})})
	}
	got := sampleLabels(p, nil)
	if vals, ok := got["task"]; !ok || vals != nil {
		t.Errorf("task: %q (listed %v), want listed without values", vals, ok)
	}
	if vals := got["stage"]; !slices.Equal(vals, []string{"0", "1", "2"}) {
		t.Errorf("stage: %q, want 0, 1, 2", vals)
	}
}

// TestSelectBySampleValues: Select skips the uploads, in the head and
// in blocks, whose samples carry no value of a label a sample matcher
// needs, and keeps those it cannot rule out.
func TestSelectBySampleValues(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Partition: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Executor 1's samples carry an app id in their label sets (as a JFR's
	// contexts give them); executor 2's, a partition later, none at all.
	a, b := upload(t, "1"), upload(t, "2")
	a.Profile.OwnLabelSets()
	for i := range a.Profile.Samples {
		s := &a.Profile.Samples[i]
		s.Labels = a.Profile.AddLabels(a.Profile.LabelSet(s.Labels).Merge(profile.Labels{{Name: profile.LabelAppID, Value: "app-a"}}))
	}
	b.From, b.Until = int64(time.Hour)+1, int64(time.Hour)+2
	for _, u := range []*Upload{a, b} {
		if err := db.Append("t", u); err != nil {
			t.Fatal(err)
		}
	}
	execs := func(ms ...profile.Matcher) []string {
		t.Helper()
		var out []string
		if err := db.Select("t", Query{SampleMatchers: ms}, func(u *Upload) error {
			p, err := u.Load()
			if err != nil {
				return err
			}
			exec, _ := u.Labels.Get(profile.LabelExecutorID)
			if exec == "" { // a block: its upload labels are on its samples
				exec = p.Label(p.Samples[0], profile.LabelExecutorID)
			}
			out = append(out, exec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	eq := func(name, v string) profile.Matcher {
		return profile.Matcher{Name: name, Op: profile.MatchEqual, Value: v}
	}
	for _, when := range []string{"head", "blocks"} {
		if when == "blocks" {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if st := db.Stats(); st.Blocks != 2 || st.HeadUploads != 0 || st.HeadBytes != 0 {
				t.Fatalf("after compaction: %+v, want two blocks, an empty head and no head memory", st)
			}
		}
		for _, c := range []struct {
			m    profile.Matcher
			want []string
		}{
			{eq(profile.LabelAppID, "app-a"), []string{"1"}},
			{eq(profile.LabelAppID, "app-b"), nil},
			{profile.Matcher{Name: profile.LabelAppID, Op: profile.MatchNotEqual, Value: "app-a"}, []string{"1", "2"}}, // "" matches
			{eq(profile.LabelThreadName, "pool-2-thread-1"), []string{"1", "2"}},                                       // dump1's contexts
			{eq(profile.LabelThreadName, "no such thread"), nil},
			{eq(profile.LabelExecutorID, "2"), []string{"2"}}, // an upload label
		} {
			if got := execs(c.m); !slices.Equal(got, c.want) {
				t.Errorf("%s: %s selects executors %q, want %q", when, c.m, got, c.want)
			}
		}
		if when == "head" && db.Stats().HeadBytes <= a.memSize+b.memSize {
			t.Errorf("head memory %d: the uploads' label values are not counted", db.Stats().HeadBytes)
		}
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
		old = binary.LittleEndian.AppendUint32(old, crc32.Checksum(payload, castagnoli))
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

// TestBlockSeries: an upload's metric series come back with its labels,
// from the head, from a block's series part (its samples part, which
// every slice query decodes, holds none), and when that block is merged
// with a later upload of its partition.
func TestBlockSeries(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	defer db.Close()
	withSeries := func(exec string, points ...profile.Point) *Upload {
		u := upload(t, exec)
		u.Profile.Labels = u.Profile.Labels.Merge(u.Labels)
		u.Profile.Series = append(u.Profile.Series, profile.Series{
			Name: "jvm.gc.pause", Unit: "nanoseconds", Labels: profile.Labels{{Name: "gc", Value: "G1 Young Generation"}}, Points: points,
		})
		return u
	}
	want := map[string][]profile.Point{"7": {{Time: 1700000000e9, Value: 4e6}, {Time: 1700000002e9, Value: 7e6}}}
	if err := db.Append("t", withSeries("7", want["7"]...)); err != nil {
		t.Fatal(err)
	}
	if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("head: %v, want %v", got, want)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("block: %v, want %v", got, want)
	}
	b, err := readBlock(files(t, dir, "*.block")[0])
	if err != nil {
		t.Fatal(err)
	}
	if p, err := b.load(partSamples, db.dec); err != nil || len(p.Series) != 0 {
		t.Errorf("the samples part holds %d series (%v), want none", len(p.Series), err)
	}
	want["8"] = []profile.Point{{Time: 1700000003e9, Value: 5e6}}
	mergeIntoBlock(t, db, dir, withSeries("8", want["8"]...))
	if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("merged block: %v, want %v", got, want)
	}
}

// TestLegacyBlockSeries reads blocks written before their samples part
// left the series out (testdata, written by that version): with a series
// part, and from before blocks had one. Their series come back once,
// also when a later upload of the partition is merged into them.
func TestLegacyBlockSeries(t *testing.T) {
	for _, name := range []string{"series-in-samples-and-part.block", "series-in-samples.block"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, TenantDir("t")), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, TenantDir("t"), "01699999800000000000-0000000000.block"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want := map[string][]profile.Point{"7": {{Time: 1700000000e9, Value: 4e6}, {Time: 1700000002e9, Value: 7e6}}}
			if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%v, want %v", got, want)
			}
			u := upload(t, "8")
			u.From, u.Until = 1700000003e9, 1700000004e9
			mergeIntoBlock(t, db, dir, u)
			if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("merged: %v, want %v", got, want)
			}
		})
	}
}

// mergeIntoBlock appends u to tenant t of db (in dir) and compacts it into
// the partition's one block.
func mergeIntoBlock(t *testing.T, db *DB, dir string, u *Upload) {
	t.Helper()
	if err := db.Append("t", u); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := len(files(t, dir, "*.block")); n != 1 {
		t.Fatalf("%d blocks, want the upload merged into one", n)
	}
}

// gcPoints returns the points of tenant t's jvm.gc.pause series of G1's
// young collections, by executor.
func gcPoints(t *testing.T, db *DB) map[string][]profile.Point {
	t.Helper()
	out := map[string][]profile.Point{}
	err := db.Select("t", Query{}, func(u *Upload) error {
		ss, err := u.LoadSeries()
		for _, s := range ss {
			exec, _ := s.Labels.Get(profile.LabelExecutorID)
			gc, _ := s.Labels.Get("gc")
			if s.Name == "jvm.gc.pause" && gc == "G1 Young Generation" {
				out[exec] = append(out[exec], s.Points...)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHeadBudget fills the head past its budget: the background compacts
// its oldest uploads into blocks of the still-open partition at once,
// without waiting for the partition to end, and merges those blocks in runs
// that fit the budget once it is quiet.
func TestHeadBudget(t *testing.T) {
	dir := t.TempDir()
	// The uploads' sizes differ a little: a decoder sizes a recording's
	// tables by the one it read before.
	var ups []*Upload
	var one int64
	for i := range 6 {
		// Consecutive 10 s windows, whose samples a block cannot sum.
		u := upload(t, strconv.Itoa(i))
		shift := int64(i) * int64(10*time.Second)
		u.From, u.Until = u.From+shift, u.Until+shift
		for j := range u.Profile.Samples {
			u.Profile.Samples[j].Time += shift
		}
		ups = append(ups, u)
		one = max(one, u.Profile.MemSize())
	}
	db, err := Open(dir, Options{HeadBytes: 2*one + one/2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var want int64
	for i, u := range ups {
		for _, s := range u.Profile.Samples {
			want += s.Value
		}
		if err := db.Append("acme", u); err != nil {
			t.Fatal(err)
		}
		if st := db.Stats(); st.HeadBytes > db.opts.HeadBytes+one {
			t.Fatalf("after upload %d the head holds %d bytes; the budget is %d", i, st.HeadBytes, db.opts.HeadBytes)
		}
		// Wait for the background to bring the head under its budget again,
		// sooner than its once-a-minute round would.
		for deadline := time.Now().Add(30 * time.Second); db.Stats().HeadBytes > db.opts.HeadBytes; {
			if time.Now().After(deadline) {
				t.Fatalf("after upload %d the head stays at %d bytes, over its budget of %d", i, db.Stats().HeadBytes, db.opts.HeadBytes)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	st := db.Stats()
	if st.Blocks < 2 || st.BlockUploads+st.HeadUploads != 6 {
		t.Errorf("after six uploads over a budget of 2.5: %d blocks with %d uploads, %d in the head", st.Blocks, st.BlockUploads, st.HeadUploads)
	}
	if _, total := count(t, db, "acme", Query{}); total != want {
		t.Errorf("total %d, want %d", total, want)
	}
	// A quarter of the budget at a time: one upload per early block.
	db.Select("acme", Query{}, func(u *Upload) error {
		if u.Compacted() && u.Uploads != 1 {
			t.Errorf("an early block of %d uploads; a quarter of the budget holds one", u.Uploads)
		}
		return nil
	})

	// Once the partition is quiet, its blocks and the rest of the head are
	// merged in runs that fit the budget, until no two fit together: with
	// a budget of one and a half early blocks, none do.
	var largest int64
	for _, b := range db.tenants["acme"].blocks {
		largest = max(largest, b.meta.MemSize)
	}
	db.Close()
	db, err = Open(dir, Options{HeadBytes: largest * 3 / 2})
	if err != nil {
		t.Fatal(err)
	}
	quiet := time.Now().Add(time.Hour).UnixNano()
	if err := db.compact(quiet, false); err != nil {
		t.Fatal(err)
	}
	n, total := count(t, db, "acme", Query{})
	if st := db.Stats(); n < 2 || total != want || st.HeadUploads != 0 || st.HeadBytes != 0 || st.BlockUploads != 6 {
		t.Errorf("after the quiet compaction: %d blocks with %d (want several with %d), head %d uploads of %d bytes, blocks hold %d uploads",
			n, total, want, st.HeadUploads, st.HeadBytes, st.BlockUploads)
	}
	db.mu.RLock()
	blocks := slices.Clone(db.tenants["acme"].blocks)
	db.mu.RUnlock()
	for i := 1; i < len(blocks); i++ {
		if a, b := blocks[i-1].meta.MemSize, blocks[i].meta.MemSize; a+b <= db.opts.HeadBytes {
			t.Errorf("blocks %d and %d of %d and %d bytes fit the budget of %d together, yet stay apart", i-1, i, a, b, db.opts.HeadBytes)
		}
	}
	done := db.Stats().Compactions
	if err := db.compact(quiet, false); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Compactions != done {
		t.Errorf("a second quiet compaction wrote %d blocks; no two fit the budget together", st.Compactions-done)
	}
	db.Close()

	// With room for the whole partition, it becomes one block.
	db, err = Open(dir, Options{HeadBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	if err := db.compact(quiet, false); err != nil {
		t.Fatal(err)
	}
	if n, total := count(t, db, "acme", Query{}); n != 1 || total != want {
		t.Errorf("with a large budget %d blocks with %d, want 1 with %d", n, total, want)
	}
	if b, w := files(t, dir, "*.block"), files(t, dir, "*.wal"); len(b) != 1 || len(w) != 0 {
		t.Errorf("files: blocks %v, segments %v", b, w)
	}
}

// TestRollup checks a block's rollup against the same sums made by a
// Merger, which interns every stack again: per stack, label set, type and
// state, over uploads of several executors with per-sample task and thread
// labels and times.
func TestRollup(t *testing.T) {
	var ups []*Upload
	for i := range 3 {
		u := upload(t, strconv.Itoa(i))
		p := u.Profile
		for j := range p.Samples {
			s := &p.Samples[j]
			s.Time += int64(i) * int64(10*time.Second)
			s.Labels = p.AddLabels(profile.Labels{
				{Name: profile.LabelTaskID, Value: strconv.Itoa(j % 5)},
				{Name: profile.LabelStageID, Value: strconv.Itoa(j % 2)},
				{Name: profile.LabelThreadName, Value: "t" + strconv.Itoa(j%3)},
			})
		}
		ups = append(ups, u)
	}
	block, _ := compactUploads(0, nil, nil, ups, int64(time.Second))

	// The reference: a Merger over the block with the labels dropped.
	cp := *block
	cp.OwnLabelSets()
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, DropThreads: true})
	m.AddFunc(&cp, func(s *profile.Sample) bool {
		s.Labels = cp.AddLabels(cp.LabelSet(s.Labels).Without(RollupDropped...))
		return true
	})
	want, got := rows(m.Profile()), rows(rollup(block))
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Errorf("rollup has %d rows, the merger's %d; they differ", len(got), len(want))
	}
	if r := rollup(block); len(r.Samples) != len(want) {
		t.Errorf("rollup has %d samples for %d distinct rows", len(r.Samples), len(want))
	}
}

// rows sums p's samples by stack (its frames in full), label set, type,
// state and thread, with every sample's labels in full.
func rows(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		var b strings.Builder
		buf = p.Stack(s.Stack, buf[:0])
		for _, f := range buf {
			fmt.Fprintf(&b, "%v;", p.Frames[f])
		}
		fmt.Fprintf(&b, "|%v|%s|%d|%d", p.SampleLabels(s), p.Types[s.Type], s.State, s.Thread)
		out[b.String()] += s.Value
	}
	return out
}

// TestUploadKeys sends the same keyed upload again at each stage of its
// life, in the head, replayed from the log, compacted (its log segment
// deleted), reopened, and merged into a new block: each retry is refused
// as a duplicate naming the stored upload, and the data is counted once.
func TestUploadKeys(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	hour := int64(time.Hour)
	keyed := func(key, exec string, at int64) *Upload {
		u := upload(t, exec)
		u.Key, u.From, u.Until = key, at, at+int64(10*time.Second)
		return u
	}
	first := keyed("exec-1/0", "1", 10*hour)
	if err := db.Append("acme", first); err != nil {
		t.Fatal(err)
	}
	_, want := count(t, db, "acme", Query{})
	if err := db.Append("other", keyed("exec-1/0", "1", 10*hour)); err != nil {
		t.Errorf("the same key of another tenant: %v", err)
	}
	if err := db.Append("acme", upload(t, "2")); err != nil { // no key: never a duplicate
		t.Fatal(err)
	}
	if err := db.Append("acme", upload(t, "2")); err != nil {
		t.Fatal(err)
	}
	_, want3 := count(t, db, "acme", Query{})

	reopen := func() {
		t.Helper()
		db.Close()
		if db, err = Open(dir, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"in the head", func() {}},
		{"replayed from the log", reopen},
		{"compacted", func() {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}},
		{"reopened from its block", reopen},
		{"merged with a late upload", func() {
			if err := db.Append("acme", keyed("exec-3/0", "3", 10*hour+int64(time.Minute))); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			want3 += want
		}},
		{"reopened from the merged block", reopen},
	}
	for _, step := range steps {
		step.do()
		if id, ok := db.KeyStored("acme", "exec-1/0"); !ok || id != first.ID {
			t.Errorf("%s: KeyStored = %d, %v; want %d, true", step.name, id, ok, first.ID)
		}
		if _, ok := db.KeyStored("acme", "exec-9/0"); ok {
			t.Errorf("%s: a key never stored is reported stored", step.name)
		}
		retry := keyed("exec-1/0", "1", 10*hour)
		if err := db.Append("acme", retry); !errors.Is(err, ErrDuplicate) || retry.ID != first.ID {
			t.Errorf("%s: a retry got %v and id %d, want ErrDuplicate and id %d", step.name, err, retry.ID, first.ID)
		}
		if _, total := count(t, db, "acme", Query{}); total != want3 {
			t.Errorf("%s: total %d, want %d", step.name, total, want3)
		}
	}
	late := keyed("exec-3/0", "3", 10*hour)
	if err := db.Append("acme", late); !errors.Is(err, ErrDuplicate) {
		t.Errorf("the key of an upload merged into a block: %v, want ErrDuplicate", err)
	}
	if w := files(t, dir, "*.wal"); len(w) != 0 {
		t.Fatalf("log segments %v are left: the keys must come from elsewhere", w)
	}

	// A crash during an append leaves the keys file's last line cut: the
	// keys before it still hold, and the next compaction rewrites the file.
	db.Close()
	keys := filepath.Join(dir, TenantDir("acme"), keysFile)
	data, err := os.ReadFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), "\n") || !strings.Contains(string(data), `"exec-3/0"`) {
		t.Fatalf("keys file %q: want JSON lines, exec-3/0's last", data)
	}
	if err := os.WriteFile(keys, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, Options{}); err != nil {
		t.Fatalf("a torn keys file stops the store: %v", err)
	}
	if err := db.Append("acme", keyed("exec-1/0", "1", 10*hour)); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a key before the torn line: %v, want ErrDuplicate", err)
	}
	if err := db.Append("acme", keyed("exec-4/0", "4", 12*hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	reopen()
	for _, k := range []string{"exec-1/0", "exec-4/0"} {
		if err := db.Append("acme", keyed(k, "1", 10*hour)); !errors.Is(err, ErrDuplicate) {
			t.Errorf("%s after the torn file was rewritten: %v, want ErrDuplicate", k, err)
		}
	}
}

// TestUploadKeyWindow: a key is forgotten once its window has passed, at
// Append and at the background's sweep.
func TestUploadKeyWindow(t *testing.T) {
	db, err := Open(t.TempDir(), Options{KeyWindow: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u := upload(t, "1")
	u.Key = "k"
	if err := db.Append("acme", u); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	again := upload(t, "1")
	again.Key = "k"
	if err := db.Append("acme", again); err != nil || again.ID == u.ID {
		t.Errorf("past the key window: %v, id %d (first %d)", err, again.ID, u.ID)
	}
	time.Sleep(5 * time.Millisecond)
	db.forgetKeys()
	if st := db.Stats(); st.UploadKeys != 0 {
		t.Errorf("after the sweep %d keys are kept, want 0", st.UploadKeys)
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
			defer func(open func(string) (segmentFile, error)) { openSegment = open }(openSegment)
			openSegment = func(path string) (segmentFile, error) {
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
		offsets = append(offsets, db.tenants["t"].segs[0].size)
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
