package eventlog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

type posLine struct {
	line string
	pos  Pos
}

func viaNext(t *testing.T, path string) ([]posLine, []Truncation) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []posLine
	for {
		l, p, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Truncations
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, posLine{string(l), p})
	}
}

func viaBlocks(t *testing.T, path string, size int) ([]posLine, []Truncation) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []posLine
	var spare []byte // each block's memory is the next one's
	for {
		b, err := r.NextBlock(spare, size)
		if errors.Is(err, io.EOF) {
			return out, r.Truncations
		}
		if err != nil {
			t.Fatal(err)
		}
		b.Lines(func(l []byte, p Pos) { out = append(out, posLine{string(l), p}) })
		spare = b.Data
	}
}

// TestNextBlockMatchesNext reads corpus logs (plain, zstd, gzip, rolling,
// Databricks, cut, truncated) and generated codec files both ways: same
// lines, positions and truncations, whatever the block size.
func TestNextBlockMatchesNext(t *testing.T) {
	paths := []string{
		corpus.Path(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"),
		corpus.Path(t, "eventlogs", "nvidia", "eventlog_v2_local-1623876083964"),
		corpus.Path(t, "eventlogs", "nvidia", "db_sim_eventlog"),
		corpus.Path(t, "eventlogs", "nvidia", "truncated_eventlog"),
		corpus.Path(t, "eventlogs", "sparkscope", "app-20231025121456-0004-eventLog-running-incomplete"),
		corpus.Path(t, "eventlogs", "sparkscope", "app-20231122115433-0000-eventLog-corrupted-events"),
		corpus.Path(t, "eventlogs", "apache", "local-1430917381535_1"),
		corpus.Path(t, "eventlogs", "sparklint", "eventLogs-application_1489705648216_1600.zip"),
	}
	// A zstd log cut in the middle, and an lz4 one.
	dir := t.TempDir()
	zst, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.zstd")
	os.WriteFile(cut, zst[:len(zst)/2], 0o644)
	lz := filepath.Join(dir, "app.lz4")
	os.WriteFile(lz, encodeLZ4Block(realLog(t)), 0o644)
	paths = append(paths, cut, lz)
	for _, path := range paths {
		want, wantTr := viaNext(t, path)
		for _, size := range []int{1 << 10, 64 << 10, 4 << 20} {
			t.Run(fmt.Sprintf("%s/%d", filepath.Base(path), size), func(t *testing.T) {
				got, gotTr := viaBlocks(t, path, size)
				if len(got) != len(want) {
					t.Fatalf("%d lines by block, %d by line", len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("line %d: %+v vs %+v", i, got[i].pos, want[i].pos)
					}
				}
				if fmt.Sprint(gotTr) != fmt.Sprint(wantTr) {
					t.Errorf("truncations %v vs %v", gotTr, wantTr)
				}
			})
		}
	}
}
