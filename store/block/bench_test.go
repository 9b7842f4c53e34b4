package block

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/sparkprof/sparkprof/internal/agentwindows"
)

// BenchmarkBlockParts measures the steps of writing a block, apart from
// merging the uploads: the rollup, the time slices with their rollups, the
// timeline, and the whole block file (the steps, encoding and
// compression). Its block is 100 executors' windows of 30 s, as
// BenchmarkCompact's (SPARKPROF_JDK_WINDOWS).
func BenchmarkBlockParts(b *testing.B) {
	ups := executorInputs(b, agentwindows.Load(b)[:3], 100)
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

// executorInputs makes the inputs of executors that each sent windows.
func executorInputs(b *testing.B, windows [][]byte, executors int) []Input {
	var ins []Input
	for _, u := range agentwindows.Executors(b, windows, executors) {
		ins = append(ins, Input{From: u.Profile.Start, Until: u.Profile.End, Profile: u.Profile, Labels: u.Labels})
	}
	return ins
}
