package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/agentwindows"
	"github.com/sparkprof/sparkprof/store/keyfile"
)

// BenchmarkCompact measures the time and memory of compacting a
// partition's head into a block: the uploads of executors sending a JVM's
// consecutive 10 s windows, as the agent records them (the file
// SPARKPROF_JDK_WINDOWS names, written by the agent with outputDir; see
// server's BenchmarkIngest, whose jvm-windows case makes one), each
// executor's task threads named apart as Spark's are (by task id). Each
// iteration appends the uploads again (not timed) and compacts them into
// blocks of the server's default span (ten minutes, in time slices of a
// minute): 4 executors' 25 windows, and 100 executors' windows of the same
// 30 s.
func BenchmarkCompact(b *testing.B) {
	windows := agentwindows.Load(b)
	for _, c := range []struct {
		name                string
		executors, nWindows int
	}{
		{"4-executors", 4, len(windows)},
		{"100-executors", 100, 3},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchmarkCompact(b, windows[:min(c.nWindows, len(windows))], c.executors, 10*time.Minute)
		})
	}
}

// BenchmarkBlockSpan measures what a shorter block span (serve
// --block-span) costs on disk: 4 executors' consecutive windows of one JVM
// (SPARKPROF_JDK_WINDOWS, as BenchmarkCompact), compacted into blocks of
// their whole span, of half and of a fifth of it, as ten-minute blocks
// compare with five- and two-minute ones.
func BenchmarkBlockSpan(b *testing.B) {
	windows := agentwindows.Load(b)
	whole := time.Duration(len(windows)) * 10 * time.Second
	for _, div := range []int{1, 2, 5} {
		b.Run(fmt.Sprintf("span-1/%d", div), func(b *testing.B) {
			benchmarkCompact(b, windows, 4, whole/time.Duration(div))
		})
	}
}

// benchmarkCompact compacts executors' copies of windows into blocks of
// span, reporting the time and the blocks' bytes per upload.
func benchmarkCompact(b *testing.B, windows [][]byte, executors int, span time.Duration) {
	ups := executorUploads(b, windows, executors)
	b.ReportAllocs()
	var samples, stored int
	var blockBytes int64
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		db, err := Open(dir, Options{Partition: span})
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range ups {
			cp := *u
			if err := db.Append("t", &cp); err != nil {
				b.Fatal(err)
			}
			samples += len(u.Profile.Samples)
		}
		b.StartTimer()
		if err := db.Compact(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		err = db.Select("t", Query{}, func(u *Upload) error {
			p, err := u.Load()
			if err == nil {
				stored += len(p.Samples)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		blocks, _ := filepath.Glob(filepath.Join(dir, "*", "*.block"))
		for _, f := range blocks {
			if fi, err := os.Stat(f); err == nil {
				blockBytes += fi.Size()
			}
		}
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N*len(ups)), "ms/upload")
	b.ReportMetric(float64(samples)/float64(b.N*len(ups)), "samples/upload")
	b.ReportMetric(float64(stored)/float64(b.N*len(ups)), "block-samples/upload")
	b.ReportMetric(float64(blockBytes)/1024/float64(b.N*len(ups)), "block-KB/upload")
}

// executorUploads makes the uploads of executors that each sent windows.
func executorUploads(b *testing.B, windows [][]byte, executors int) []*Upload {
	var ups []*Upload
	for _, u := range agentwindows.Executors(b, windows, executors) {
		ups = append(ups, &Upload{From: u.Profile.Start, Until: u.Profile.End, Profile: u.Profile, Labels: u.Labels})
	}
	return ups
}

// BenchmarkSaveKeys measures what a compaction adds when every upload
// carries an Idempotency-Key, with a full hour's window of 100 executors'
// 10 s uploads (36,000 keys of the agent's shape) indexed: appending the
// keys of the 850 uploads an early compaction takes, and rewriting the
// file with the whole window, which a compaction does once expired keys
// are most of the file.
func BenchmarkSaveKeys(b *testing.B) {
	db, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	t := &tenant{dir: b.TempDir()}
	now := time.Now().UnixNano()
	var ups []*Upload
	for i := range 36_000 {
		key := "0f8fad5b-d9cb-469f-a165-70867728950e/" + strconv.Itoa(i)
		t.addKey(key, uint64(i+1), now, 0)
		if i < 850 {
			ups = append(ups, &Upload{ID: uint64(i + 1), Key: key, Received: now})
		}
	}
	b.Run("append-850", func(b *testing.B) {
		t.keyLines = 1 // not a new file
		for range b.N {
			if err := db.saveKeys(t, ups); err != nil {
				b.Fatal(err)
			}
			t.keyLines = 1
		}
	})
	b.Run("rewrite-36000", func(b *testing.B) {
		for range b.N {
			t.keyLines = 1 << 30
			if err := db.saveKeys(t, ups); err != nil {
				b.Fatal(err)
			}
		}
		st, err := os.Stat(filepath.Join(t.dir, keyfile.Name))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
	})
}
