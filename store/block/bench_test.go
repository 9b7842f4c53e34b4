package block

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/profile"
)

// BenchmarkBlockParts measures the steps of writing a block, apart from
// merging the uploads: the rollup, the time slices with their rollups, the
// timeline, and the whole block file (the steps, encoding and
// compression). Its block is 100 executors' windows of 30 s, as
// BenchmarkCompact's (SPARKPROF_JDK_WINDOWS).
func BenchmarkBlockParts(b *testing.B) {
	ups := executorInputs(b, agentWindows(b)[:3], 100)
	p, meta := Merge(0, nil, nil, ups, int64(time.Second))
	// A block span of the samples' own, so that each slice holds some.
	meta.Partition = meta.FirstSample
	span := meta.LastSample - meta.FirstSample + 1
	b.Logf("%d samples, %d label sets", len(p.Samples), p.NumLabelSets())
	b.Run("rollup", func(b *testing.B) {
		for b.Loop() {
			Rollup(p)
		}
	})
	_, labels := p.SumOverTimeMap(withoutPerTask)
	b.Run("slices", func(b *testing.B) {
		for b.Loop() {
			if sls := timeSlices(p, labels, meta.Partition, span/SlicesPerBlock); len(sls) != SlicesPerBlock {
				b.Fatalf("%d slices, want %d", len(sls), SlicesPerBlock)
			}
		}
	})
	b.Run("timeline", func(b *testing.B) {
		for b.Loop() {
			p.SumSamplesOverStacks(p.Samples, labels, 0)
		}
	})
	b.Run("write", func(b *testing.B) {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
		if err != nil {
			b.Fatal(err)
		}
		defer enc.Close()
		path := filepath.Join(b.TempDir(), "b.block")
		for b.Loop() {
			if _, _, err := Write(path, meta, p, enc, span); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// executorInputs makes the uploads of executors that each sent windows
// (at the windows' own times), their task threads named apart by executor.
func executorInputs(b *testing.B, windows [][]byte, executors int) []Input {
	var ups []Input
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
			ups = append(ups, Input{From: p.Start, Until: p.End, Profile: p,
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
