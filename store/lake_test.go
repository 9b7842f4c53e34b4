package store

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/lake"
)

// damageRowGroup flips the last byte of column col's chunk in row group g
// of Parquet file path: page data, whose checksum then fails.
func damageRowGroup(t testing.TB, path string, g int, col string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range f.Metadata().RowGroups[g].Columns {
		md := cc.MetaData
		if slices.Equal(md.PathInSchema, []string{col}) {
			start := md.DataPageOffset
			if md.DictionaryPageOffset > 0 {
				start = min(start, md.DictionaryPageOffset)
			}
			data[start+md.TotalCompressedSize-1] ^= 0xff
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%s: no column %q", path, col)
}

// oldBlock copies block file name of testdata, written by an earlier
// version, into a new store directory as tenant t's one block, and returns
// its path there.
func oldBlock(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	b, err := block.Read(src)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), TenantDir("t"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, block.Name(b.Meta.Partition, 0))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// blockTotals opens the store holding block file path and returns the
// sum of its samples' values by type, read whole and, for a sliced block,
// slice by slice (which must agree), and how many slices it has.
func blockTotals(t *testing.T, path string) (map[string]int64, int) {
	t.Helper()
	db, err := Open(filepath.Dir(filepath.Dir(path)), Options{Partition: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sum := func(p *profile.Profile, into map[string]int64) {
		for _, s := range p.Samples {
			into[p.Types[s.Type].String()] += s.Value
		}
	}
	whole, sliced := map[string]int64{}, map[string]int64{}
	n := 0
	err = db.Select("t", Query{}, func(u *Upload) error {
		p, err := u.Load()
		if err != nil {
			return err
		}
		sum(p, whole)
		for _, su := range u.Slices() {
			n++
			sp, err := su.Load()
			if err != nil {
				return err
			}
			sum(sp, sliced)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 && !equalTotals(whole, sliced) {
		t.Errorf("%s: whole %v, slice by slice %v", path, whole, sliced)
	}
	return whole, n
}

func equalTotals(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestOlderBlocksRead reads blocks written before samples were Parquet
// (SPBLOCK3, sliced and not, from testdata) and blocks written now of the
// same upload: all hold the same samples.
func TestOlderBlocksRead(t *testing.T) {
	want, _ := blockTotals(t, oneUploadBlock(t, 1<<30))
	if len(want) == 0 {
		t.Fatal("no samples")
	}
	for _, c := range []struct {
		name   string
		path   string
		slices bool
	}{
		{"SPBLOCK3", oldBlock(t, "spblock3.block"), false},
		{"SPBLOCK3 sliced", oldBlock(t, "spblock3-sliced.block"), true},
		{"SPBLOCK4 sliced", oneUploadBlock(t, 1), true},
	} {
		got, n := blockTotals(t, c.path)
		if !equalTotals(got, want) || (n > 0) != c.slices {
			t.Errorf("%s: %v in %d slices, want %v (sliced: %v)", c.name, got, n, want, c.slices)
		}
	}
}

// TestLakeFiles checks the Parquet files' life: a block file whose Parquet
// file is missing or of another size stops the store from opening, naming
// it; Parquet files without their block file (a compaction that stopped
// before renaming it into place) are removed at open; retention removes a
// block's Parquet files with it.
func TestLakeFiles(t *testing.T) {
	blk := oneUploadBlock(t, 1<<30)
	dir := filepath.Dir(filepath.Dir(blk))
	orphan := filepath.Join(filepath.Dir(blk), block.Name(1, 99))
	for _, suffix := range []string{lake.SamplesSuffix, lake.StacksSuffix, lake.SamplesSuffix + ".tmp"} {
		if err := os.WriteFile(strings.TrimSuffix(orphan, ".block")+suffix, []byte("PAR1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := Open(dir, Options{Partition: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got := files(t, dir, "*.parquet*"); len(got) != 2 {
		t.Errorf("after open: %v, want the block's two Parquet files", got)
	}

	data, err := os.ReadFile(lake.StacksPath(blk))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lake.StacksPath(blk), data[:len(data)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), filepath.Base(lake.StacksPath(blk))) {
		t.Errorf("a Parquet file cut short: %v, want an error naming it", err)
	}
	os.Remove(lake.StacksPath(blk))
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), filepath.Base(blk)) {
		t.Errorf("a Parquet file missing: %v, want an error naming the block", err)
	}
	if err := os.WriteFile(lake.StacksPath(blk), data, 0o644); err != nil {
		t.Fatal(err)
	}

	db, err = Open(dir, Options{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.dropOld(time.Now().UnixNano())
	if got := files(t, dir, "*"); len(got) != 0 {
		t.Errorf("after retention: %v, want no file", got)
	}
}

// TestParquetColumns reads a block's samples file as a lake would: the
// label columns hold what the samples' labels say, and every row names the
// block and a stack of the stacks file.
func TestParquetColumns(t *testing.T) {
	defer func(n int) { block.MinSlicedSamples = n }(block.MinSlicedSamples)
	block.MinSlicedSamples = 1
	dir := t.TempDir()
	db, err := Open(dir, Options{Partition: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	appendTaskUploads(t, db, 1692095700e9)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	blocks := files(t, dir, "*.block")
	if len(blocks) != 1 {
		t.Fatalf("blocks: %v", blocks)
	}
	rows, err := parquet.ReadFile[lake.SampleRow](lake.SamplesPath(blocks[0]))
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := parquet.ReadFile[lake.StackRow](lake.StacksPath(blocks[0]))
	if err != nil {
		t.Fatal(err)
	}
	known := map[int32]bool{}
	for _, s := range stacks {
		known[s.StackID] = s.Block == lake.BlockID(blocks[0]) && len(s.Frames) > 0 && s.Function == s.Frames[0]
	}
	var total int64
	tasks := map[int64]bool{}
	named := map[int32]bool{}
	for i, r := range rows {
		if r.Block != lake.BlockID(blocks[0]) || !known[r.StackID] || r.Service != "app" || r.Executor != "1" && r.Executor != "2" {
			t.Fatalf("row %d: %+v", i, r)
		}
		if r.Task == nil || r.ThreadName != "worker "+strconv.FormatInt(*r.Task, 10) {
			t.Fatalf("row %d: task %v, thread %q", i, r.Task, r.ThreadName)
		}
		if r.Time%int64(time.Second/time.Microsecond) != 0 || r.Time < 1692095700e6 {
			t.Fatalf("row %d: time %d µs", i, r.Time)
		}
		tasks[*r.Task] = true
		named[r.StackID] = true
		total += r.Value
	}
	if len(stacks) != len(named) || len(known) != len(named) {
		t.Errorf("%d rows of %d stacks in the stacks file, want a row for each of the %d stacks the samples name", len(stacks), len(known), len(named))
	}
	if len(tasks) != 144 {
		t.Errorf("%d tasks, want 144", len(tasks))
	}
	_, want := count(t, db, "t", Query{})
	if total != want {
		t.Errorf("rows sum to %d, the store's samples to %d", total, want)
	}
}

// TestParquetWriterReuse writes a block's Parquet files, another block's,
// and the first again: the writers are pooled, and one used before must
// write the same bytes as a new one.
func TestParquetWriterReuse(t *testing.T) {
	a := upload(t, "1").Profile
	b := upload(t, "2").Profile
	b.Samples = b.Samples[:len(b.Samples)/3]
	write := func(p *profile.Profile) []byte {
		var buf bytes.Buffer
		if err := lake.WriteSamples(&buf, "a", p, [][]profile.Sample{p.Samples[:10], p.Samples[10:]}); err != nil {
			t.Fatal(err)
		}
		if err := lake.WriteStacks(&buf, "a", p); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	first := write(a)
	write(b)
	if again := write(a); !bytes.Equal(first, again) {
		t.Errorf("the same block written again: %d bytes, first %d, not the same", len(again), len(first))
	}
}

// countingReader counts the reads of a file and their bytes.
type countingReader struct {
	r            io.ReaderAt
	reads, bytes int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	c.bytes += int64(len(p))
	return c.r.ReadAt(p, off)
}

// TestSamplesParquetReadsOnce: reading a samples file's row group reads
// its columns' chunks in one read, checked and decoded from there, and
// nothing of the other row groups: a block in a bucket is read with few
// ranged reads.
func TestSamplesParquetReadsOnce(t *testing.T) {
	blk := oneUploadBlock(t, 1)
	b, err := block.Read(blk)
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	var tables *profile.Profile
	if err := b.WithReader(func(r io.ReaderAt, _ int64) error {
		tables, err = b.DecodePart(r, block.PartSamples, dec)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(lake.SamplesPath(blk))
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	f, err := parquet.OpenFile(bytes.NewReader(data), size)
	if err != nil {
		t.Fatal(err)
	}
	groups := len(f.RowGroups())
	if groups < 2 {
		t.Fatalf("%d row groups, want a sliced block's", groups)
	}
	// The footer takes a read to check its length, and parquet-go's
	// three: the magic at the start, the footer's length, the footer.
	const footerReads = 4
	for g := -1; g < groups; g++ {
		c := &countingReader{r: bytes.NewReader(data)}
		if _, err := lake.ReadSamples("x.samples.parquet", c, size, g, tables); err != nil {
			t.Fatal(err)
		}
		want := int64(footerReads + 1)
		if g < 0 {
			want = int64(footerReads + groups)
		}
		if c.reads > want || c.bytes > size {
			t.Errorf("row group %d: %d reads of %d bytes in a %d-byte file, want at most %d reads and the file's bytes", g, c.reads, c.bytes, size, want)
		}
	}
}
