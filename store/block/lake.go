package block

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/lake"
)

// LakeMeta describes the Parquet files of a block whose samples are in
// Parquet (Magic4): the samples file, whose row groups are the
// block's time slices in order (one, when it is not sliced), and the
// stacks file, which the store never reads.
type LakeMeta struct {
	SamplesSize, StacksSize int64 // the files' sizes in bytes
	RowGroups               int   // row groups of the samples file
}

// HasLake reports whether b's samples are in its Parquet samples file.
func (b *Block) HasLake() bool { return b.Meta.Lake != nil }

// DiskSize returns the bytes of b's files: its block file and its Parquet
// files.
func (b *Block) DiskSize() int64 {
	if lm := b.Meta.Lake; lm != nil {
		return b.Size + lm.SamplesSize + lm.StacksSize
	}
	return b.Size
}

// CheckLake checks that the Parquet files of b are there with the sizes
// its meta records; size returns the size of a file or object, an error
// wrapping fs.ErrNotExist when there is none.
func (b *Block) CheckLake(size func(path string) (int64, error)) error {
	lm := b.Meta.Lake
	if lm.RowGroups < 1 || len(b.Meta.Slices) > 0 && lm.RowGroups != len(b.Meta.Slices) {
		return fmt.Errorf("%s: block meta lists %d row groups for %d time slices", b.Path, lm.RowGroups, len(b.Meta.Slices))
	}
	for _, f := range []struct {
		path string
		size int64
	}{{lake.SamplesPath(b.Path), lm.SamplesSize}, {lake.StacksPath(b.Path), lm.StacksSize}} {
		n, err := size(f.path)
		if err != nil {
			return fmt.Errorf("%s: its Parquet file: %w", b.Path, err)
		}
		if n != f.size {
			return fmt.Errorf("%s: its Parquet file %s has %d bytes, the block meta says %d", b.Path, path.Base(f.path), n, f.size)
		}
	}
	return nil
}

// LocalSize returns the size of the file path.
func LocalSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// LakePaths returns the paths of the Parquet files of the block whose
// file or object is path: the samples file, then the stacks file.
func LakePaths(path string) []string { return []string{lake.SamplesPath(path), lake.StacksPath(path)} }

// ReadLake reads the samples of b's time slice i (-1: all of them) from
// its Parquet samples file into a copy of tables, the tables of b's
// samples.
func (b *Block) ReadLake(i int, tables *profile.Profile) (*profile.Profile, error) {
	name := lake.SamplesPath(b.Path)
	open := b.OpenSamples
	if open == nil {
		open = func() (Reader, error) { return os.Open(name) }
	}
	r, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: compaction or retention removed block %s while the query ran; run it again", err, path.Base(b.Path))
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	samples, err := lake.ReadSamples(name, r, b.Meta.Lake.SamplesSize, i, tables)
	if err != nil {
		return nil, err
	}
	cp := *tables
	cp.Samples = samples
	return &cp, nil
}

// writeLake writes the Parquet files of the block whose file is path and
// whose profile is p, one row group for each of groups, and returns what
// its meta records of them. Each file is written to a temporary file,
// fsynced and renamed into place; the caller syncs the directory.
func writeLake(path string, p *profile.Profile, groups [][]profile.Sample) (*LakeMeta, error) {
	id := lake.BlockID(path)
	var buf bytes.Buffer
	if err := lake.WriteSamples(&buf, id, p, groups); err != nil {
		return nil, err
	}
	lm := &LakeMeta{SamplesSize: int64(buf.Len()), RowGroups: len(groups)}
	if err := writeRenamed(lake.SamplesPath(path), buf.Bytes()); err != nil {
		return nil, err
	}
	buf.Reset()
	if err := lake.WriteStacks(&buf, id, p); err != nil {
		os.Remove(lake.SamplesPath(path))
		return nil, err
	}
	lm.StacksSize = int64(buf.Len())
	if err := writeRenamed(lake.StacksPath(path), buf.Bytes()); err != nil {
		os.Remove(lake.SamplesPath(path))
		return nil, err
	}
	return lm, nil
}

// writeRenamed writes data to path.tmp, fsyncs it and renames it to path.
func writeRenamed(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := syncfile.Write(tmp, bytes.NewReader(data)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Remove removes the block file path and its Parquet files, if any.
func Remove(path string) {
	os.Remove(path)
	os.Remove(lake.SamplesPath(path))
	os.Remove(lake.StacksPath(path))
}

// RemoveOrphans removes, in dir, the files of blocks being written when
// the store stopped: temporary files, and Parquet files whose block file
// was never renamed into place.
func RemoveOrphans(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	for _, p := range tmps {
		if strings.HasSuffix(p, ".block.tmp") || strings.HasSuffix(p, ".parquet.tmp") {
			os.Remove(p)
		}
	}
	for _, suffix := range []string{lake.SamplesSuffix, lake.StacksSuffix} {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
		for _, p := range paths {
			if _, err := os.Stat(strings.TrimSuffix(p, suffix) + ".block"); errors.Is(err, fs.ErrNotExist) {
				os.Remove(p)
			}
		}
	}
}
