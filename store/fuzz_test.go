package store

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/keyfile"
	"github.com/sparkprof/sparkprof/store/lake"
)

// FuzzDecodeBlock feeds damaged block files to the block reader, meta and
// parts, time slices included: each is an error or a block, never a panic.
// The seeds are a block of one upload, whole and sliced, the same written
// before samples were Parquet (SPBLOCK3, testdata), and their halves.
func FuzzDecodeBlock(f *testing.F) {
	for _, sliced := range []int{block.MinSlicedSamples, 1} {
		data := seedBlock(f, sliced)
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	for _, name := range []string{"spblock3.block", "spblock3-sliced.block"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
	}
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(8<<20), zstd.WithDecoderLowmem(true))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		b, err := block.Open("fuzz.block", r, int64(len(data)))
		if err != nil {
			return
		}
		for part := range block.NumParts {
			b.Decode(r, part, dec)
		}
		for i := range b.SliceParts {
			for _, part := range []int{block.PartRollup, block.PartSamples} {
				if tables, err := b.DecodePart(r, part, dec); err == nil {
					b.DecodeSlice(r, i, part, tables, dec)
				}
			}
		}
	})
}

// FuzzParquetSamples feeds damaged Parquet samples files to the store's
// reader, all row groups and one: each is an error naming the file, or
// samples within the block's tables, never a panic. The seeds are the
// samples files of a block of one upload, whole and sliced, and their
// halves; the tables are that block's.
func FuzzParquetSamples(f *testing.F) {
	var tables *profile.Profile
	for _, sliced := range []int{block.MinSlicedSamples, 1} {
		blk := oneUploadBlock(f, sliced)
		data, err := os.ReadFile(lake.SamplesPath(blk))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		b, err := block.Read(blk)
		if err != nil {
			f.Fatal(err)
		}
		dec, _ := zstd.NewReader(nil)
		b.WithReader(func(r io.ReaderAt, _ int64) error {
			tables, err = b.DecodePart(r, block.PartSamples, dec)
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	const name = "0-1.samples.parquet"
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, group := range []int{-1, 0, 1} {
			samples, err := lake.ReadSamples(name, bytes.NewReader(data), int64(len(data)), group, tables)
			if err != nil && !strings.Contains(err.Error(), name) {
				t.Fatalf("row group %d: %v: the error does not name the file", group, err)
			}
			if err == nil {
				if err := tables.CheckSamples(samples); err != nil {
					t.Fatalf("row group %d: %v", group, err)
				}
			}
		}
	})
}

// seedBlock returns the file of a block of one upload, sliced when it has
// at least minSliced samples.
func seedBlock(f *testing.F, minSliced int) []byte {
	data, err := os.ReadFile(oneUploadBlock(f, minSliced))
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// oneUploadBlock compacts one upload (dump1) into a block of a one-minute
// partition, cut into slices of six seconds when it has at least
// minSliced samples, and returns the block file's path.
func oneUploadBlock(tb testing.TB, minSliced int) string {
	tb.Helper()
	defer func(n int) { block.MinSlicedSamples = n }(block.MinSlicedSamples)
	block.MinSlicedSamples = minSliced
	dir := tb.TempDir()
	db, err := Open(dir, Options{Partition: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	u := upload(tb, "1")
	u.From, u.Until = u.Profile.Start, u.Profile.End
	if err := db.Append("t", u); err != nil {
		tb.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		tb.Fatal(err)
	}
	db.Close()
	blocks, _ := filepath.Glob(filepath.Join(dir, "*", "*.block"))
	if len(blocks) != 1 {
		tb.Fatalf("blocks: %v", blocks)
	}
	return blocks[0]
}

// FuzzLoadKeys feeds damaged keys files to the store's start: each loads
// the keys it can read, never a panic nor a failed start.
func FuzzLoadKeys(f *testing.F) {
	f.Add([]byte(`{"Key":"0f8fad5b-d9cb-469f-a165-70867728950e/0","ID":1,"Received":1764000000000000000}` + "\n" + `{"Key":"k","ID":2,"Rec`))
	f.Add([]byte("\n\n{}\n[]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		tdir := filepath.Join(dir, TenantDir("t"))
		os.MkdirAll(tdir, 0o755)
		if err := os.WriteFile(filepath.Join(tdir, keyfile.Name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, Options{KeyWindow: 1 << 62})
		if err != nil {
			t.Fatalf("a keys file stops the store: %v", err)
		}
		db.Close()
	})
}

// FuzzReplaySegment feeds damaged log segments to the store's start:
// torn ends and damaged records are skipped, never a panic; the start
// fails only for a record whose checksum holds but which does not decode.
func FuzzReplaySegment(f *testing.F) {
	dir := f.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range []string{"1", "2"} {
		u := upload(f, e)
		u.Profile.Samples = u.Profile.Samples[:10] // small records: more of each execution spent on framing
		db.Append("t", u)
	}
	db.Close()
	segs, _ := filepath.Glob(filepath.Join(dir, "*", "*.wal"))
	data, err := os.ReadFile(segs[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-7])
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		tdir := filepath.Join(dir, TenantDir("t"))
		os.MkdirAll(tdir, 0o755)
		if err := os.WriteFile(filepath.Join(tdir, "00000000.wal"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, Options{})
		if err != nil {
			if !strings.Contains(err.Error(), "written by another sparkprof version") {
				t.Fatalf("start failed: %v", err)
			}
			return
		}
		db.Close()
	})
}
