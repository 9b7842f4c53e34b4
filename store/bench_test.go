package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/profile"
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
	windows := agentWindows(b)
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
	windows := agentWindows(b)
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

// executorUploads makes the uploads of executors that each sent windows
// (at the windows' own times), their task threads named apart by executor.
func executorUploads(b *testing.B, windows [][]byte, executors int) []*Upload {
	var ups []*Upload
	for i, w := range windows {
		for e := range executors {
			p, err := jfr.Decode(w, "window")
			if err != nil {
				b.Fatal(err)
			}
			p.DropIndexes()
			for t := 1; t < len(p.Threads); t++ {
				p.Threads[t].Name += " on executor " + strconv.Itoa(e)
			}
			if p.Start == 0 || p.End <= p.Start {
				b.Fatalf("window %d: no time span (%d to %d)", i, p.Start, p.End)
			}
			ups = append(ups, &Upload{From: p.Start, Until: p.End, Profile: p,
				Labels: profile.Labels{{Name: profile.LabelServiceName, Value: "app"}, {Name: profile.LabelExecutorID, Value: strconv.Itoa(e)}}})
		}
	}
	return ups
}

// agentWindows returns the chunks of the recording SPARKPROF_JDK_WINDOWS
// names, each one window the agent uploads, skipping b without one.
func agentWindows(b *testing.B) [][]byte {
	name := os.Getenv("SPARKPROF_JDK_WINDOWS")
	if name == "" {
		b.Skip("SPARKPROF_JDK_WINDOWS names no recording of the agent's windows")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	windows, err := jfr.Chunks(data)
	if err != nil || len(windows) == 0 {
		b.Fatalf("%s: %d windows: %v", name, len(windows), err)
	}
	return windows
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
