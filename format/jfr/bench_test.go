package jfr

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

func benchmarkDecode(b *testing.B, name string) {
	data := corpus.Read(b, "jfr", name+".jfr.gz")
	p, err := Decode(data, name)
	if err != nil {
		b.Fatal(err)
	}
	n := len(p.Samples)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(data, name); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkDecodeAsyncProfiler(b *testing.B) { benchmarkDecode(b, "async-profiler") }

func BenchmarkDecodeCortex(b *testing.B) {
	benchmarkDecode(b, "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0")
}

func BenchmarkDecodeFastSlow(b *testing.B) { benchmarkDecode(b, "FastSlow_2024_01_16_180855") }

// BenchmarkDecodeDump1 decodes the async-profiler recording of the server's
// labelled ingest benchmark: 2,188 samples of 2,148 distinct deep traces.
func BenchmarkDecodeDump1(b *testing.B) { benchmarkDecode(b, "dump1") }

// BenchmarkVarintPass reads every byte of the decode benchmarks'
// recordings as compressed integers, JFR's encoding of nearly all it
// writes, and does nothing else: the least any decoder's one pass costs,
// beside which Decode's MB/s reads. SPARKPROF_JDK_JFR adds that recording.
func BenchmarkVarintPass(b *testing.B) {
	for _, name := range []string{"async-profiler", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0", "FastSlow_2024_01_16_180855", "dump1"} {
		b.Run(name, func(b *testing.B) { benchmarkVarintPass(b, corpus.Read(b, "jfr", name+".jfr.gz")) })
	}
	if name, data := jdkRecording(b); data != nil {
		b.Run(filepath.Base(name), func(b *testing.B) { benchmarkVarintPass(b, data) })
	}
}

func benchmarkVarintPass(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		varintPassSink += varintPass(data)
	}
}

var varintPassSink uint64

// varintPass sums data read as a run of LEB128 integers.
func varintPass(data []byte) uint64 {
	var sum, v uint64
	var shift uint
	for _, x := range data {
		v |= uint64(x&0x7f) << shift
		shift += 7
		if x < 0x80 {
			sum += v
			v, shift = 0, 0
		}
	}
	return sum
}

// BenchmarkDecodeJDKFile decodes the recording SPARKPROF_JDK_JFR names, as
// the server's BenchmarkIngest takes it (the corpus has no recording of the
// JDK's own Flight Recorder): for side-by-side runs of two builds.
func BenchmarkDecodeJDKFile(b *testing.B) {
	name, data := jdkRecording(b)
	if data == nil {
		b.Skip("SPARKPROF_JDK_JFR names no recording")
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, name); err != nil {
			b.Fatal(err)
		}
	}
}

// jdkRecording returns the name and content of the recording
// SPARKPROF_JDK_JFR names, or a nil content when it names none.
func jdkRecording(b *testing.B) (string, []byte) {
	name := os.Getenv("SPARKPROF_JDK_JFR")
	if name == "" {
		return "", nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return name, data
}

// BenchmarkTraceReuse measures how much of a JVM's window an earlier window
// of the same JVM already held, which bounds what a decoder keeping state
// per JVM could skip: over the windows SPARKPROF_JDK_WINDOWS names (the
// agent's outputDir file, a window a chunk, in order), the share of each
// window's distinct stack traces (method keys and lines, the JDK keeping a
// method's key for the JVM's life) that an earlier window had, and the
// share of its root-side trace prefixes (stack nodes) no earlier window had.
// It reports the mean over the windows after the first, and the last's.
func BenchmarkTraceReuse(b *testing.B) {
	name := os.Getenv("SPARKPROF_JDK_WINDOWS")
	if name == "" {
		b.Skip("SPARKPROF_JDK_WINDOWS names no recording")
	}
	data, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	windows, err := Chunks(data)
	if err != nil || len(windows) < 2 {
		b.Fatalf("%s: %d windows (%v); want several", name, len(windows), err)
	}
	var seenTraces, newNodes []float64
	for b.Loop() {
		seenTraces, newNodes = seenTraces[:0], newNodes[:0]
		traces, nodes := map[prefixKey]bool{}, map[prefixKey]bool{}
		for _, w := range windows {
			h, err := readChunkHeader(w)
			if err != nil {
				b.Fatal(err)
			}
			md, err := loadMetadata(w, h.metaOffset)
			if err != nil {
				b.Fatal(err)
			}
			d := &decoder{chunk: w, hdr: h, md: md}
			if err := d.indexPools(); err != nil {
				b.Fatal(err)
			}
			windowTraces, windowNodes := map[prefixKey]bool{}, map[prefixKey]bool{}
			for _, sp := range d.traceSpans {
				k := prefixKey{0x243f6a8885a308d3, 0x13198a2e03707344}
				for i := sp.end - 1; i >= sp.start; i-- { // root first
					k = k.next(d.traceFrames[i])
					windowNodes[k] = true
				}
				windowTraces[k] = true
			}
			seen, fresh := 0, 0
			for k := range windowTraces {
				if traces[k] {
					seen++
				}
			}
			for k := range windowNodes {
				if !nodes[k] {
					fresh++
				}
			}
			seenTraces = append(seenTraces, float64(seen)/float64(len(windowTraces)))
			newNodes = append(newNodes, float64(fresh)/float64(len(windowNodes)))
			maps.Copy(traces, windowTraces)
			maps.Copy(nodes, windowNodes)
		}
	}
	mean := func(xs []float64) float64 {
		var sum float64
		for _, x := range xs[1:] {
			sum += x
		}
		return sum / float64(len(xs)-1)
	}
	last := len(windows) - 1
	b.ReportMetric(100*mean(seenTraces), "%traces-seen-before")
	b.ReportMetric(100*seenTraces[last], "%traces-seen-before-last")
	b.ReportMetric(100*mean(newNodes), "%nodes-new")
	b.ReportMetric(100*newNodes[last], "%nodes-new-last")
	b.ReportMetric(float64(len(windows)), "windows")
}
