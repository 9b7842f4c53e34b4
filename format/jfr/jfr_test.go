package jfr

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
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

// A recording of three chunks redated: each chunk's samples keep their
// offsets from the chunk's start, which is the new start; the input is
// not changed.
func TestRedate(t *testing.T) {
	data := corpus.Read(t, "jfr", "FastSlow_2024_01_16_180855.jfr.gz")
	orig := bytes.Clone(data)
	const start = int64(1_800_000_000_000_000_000)
	moved, err := Redate(data, start)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, orig) {
		t.Error("Redate changed its input")
	}
	before, _ := Chunks(data)
	after, err := Chunks(moved)
	if err != nil || len(after) != len(before) {
		t.Fatalf("redated: %d chunks, %v; want %d", len(after), err, len(before))
	}
	samples := 0
	for i := range before {
		h0, _ := readChunkHeader(before[i])
		p0, err0 := Decode(before[i], "before")
		p1, err1 := Decode(after[i], "after")
		if err0 != nil || err1 != nil {
			t.Fatalf("chunk %d: %v, %v", i, err0, err1)
		}
		if len(p0.Samples) != len(p1.Samples) {
			t.Fatalf("chunk %d: %d samples redated, %d before", i, len(p1.Samples), len(p0.Samples))
		}
		samples += len(p1.Samples)
		for j := range p0.Samples {
			if got, want := p1.Samples[j].Time-start, p0.Samples[j].Time-h0.startNanos; got != want {
				t.Fatalf("chunk %d, sample %d: %d ns after the new start, was %d after the old", i, j, got, want)
			}
		}
	}
	if samples == 0 {
		t.Fatal("no samples to compare")
	}
	if _, err := Redate(data[:len(data)-1], start); err == nil {
		t.Error("a cut recording redated without an error")
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
