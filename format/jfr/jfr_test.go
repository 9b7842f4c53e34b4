package jfr

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// corpusFiles are the JFR recordings of the shared corpus.
var corpusFiles = []string{
	"FastSlow_2024_01_16_180855",
	"async-profiler",
	"cortex-dev-01__kafka-0__cpu_lock0_alloc0__0",
	"dump1",
	"dump2",
	"wall",
}

func decodeCorpus(t testing.TB, name string) *profile.Profile {
	t.Helper()
	data := corpus.Read(t, "jfr", name+".jfr.gz")
	p, err := Decode(data, name+".jfr")
	if err != nil {
		t.Fatalf("Decode(%s): %v", name, err)
	}
	return p
}

func TestDecodeCorpus(t *testing.T) {
	for _, name := range corpusFiles {
		t.Run(name, func(t *testing.T) {
			p := decodeCorpus(t, name)
			if len(p.Samples) == 0 {
				t.Fatal("no samples")
			}
			if p.Start == 0 || p.End <= p.Start {
				t.Errorf("Start, End = %d, %d; want 0 < Start < End", p.Start, p.End)
			}
			for i, s := range p.Samples {
				if s.Time < p.Start || s.Time > p.End+1e9 {
					t.Fatalf("sample %d: time %d outside recording [%d, %d]", i, s.Time, p.Start, p.End)
				}
			}
		})
	}
}

// family groups sample types the way jfr-parser's golden files do: one
// golden profile per family, with one or two values per stack.
type family struct {
	match string               // substring of the golden file name
	types []profile.SampleType // our types, in the golden's value order
}

var families = []family{
	{"process_cpu", []profile.SampleType{profile.TypeCPU}},
	{"wall_wall", []profile.SampleType{profile.TypeWall}},
	{"memory_alloc", []profile.SampleType{profile.TypeAllocObjects, profile.TypeAllocBytes}},
	{"contentions__count delay", []profile.SampleType{profile.TypeLockCount, profile.TypeLockDelay}},
	{"memory_live__count", []profile.SampleType{profile.TypeLiveObjects}},
}

// goldenFrame renders a frame as jfr-parser's collapsed goldens do, except
// that sparkprof writes class names with dots ("java.lang.Thread.run:833"
// where the golden has "java/lang/Thread.run:833"): golden stacks are
// compared after replacing every "/" by ".". Native frames print with their
// library (Frame.File, possibly empty) as class (".no_Java_frame:0").
func goldenFrame(f profile.Frame) string {
	// jfr-parser prints line numbers unsigned: -1 (unknown) is 4294967295.
	if f.Kind == profile.KindJava {
		return fmt.Sprintf("%s:%d", f.Name, uint32(f.Line))
	}
	return fmt.Sprintf("%s.%s:%d", f.File, f.Name, uint32(f.Line))
}

// collapse renders the samples of the family's types as sorted collapsed
// lines "a;b;c [v1 v2]", summed per stack, dropping all-zero stacks.
func collapse(p *profile.Profile, fam family) map[string][]int64 {
	idx := map[profile.TypeID]int{}
	for i, t := range fam.types {
		if id, ok := p.TypeIndex(t); ok {
			idx[id] = i
		}
	}
	sums := map[string][]int64{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		i, ok := idx[s.Type]
		if !ok {
			continue
		}
		buf = p.Stack(s.Stack, buf[:0])
		names := make([]string, len(buf))
		for j, f := range buf {
			names[j] = goldenFrame(p.Frames[f])
		}
		k := strings.ReplaceAll(strings.Join(names, ";"), "/", ".")
		if sums[k] == nil {
			sums[k] = make([]int64, len(fam.types))
		}
		sums[k][i] += s.Value
	}
	return sums
}

