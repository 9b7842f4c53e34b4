package lake

import (
	"bytes"
	"io"
	"testing"

	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// BenchmarkWrite writes the Parquet files of a block that holds one plain
// JFR upload (cortex: 25,000 samples, 11,383 rows once summed within each
// second) with the labels an executor's upload carries: its samples file,
// and its stacks file.
func BenchmarkWrite(b *testing.B) {
	p, err := jfr.Decode(corpus.Read(b, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"), "cortex")
	if err != nil {
		b.Fatal(err)
	}
	// Summed as compaction sums one upload: within a second, the store's resolution.
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, Resolution: 1e9, WithinAdd: true})
	m.Add(p)
	p = m.Profile()
	p.Labels = profile.Labels{{Name: profile.LabelServiceName, Value: "load"}, {Name: profile.LabelAppID, Value: "app-1"},
		{Name: profile.LabelExecutorID, Value: "7"}, {Name: profile.LabelHost, Value: "host-7"}}
	groups := [][]profile.Sample{p.Samples}
	var buf bytes.Buffer
	b.Run("samples", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			if err := WriteSamples(&buf, "0-1", p, groups); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/1024, "KB")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(p.Samples)), "ns/row")
		b.ReportMetric(float64(len(p.Samples)), "rows")
	})
	b.Run("stacks", func(b *testing.B) {
		for b.Loop() {
			if err := WriteStacks(io.Discard, "0-1", p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
