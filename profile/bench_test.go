package profile

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"
)

// synthetic returns n distinct profiles shaped like 10-second executor
// uploads: samplesPer cpu samples at 100 Hz over stacks drawn (Zipf: a few
// hot stacks dominate, as in real profiles) from a shared pool of poolSize
// stacks, depth 20 to 60, with per-upload executor and stage labels.
func synthetic(n, samplesPer, poolSize int) []*Profile {
	rng := rand.New(rand.NewSource(1))
	pool := make([][]string, poolSize)
	for i := range pool {
		depth := 20 + rng.Intn(40)
		st := make([]string, depth)
		for d := range st {
			// Shared prefixes near the root, diversity near the leaves.
			st[d] = fmt.Sprintf("org.example.pkg%d.Class%d.method%d", d%7, rng.Intn(2+d), d)
		}
		pool[i] = st
	}
	ps := make([]*Profile, n)
	for i := range ps {
		p := New()
		p.Labels = Labels{{LabelExecutorID, fmt.Sprint(i % 100)}, {LabelAppID, "app-1"}}
		cpu := p.AddType(TypeCPU)
		th := p.AddThread(Thread{ID: int64(i % 8), Name: fmt.Sprintf("Executor task launch worker for task %d.0 in stage %d.0 (TID %d)", i, i%10, i)})
		stage := p.AddLabels(Labels{{LabelStageID, fmt.Sprint(i % 10)}})
		ids := make([]FrameID, 0, 64)
		zipf := rand.NewZipf(rng, 1.1, 1, uint64(poolSize-1))
		for s := 0; s < samplesPer; s++ {
			st := pool[zipf.Uint64()]
			ids = ids[:0]
			for _, name := range st {
				ids = append(ids, p.AddFrame(Frame{Name: name, Kind: KindJava}))
			}
			p.Add(Sample{Stack: p.AddStack(ids), Value: 10_000_000, Type: cpu, Thread: th, Labels: stage,
				Time: int64(i)*10e9 + int64(s)*1e7})
		}
		ps[i] = p
	}
	return ps
}

// BenchmarkMerge10k merges 10,000 ten-second profiles (1,000 samples each,
// 100 distinct inputs reused) into one flame graph tree, and into one
// aggregated profile.
func BenchmarkMerge10k(b *testing.B) {
	const uploads = 10_000
	inputs := synthetic(100, 1000, 2000)
	b.Run("tree", func(b *testing.B) {
		for b.Loop() {
			tb := NewTreeBuilder(TypeCPU)
			for i := 0; i < uploads; i++ {
				tb.Add(inputs[i%len(inputs)])
			}
			tr := tb.Tree()
			if tr.Total() != uploads*1000*10_000_000 {
				b.Fatalf("total %d", tr.Total())
			}
		}
		reportHeap(b)
	})
	b.Run("tree-parallel", func(b *testing.B) {
		all := make([]*Profile, uploads)
		for i := range all {
			all[i] = inputs[i%len(inputs)]
		}
		for b.Loop() {
			tb := NewTreeBuilder(TypeCPU)
			tb.AddAll(all)
			if tr := tb.Tree(); tr.Total() != uploads*1000*10_000_000 {
				b.Fatalf("total %d", tr.Total())
			}
		}
		reportHeap(b)
	})
	b.Run("aggregate", func(b *testing.B) {
		for b.Loop() {
			m := NewMerger(MergeOptions{Aggregate: true, DropThreads: true})
			for i := 0; i < uploads; i++ {
				m.Add(inputs[i%len(inputs)])
			}
			p := m.Profile()
			b.ReportMetric(float64(len(p.Samples)), "samples-out")
			b.ReportMetric(float64(p.NumStacks()), "stacks-out")
		}
		reportHeap(b)
	})
}

func reportHeap(b *testing.B) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
}

// BenchmarkUnmarshalBinary decodes the wire form of 200 ten-second
// profiles merged with their times (200,000 samples), as a query reads a
// block's samples.
func BenchmarkUnmarshalBinary(b *testing.B) {
	data, err := Merge(synthetic(200, 1000, 500)...).MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var p Profile
		if err := p.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSumOver sums 200 ten-second profiles merged with their times
// (200,000 samples) over time (a block's rollup) and over stacks (its
// timeline), a task label dropped.
func BenchmarkSumOver(b *testing.B) {
	p := Merge(synthetic(200, 1000, 500)...)
	relabel := func(ls Labels) Labels { return ls.Without(LabelTaskID) }
	b.Run("time", func(b *testing.B) {
		for b.Loop() {
			p.SumOverTime(relabel)
		}
	})
	b.Run("stacks", func(b *testing.B) {
		for b.Loop() {
			p.SumOverStacks(relabel, 0)
		}
	})
}

// BenchmarkUnmarshalTables decodes the tables of a compacted block of ten
// minutes of 100 executors (no samples): 240,000 label sets, one per task,
// each with the upload's app, executor, host and service and the task's
// stage and id, and 5,000 frames, as a query that reads a block's time
// slices decodes them first.
func BenchmarkUnmarshalTables(b *testing.B) {
	p := New()
	for i := range 5000 {
		p.AddFrame(Frame{Name: fmt.Sprintf("org.apache.spark.pkg%d.Class%d.method%d", i%40, i%300, i), File: fmt.Sprintf("Class%d.java", i%300), Line: int32(i % 900), Kind: KindJava})
	}
	for task := range 240_000 {
		exec := task % 100
		p.AddLabels(Labels{
			{LabelServiceName, "bench"}, {LabelAppID, "app-20261125161313-0001"},
			{LabelExecutorID, fmt.Sprint(exec)}, {LabelHost, fmt.Sprintf("node-%02d", exec%20)},
			{LabelStageID, fmt.Sprint(task / 24_000)}, {LabelTaskID, fmt.Sprint(task)},
		})
	}
	data, err := p.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var q Profile
		if err := q.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWithSamples decodes the samples of a block's time slice apart
// from its tables: 1,300,000 samples (a tenth of ten minutes of 100
// executors), as a query that needs a slice's samples reads them.
func BenchmarkWithSamples(b *testing.B) {
	p := Merge(synthetic(200, 1000, 500)...)
	tables := *p
	tables.Samples = nil
	samples := make([]Sample, 0, 1_300_000)
	for len(samples) < cap(samples) {
		samples = append(samples, p.Samples[:min(len(p.Samples), cap(samples)-len(samples))]...)
	}
	data := AppendSamples(nil, samples)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tables.WithSamples(data); err != nil {
			b.Fatal(err)
		}
	}
}