func renderSums(sums map[string][]int64) string {
	var lines []string
	for k, v := range sums {
		zero := true
		for _, x := range v {
			zero = zero && x == 0
		}
		if !zero {
			lines = append(lines, fmt.Sprintf("%s %v", k, v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// goldenSums adds up the golden collapsed files of one recording and family.
// sparkprof has one alloc and one lock family where jfr-parser splits them
// by event (in/outside TLAB, monitor/park), so their goldens are summed.
func goldenSums(t *testing.T, name string, fam family, tps int64) (map[string][]int64, int) {
	dir := corpus.Path(t, "jfr", "golden")
	files, err := filepath.Glob(filepath.Join(dir, name+"_[0-9]_*_expected_collapsed.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string][]int64{}
	n := 0
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), fam.match) {
			continue
		}
		n++
		for _, line := range strings.Split(string(corpus.Read(t, "jfr", "golden", filepath.Base(f))), "\n") {
			if line == "" {
				continue
			}
			i := strings.LastIndex(line, " [")
			if i < 0 {
				t.Fatalf("%s: bad line %q", f, line)
			}
			fields := strings.Fields(strings.Trim(line[i+1:], "[]"))
			k := strings.ReplaceAll(line[:i], "/", ".")
			if sums[k] == nil {
				sums[k] = make([]int64, len(fam.types))
			}
			for j := range fam.types {
				var v int64
				if _, err := fmt.Sscan(fields[j], &v); err != nil {
					t.Fatalf("%s: bad value in %q", f, line)
				}
				if fam.types[j] == profile.TypeLockDelay {
					// jfr-parser keeps durations in ticks; sparkprof
					// converts each to nanoseconds (rounding down).
					v = v * 1e9 / tps
				}
				sums[k][j] += v
			}
		}
	}
	return sums, n
}

func TestGoldens(t *testing.T) {
	checked := 0
	for _, name := range corpusFiles {
		p := decodeCorpus(t, name)
		for _, fam := range families {
			h, err := readChunkHeader(corpus.Read(t, "jfr", name+".jfr.gz"))
			if err != nil {
				t.Fatal(err)
			}
			want, n := goldenSums(t, name, fam, h.ticksPerSecond)
			if n == 0 {
				// Intended difference: jfr-parser drops the sleeping
				// ExecutionSamples of async-profiler 2.x run with cpu and
				// a "wall" interval; we keep them as wall samples.
				if name == "async-profiler" && fam.match == "wall_wall" {
					continue
				}
				if got := collapse(p, fam); len(got) != 0 {
					t.Errorf("%s %s: no golden, yet decoded %d stacks", name, fam.match, len(got))
				}
				continue
			}
			checked += n
			t.Run(name+"/"+fam.match, func(t *testing.T) {
				gotSums := collapse(p, fam)
				// Lock delays are converted from ticks per event, so each
				// event may round down by up to 1 ns against the golden's
				// converted sum: accept that, then compare exactly.
				for k, w := range want {
					if g := gotSums[k]; g != nil && len(w) == 2 && fam.types[1] == profile.TypeLockDelay &&
						g[0] == w[0] && w[1]-g[1] >= 0 && w[1]-g[1] <= w[0] {
						g[1] = w[1]
					}
				}
				got, want := renderSums(gotSums), renderSums(want)
				if got != want {
					gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
					for i := 0; i < len(gl) && i < len(wl); i++ {
						if gl[i] != wl[i] {
							j := 0
							for j < len(gl[i]) && j < len(wl[i]) && gl[i][j] == wl[i][j] {
								j++
							}
							j = max(0, j-80)
							t.Fatalf("line %d, column %d:\n got ...%s\nwant ...%s\n(%d vs %d lines)", i+1, j, gl[i][j:], wl[i][j:], len(gl), len(wl))
						}
					}
					t.Fatalf("got %d lines, want %d", len(gl), len(wl))
				}
			})
		}
	}
	if checked != 18 {
		t.Errorf("checked %d golden files, want all 18", checked)
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{
		{"FLR\x00\x00\x02", true},
		{"FLR\x00", true},
		{"FLR", false},
		{"FLRX", false},
		{"", false},
		{"\x1f\x8b", false},
	} {
		if got := Sniff([]byte(tc.head)); got != tc.want {
			t.Errorf("Sniff(%q) = %v, want %v", tc.head, got, tc.want)
		}
	}
}

// A recording of three chunks splits into three that decode to its samples,
// and a cut one fails at the chunk cut.
func TestChunks(t *testing.T) {
	data := corpus.Read(t, "jfr", "FastSlow_2024_01_16_180855.jfr.gz")
	chunks, err := Chunks(data)
	if err != nil || len(chunks) != 3 {
		t.Fatalf("Chunks: %d chunks, %v; want 3", len(chunks), err)
	}
	var samples int
	for i, c := range chunks {
		p, err := Decode(c, "chunk")
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		samples += len(p.Samples)
	}
	if want := len(decodeCorpus(t, "FastSlow_2024_01_16_180855").Samples); samples != want {
		t.Errorf("the chunks decode to %d samples, the recording to %d", samples, want)
	}
	cut := len(chunks[0]) + len(chunks[1]) + 100
	if got, err := Chunks(data[:cut]); err == nil || len(got) != 2 {
		t.Errorf("cut inside the third chunk: %d chunks, error %v; want 2 and an error", len(got), err)
	}
}

func TestDecodeErrors(t *testing.T) {
	dump1 := corpus.Read(t, "jfr", "dump1.jfr.gz")
	bigSize := bytes.Clone(dump1[:chunkHeaderSize])
	copy(bigSize[8:16], []byte{0, 0, 0, 1, 0, 0, 0, 0})
	for _, tc := range []struct {
		name, data string
		offset     int64
		msg        string
	}{
		{"empty", "", 0, "not a JFR recording"},
		{"not jfr", "hello world", 0, "not a JFR recording"},
		{"short header", "FLR\x00\x00\x02\x00\x00", 0, "truncated chunk header"},
		{"truncated", string(dump1[:len(dump1)/2]), 0, "truncated to"},
		{"absurd size", string(bigSize), 0, "out of range"},
		{"garbage second chunk", string(dump1) + "FLR\x00garbage", int64(len(dump1)), "truncated chunk header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Decode([]byte(tc.data), "x.jfr")
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *profile.DecodeError", err)
			}
			if de.Source != "x.jfr" || de.Offset != tc.offset || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v (offset %d), want offset %d and %q", err, de.Offset, tc.offset, tc.msg)
			}
			if p != nil && tc.name == "garbage second chunk" && len(p.Samples) == 0 {
				t.Error("samples of the good first chunk were dropped")
			}
		})
	}
}

// TestCorruptedChunk flips bytes in the middle of a chunk: decoding must
// return an error or a profile, never panic.
func TestCorruptedChunk(t *testing.T) {
	data := corpus.Read(t, "jfr", "dump1.jfr.gz")
	for _, off := range []int{chunkHeaderSize, 100, len(data) / 3, len(data) / 2, len(data) - 10} {
		b := bytes.Clone(data)
		for i := off; i < off+8 && i < len(b); i++ {
			b[i] ^= 0xff
		}
		_, _ = Decode(b, "x.jfr") // must not panic
	}
}

func TestLabels(t *testing.T) {
	data := corpus.Read(t, "jfr", "dump1.jfr.gz")
	labels := corpus.Read(t, "jfr", "dump1.labels.pb.gz")
	p, err := DecodeWithOptions(data, "dump1.jfr", Options{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	withLabel := 0
	for _, s := range p.Samples {
		if v := p.Label(s, profile.LabelThreadName); v != "" {
			if !strings.HasPrefix(v, "pool-2-thread-") {
				t.Fatalf("thread_name = %q, want pool-2-thread-N", v)
			}
			withLabel++
		}
	}
	if withLabel == 0 {
		t.Fatal("no sample got a thread_name label from the labels snapshot")
	}
	if _, err := DecodeWithOptions(data, "dump1.jfr", Options{Labels: []byte{0xff, 0xff}}); err == nil {
		t.Error("invalid labels protobuf accepted")
	}
}

// TestThreadsAndFrames checks thread names, states and frame kinds.
func TestThreadsAndFrames(t *testing.T) {
	p := decodeCorpus(t, "wall")
	kinds := map[profile.FrameKind]int{}
	for _, f := range p.Frames {
		kinds[f.Kind]++
	}
	if kinds[profile.KindJava] == 0 || kinds[profile.KindNative] == 0 {
		t.Errorf("frame kinds %v, want java and native frames", kinds)
	}
	states := map[profile.ThreadState]int{}
	named := 0
	for _, s := range p.Samples {
		states[s.State]++
		if p.Threads[s.Thread].Name != "" {
			named++
		}
	}
	if states[profile.StateRunnable] == 0 || states[profile.StateSleeping] == 0 {
		t.Errorf("states %v, want runnable and sleeping samples", states)
	}
	if named != len(p.Samples) {
		t.Errorf("%d of %d samples have a thread name", named, len(p.Samples))
	}
}

// smallChunk returns the first chunk of a recording with only its first n
// events besides the metadata and constant pools, the header's size and
// offsets and the pools' chain of offsets moved to match: a whole, valid
// chunk small enough for fuzzing to explore past the header.
func smallChunk(t testing.TB, data []byte, n int) []byte {
	h, err := readChunkHeader(data)
	if err != nil {
		t.Fatal(err)
	}
	chunk := data[:h.size]
	out := bytes.Clone(chunk[:chunkHeaderSize])
	moved := map[int64]int64{} // old offset → new, of the events kept
	var pools []int64
	for pos, kept := int64(chunkHeaderSize), 0; pos < h.size; {
		r := &reader{b: chunk, pos: int(pos)}
		size, typ := int64(r.varint()), r.varint()
		if r.err != nil || size <= 0 {
			t.Fatalf("event at %d: %v", pos, r.err)
		}
		if typ <= 1 || kept < n {
			moved[pos] = int64(len(out))
			out = append(out, chunk[pos:pos+size]...)
			if typ == 1 {
				pools = append(pools, pos)
			} else if typ > 1 {
				kept++
			}
		}
		pos += size
	}
	for _, old := range pools {
		at := moved[old]
		r := &reader{b: out, pos: int(at)}
		for range 4 { // size, type, start, duration
			r.varint()
		}
		p := r.pos
		if delta := int64(r.varint()); delta != 0 {
			if r.pos-p != 9 {
				t.Fatalf("pool at %d: a negative delta in %d bytes, want 9", old, r.pos-p)
			}
			v := uint64(moved[old+delta] - at) // negative: nine bytes again
			for i := range 8 {
				out[p+i] = byte(v>>(7*i))&0x7f | 0x80
			}
			out[p+8] = byte(v >> 56)
		}
	}
	be := binary.BigEndian
	be.PutUint64(out[8:], uint64(len(out)))
	be.PutUint64(out[16:], uint64(moved[h.cpOffset]))
	be.PutUint64(out[24:], uint64(moved[h.metaOffset]))
	return out
}

// TestSmallChunk: the fuzzing seeds smallChunk makes decode, with samples.
func TestSmallChunk(t *testing.T) {
	for _, name := range corpusFiles {
		data := corpus.Read(t, "jfr", name+".jfr.gz")
		small := smallChunk(t, data, 300)
		p, err := Decode(small, name)
		if err != nil {
			t.Errorf("%s cut to %d bytes: %v", name, len(small), err)
			continue
		}
		if len(p.Samples) == 0 {
			t.Errorf("%s cut to %d bytes: no samples", name, len(small))
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(tinyRecording())
	for _, name := range corpusFiles {
		data := corpus.Read(f, "jfr", name+".jfr.gz")
		if small := smallChunk(f, data, 300); len(small) < 160<<10 {
			f.Add(small)
		}
		f.Add(data[:min(len(data), 4096)])
		f.Add(data[:min(len(data), 200)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data, "fuzz.jfr")
		if err != nil {
			var de *profile.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *profile.DecodeError", err)
			}
		}
		if p == nil && err == nil {
			t.Fatal("nil profile without error")
		}
		if p != nil {
			if err := distinct(p); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// distinct reports a frame or a stack p holds twice, or a stack before its
// parent: a profile holds each once, parents first.
func distinct(p *profile.Profile) error {
	frames := make(map[profile.Frame]bool, len(p.Frames))
	for _, f := range p.Frames {
		if frames[f] {
			return fmt.Errorf("frame %+v twice", f)
		}
		frames[f] = true
	}
	stacks := make(map[[2]uint32]bool, p.NumStacks())
	for s := profile.StackID(1); int(s) < p.NumStacks(); s++ {
		k := [2]uint32{uint32(p.Parent(s)), uint32(p.Leaf(s))}
		if stacks[k] || p.Parent(s) >= s {
			return fmt.Errorf("stack %d (parent %d, frame %d) twice or before its parent", s, k[0], k[1])
		}
		stacks[k] = true
	}
	return nil
}

// Every corpus recording decodes to distinct frames and stacks, and so does
// each twice over (two chunks: every frame and stack of the second is the
// first's again, under the second chunk's own keys).
func TestDistinctStacks(t *testing.T) {
	for _, name := range corpusFiles {
		data := corpus.Read(t, "jfr", name+".jfr.gz")
		once, err := Decode(data, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		twice, err := Decode(slices.Concat(data, data), name)
		if err != nil {
			t.Fatalf("%s twice: %v", name, err)
		}
		for _, p := range []*profile.Profile{once, twice} {
			if err := distinct(p); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		if len(twice.Samples) != 2*len(once.Samples) || twice.NumStacks() != once.NumStacks() || len(twice.Frames) != len(once.Frames) {
			t.Errorf("%s twice: %d samples, %d stacks, %d frames; want %d, %d, %d", name,
				len(twice.Samples), twice.NumStacks(), len(twice.Frames), 2*len(once.Samples), once.NumStacks(), len(once.Frames))
		}
	}
}

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

// BenchmarkDecodeDump1 decodes the async-profiler recording of the server's
// labelled ingest benchmark: 2,188 samples of 2,148 distinct deep traces.
func BenchmarkDecodeDump1(b *testing.B) { benchmarkDecode(b, "dump1") }

// TestAsyncProfilerWallBesideCPU checks that async-profiler 2.x's sleeping
// ExecutionSamples, written because it ran with wall=200ms beside cpu,
// become wall samples of that period: 199,549 of the 199,661 samples.
func TestAsyncProfilerWallBesideCPU(t *testing.T) {
	p := decodeCorpus(t, "async-profiler")
	id, ok := p.TypeIndex(profile.TypeWall)
	if !ok {
		t.Fatalf("no wall samples; types %v", p.Types)
	}
	var n int
	for _, s := range p.Samples {
		if s.Type == id {
			n++
			if s.Value != 200e6 || s.State != profile.StateSleeping {
				t.Fatalf("wall sample value %d state %v, want 200 ms sleeping", s.Value, s.State)
			}
		}
	}
	if n != 199549 {
		t.Errorf("%d wall samples, want 199,549", n)
	}
}

// Every allocation sample names the allocated class, in Java's dotted form.
func TestAllocClass(t *testing.T) {
	p := decodeCorpus(t, "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0")
	bytesType, ok := p.TypeIndex(profile.TypeAllocBytes)
	if !ok {
		t.Fatal("no alloc_bytes samples")
	}
	byClass := map[string]int64{}
	n := 0
	for _, s := range p.Samples {
		if s.Type != bytesType {
			continue
		}
		n++
		c := p.Label(s, profile.LabelAllocClass)
		if c == "" || strings.Contains(c, "/") {
			t.Fatalf("sample %d: alloc_class %q", n, c)
		}
		byClass[c] += s.Value
	}
	if len(byClass) < 10 || byClass["byte[]"]+byClass["[B"] == 0 {
		t.Errorf("%d classes over %d samples; want many, with byte arrays among them: %v", len(byClass), n, byClass)
	}
}

// TestConcurrentDecode decodes the corpus from several goroutines at once,
// as the server does with uploads: pooled decoders and the shared metadata
// cache give each the same profile as a decode alone.
func TestConcurrentDecode(t *testing.T) {
	want := map[string]string{}
	data := map[string][]byte{}
	// The frame names too: decoders keep class and frame names between
	// recordings, and here each decodes the files in another order.
	summary := func(p *profile.Profile) string {
		names := sha256.New()
		for _, f := range p.Frames {
			fmt.Fprintf(names, "%s\x00%s\x00", f.Name, f.File)
		}
		return fmt.Sprint(len(p.Samples), len(p.Frames), p.NumStacks(), p.NumLabelSets(), len(p.Threads), p.Start, p.End, names.Sum(nil))
	}
	for _, name := range corpusFiles {
		data[name] = corpus.Read(t, "jfr", name+".jfr.gz")
		want[name] = summary(decodeCorpus(t, name))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range corpusFiles {
				name := corpusFiles[(i+g)%len(corpusFiles)]
				p, err := Decode(data[name], name)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				if got := summary(p); got != want[name] {
					t.Errorf("%s decoded concurrently: %s, alone: %s", name, got, want[name])
				}
			}
		}()
	}
	wg.Wait()
}

// Two recordings of one async-profiler version (dump1, dump2: two JVMs'
// Pyroscope uploads) declare the same types in metadata events whose
// headers (start time, duration) differ, as every chunk's do: the second
// finds the first's metadata in the cache. Another version's (cortex) is
// its own.
func TestMetadataCacheAcrossChunks(t *testing.T) {
	load := func(name string) (*metadata, []byte) {
		data := corpus.Read(t, "jfr", name+".jfr.gz")
		h, err := readChunkHeader(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		md, err := loadMetadata(data[:h.size], h.metaOffset)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := &reader{}
		r.at(data, int(h.metaOffset))
		return md, data[h.metaOffset : h.metaOffset+int64(r.varint())]
	}
	md1, raw1 := load("dump1")
	md2, raw2 := load("dump2")
	other, _ := load("cortex-dev-01__kafka-0__cpu_lock0_alloc0__0")
	if bytes.Equal(raw1, raw2) {
		t.Fatal("dump1 and dump2 have the same metadata event: the test needs two that differ in their headers")
	}
	if md1 != md2 {
		t.Error("dump2's metadata was read again, want dump1's from the cache")
	}
	if other == md1 {
		t.Error("cortex got dump1's metadata")
	}
}

// TestWholeChunks finds the whole chunks of a recording being copied, as
// Spark's profiler plugin copies it: a chunk or header cut short, and a
// chunk whose header does not declare its size yet, wait; a damaged header
// is an error naming its offset.
func TestWholeChunks(t *testing.T) {
	one := corpus.Read(t, "jfr", "dump1.jfr.gz")
	two := append(slices.Clone(one), corpus.Read(t, "jfr", "dump2.jfr.gz")...)
	unsized := slices.Clone(two[len(one) : len(one)+100])
	binary.BigEndian.PutUint64(unsized[8:], 0)
	badMagic := slices.Clone(two)
	copy(badMagic[len(one):], "XLR\x00")
	tests := []struct {
		name    string
		data    []byte
		want    int
		wantErr string
	}{
		{"empty", nil, 0, ""},
		{"one chunk", one, len(one), ""},
		{"two chunks", two, len(two), ""},
		{"the second cut short", two[:len(two)-1], len(one), ""},
		{"the second's header cut short", two[:len(one)+40], len(one), ""},
		{"the second's size not written yet", append(slices.Clone(one), unsized...), len(one), ""},
		{"a damaged header", badMagic, len(one), "chunk at offset 330509: bad chunk magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := WholeChunks(tt.data)
			if n != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("WholeChunks = %d, %v; want %d, %q", n, err, tt.want, tt.wantErr)
			}
		})
	}
}

func FuzzWholeChunks(f *testing.F) {
	f.Add(tinyRecording())
	f.Add(corpus.Read(f, "jfr", "dump1.jfr.gz")[:4096])
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := WholeChunks(data)
		if n < 0 || n > len(data) {
			t.Fatalf("WholeChunks = %d of %d bytes", n, len(data))
		}
		chunks, cerr := Chunks(data[:n])
		if cerr != nil {
			t.Fatalf("the whole chunks (%d bytes, err %v) do not split: %v", n, err, cerr)
		}
		total := 0
		for _, c := range chunks {
			total += len(c)
		}
		if total != n {
			t.Fatalf("chunks of %d bytes, want %d", total, n)
		}
	})
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
