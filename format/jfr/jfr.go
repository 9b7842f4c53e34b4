// Package jfr decodes Java Flight Recorder recordings, as written by the JDK
// and by async-profiler, into sparkprof profiles.
//
// A recording is a sequence of self-contained chunks, each with its own
// metadata (the types of its events and constants), constant pools (stack
// traces, methods, classes, symbols, threads) and events. Each chunk is
// decoded on its own, so that a damaged chunk costs only itself and errors
// name the byte offset of the chunk they occurred in.
package jfr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"

	"github.com/sparkprof/sparkprof/internal/hashtab"
	"github.com/sparkprof/sparkprof/profile"
)

// magic starts every JFR chunk.
var magic = []byte("FLR\x00")

const (
	// chunkHeaderSize is the fixed size of a chunk header: magic, version,
	// then seven 64-bit fields and a 32-bit feature mask.
	chunkHeaderSize = 68
	// MaxChunkSize bounds the size a chunk header may declare. The JDK
	// rotates chunks long before this; a larger value means corrupt input.
	MaxChunkSize = 1 << 30
	// compressedInts is the chunk feature flag of compressed integers,
	// which the JDK (11 and later) and async-profiler always set.
	compressedInts = 1
)

// Sniff reports whether head (the first bytes of decompressed data) is a JFR
// recording ("FLR\0" magic).
func Sniff(head []byte) bool { return bytes.HasPrefix(head, magic) }

// Chunks splits a recording into its chunks, each a recording of its own:
// the JDK starts one at each rotation, and the sparkprof agent writes one per
// window it uploads.
func Chunks(data []byte) ([][]byte, error) {
	var chunks [][]byte
	for off := 0; off < len(data); {
		h, err := readChunkHeader(data[off:])
		if err != nil {
			return chunks, fmt.Errorf("chunk at offset %d: %w", off, err)
		}
		chunks = append(chunks, data[off:off+int(h.size)])
		off += int(h.size)
	}
	return chunks, nil
}

// Redate returns a copy of the recording data whose every chunk starts at
// start (Unix ns), its events moved with it: a recording sent again as a
// later window, as a load test or benchmark sends one.
func Redate(data []byte, start int64) ([]byte, error) {
	chunks, err := Chunks(data)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(data)
	off := 0
	for _, c := range chunks {
		binary.BigEndian.PutUint64(out[off+32:], uint64(start))
		off += len(c)
	}
	return out, nil
}

// WholeChunks returns how many leading bytes of data are whole chunks. A
// recording still being written or copied (Spark's profiler plugin copies
// its recording to spark.profiler.dfsDir as it grows) ends in a chunk cut
// short, or one whose header does not declare its size yet: that tail is
// left for later. A damaged chunk header is an error naming its offset.
func WholeChunks(data []byte) (int, error) {
	off := 0
	for len(data)-off >= chunkHeaderSize {
		rest := data[off:]
		size := int64(binary.BigEndian.Uint64(rest[8:]))
		if bytes.HasPrefix(rest, magic) && (size == 0 || size > int64(len(rest)) && size <= MaxChunkSize) {
			break // not finished, or not all here yet
		}
		if _, err := readChunkHeader(rest); err != nil {
			return off, fmt.Errorf("chunk at offset %d: %w", off, err)
		}
		off += int(size)
	}
	return off, nil
}

// Options control decoding.
type Options struct {
	// Labels is a serialized Pyroscope LabelsSnapshot protobuf (as uploaded
	// next to a JFR by the Pyroscope Java agent, decompressed). When set,
	// each sample's contextId is mapped to the labels of that context.
	Labels []byte
}

// Decode reads a whole JFR recording (one or many concatenated chunks) into
// a profile.
func Decode(data []byte, source string) (*profile.Profile, error) {
	return DecodeWithOptions(data, source, Options{})
}

// DecodeWithOptions is Decode with options. On damaged input it returns the
// samples decoded so far together with a *profile.DecodeError.
func DecodeWithOptions(data []byte, source string, opts Options) (*profile.Profile, error) {
	d := getDecoder()
	defer d.release()
	d.start(source)
	if len(opts.Labels) > 0 {
		snap, err := parseSnapshot(opts.Labels)
		if err != nil {
			return nil, &profile.DecodeError{Source: source, Offset: -1, Field: "labels", Msg: "invalid LabelsSnapshot protobuf", Err: err}
		}
		d.labels = snap
		d.ctxLabels = make(map[uint64]profile.LabelSetID, snap.contexts.n())
		// The contexts' label sets, which the profile keeps, share one
		// array of the recording's own.
		d.labelBuf = make(profile.Labels, 0, len(snap.pairs))
		// A set per context, and as many again once the labels of the
		// samples' thread names are merged in (format.Decode).
		d.p.GrowLabelSets(2 * snap.contexts.n())
	}
	err := d.decode(data)
	p := d.p
	// The samples were decoded into the decoder's buffer: appending tens
	// of thousands of samples to a new slice grows it a dozen times, and
	// on a virtual machine the fresh pages of each growth cost more than
	// copying the samples out once at their size.
	d.sampleBuf = p.Samples[:0]
	if len(p.Samples) == 0 {
		p.Samples = nil
	} else {
		p.Samples = slices.Clone(p.Samples)
	}
	return p, err
}

// idle holds decoders between recordings, with their buffers and indexes,
// one for each recording decoded at once. It is not a sync.Pool: a pool is
// emptied by every second garbage collection, which a server runs every
// few uploads, so most uploads were decoded by a new decoder growing its
// buffers and indexes again (a megabyte of pages for dump1, 0.6 ms).
var idle = make(chan *decoder, runtime.GOMAXPROCS(0))

// getDecoder returns an idle decoder or a new one.
func getDecoder() *decoder {
	select {
	case d := <-idle:
		return d
	default:
		return new(decoder)
	}
}

// chunkHeader is the part of a chunk header the decoder needs.
type chunkHeader struct {
	size           int64
	cpOffset       int64
	metaOffset     int64
	features       uint32
	startNanos     int64
	durationNanos  int64
	startTicks     int64
	ticksPerSecond int64
}

// readChunkHeader validates the chunk header at the start of b.
func readChunkHeader(b []byte) (chunkHeader, error) {
	var h chunkHeader
	if len(b) < chunkHeaderSize {
		return h, fmt.Errorf("truncated chunk header: %d of %d bytes", len(b), chunkHeaderSize)
	}
	if !bytes.HasPrefix(b, magic) {
		return h, fmt.Errorf("bad chunk magic %q, want %q", b[:4], magic)
	}
	be := binary.BigEndian
	if major := be.Uint16(b[4:]); major != 1 && major != 2 {
		return h, fmt.Errorf("unsupported JFR version %d.%d, want 1.x or 2.x", major, be.Uint16(b[6:]))
	}
	h.size = int64(be.Uint64(b[8:]))
	h.cpOffset = int64(be.Uint64(b[16:]))
	h.metaOffset = int64(be.Uint64(b[24:]))
	h.startNanos = int64(be.Uint64(b[32:]))
	h.durationNanos = int64(be.Uint64(b[40:]))
	h.startTicks = int64(be.Uint64(b[48:]))
	h.ticksPerSecond = int64(be.Uint64(b[56:]))
	h.features = be.Uint32(b[64:])
	switch {
	case h.size < chunkHeaderSize || h.size > MaxChunkSize:
		return h, fmt.Errorf("chunk size %d out of range [%d, %d]", h.size, chunkHeaderSize, MaxChunkSize)
	case h.size > int64(len(b)):
		return h, fmt.Errorf("chunk of %d bytes truncated to %d", h.size, len(b))
	case h.metaOffset < chunkHeaderSize || h.metaOffset >= h.size:
		return h, fmt.Errorf("metadata offset %d outside chunk of %d bytes", h.metaOffset, h.size)
	case h.cpOffset < chunkHeaderSize || h.cpOffset >= h.size:
		return h, fmt.Errorf("constant pool offset %d outside chunk of %d bytes", h.cpOffset, h.size)
	case h.ticksPerSecond <= 0:
		return h, fmt.Errorf("ticks per second %d, want > 0", h.ticksPerSecond)
	case h.features&compressedInts == 0:
		return h, fmt.Errorf("chunk without compressed integers (JFR %d.%d, written by JDK 9 or 10?): record with JDK 11 or later", be.Uint16(b[4:]), be.Uint16(b[6:]))
	}
	return h, nil
}

// time converts a tick count of this chunk to Unix nanoseconds.
func (h *chunkHeader) time(ticks uint64) int64 {
	dt := int64(ticks) - h.startTicks
	// Split to avoid overflowing int64 on long recordings at high tick rates.
	sec, rem := dt/h.ticksPerSecond, dt%h.ticksPerSecond
	return h.startNanos + sec*1e9 + rem*1e9/h.ticksPerSecond
}

// decoder holds the state of one recording's decoding, and buffers and
// indexes reused by the next recording.
type decoder struct {
	p         *profile.Profile
	source    string
	sampleBuf []profile.Sample // kept between recordings

	labels    *snapshot
	labelBuf  profile.Labels // the contexts' labels, for this recording alone
	ctxLabels map[uint64]profile.LabelSetID
	allocSets map[allocKey]profile.LabelSetID
	// classLabels holds the label sets of allocations without a context,
	// by class key.
	classLabels index

	counts map[string]int // events read per JFR event type, for tests
	series map[string]int // index in p.Series by name and label
	types  [numKinds]int  // profile type id + 1 by sample kind

	wallMode bool // async-profiler ran in wall mode: ExecutionSamples are wall samples
	interval int64
	// wallInterval is async-profiler's wall sampling period when it ran
	// wall-clock sampling beside another event (its "wall" option).
	wallInterval int64

	// per chunk
	chunk       []byte
	hdr         chunkHeader
	md          *metadata
	r, cr       reader // events and pool indexing; constants
	pools       [numPoolKinds]index
	poolRecs    [numPoolKinds]record
	recs        [numEventKinds]record
	frameRec    record
	classCounts []int

	stacks  index // stack trace key → profile stack
	threads index // thread key → profile thread
	methods index // method key → position in methodInfos
	classes index // class key → position in classInfos
	states  index // thread state key → position in stateInfos

	methodInfos []methodInfo
	classInfos  []classInfo
	nameBuf     []byte
	// classNames and frameNames are kept between recordings: every upload
	// of a JVM names mostly the same classes and methods, under keys that
	// differ per chunk. They are keyed by content, the class name symbol
	// and the frame name.
	classNames map[string]classInfo
	frameNames map[string]string
	stateInfos []stateInfo
	gcNames    map[uint64]string // GC name key → name
	// frames holds the profile frames of methods seen at more than
	// maxLines lines.
	frames map[frameRef]profile.FrameID
	trace  []frameRef // the trace being converted, leaf first
	// traceFrames holds the frames of the chunk's stack traces, read
	// while indexing the pools; traceSpans where each trace's are.
	traceFrames []frameRef
	traceSpans  []traceSpan
	// prefixes are the profile stacks of the trace prefixes converted so
	// far; hashes the keys of d.trace's prefixes, root first.
	prefixes prefixTable
	hashes   []prefixKey
	// fresh: the profile's stacks all come from the chunk's traces, so a
	// stack past a trace's longest converted prefix is new unless a merged
	// frame (one made of two JFR frames) is on its path, and is appended
	// without a lookup (see push). merged marks frames by id, below marks
	// stacks by id that have a merged frame on their path, and belowIndex
	// finds those by parent<<32|frame.
	fresh      bool
	merges     int
	merged     []bool
	below      []bool
	belowIndex hashtab.Table
	// framesPerMethod and stacksPerTrace are the profile frames per JFR
	// method and new profile stacks per JFR trace of the last chunk read,
	// to size the next chunk's tables; 0 before the first.
	framesPerMethod, stacksPerTrace float64
}

// frameRef is a frame as a JFR stack trace holds it.
type frameRef struct {
	method uint64
	line   uint32
}

// methodInfo is a resolved method: what its frames are named, and the
// frames made of it so far.
type methodInfo struct {
	ok    bool // the chunk has the method
	name  string
	file  string
	kind  profile.FrameKind
	lines []lineFrame
}

// stateInfo is a resolved thread state.
type stateInfo struct {
	state              profile.ThreadState
	sleeping, runnable bool // async-profiler's STATE_SLEEPING, STATE_RUNNABLE
}

// start readies d for a recording.
func (d *decoder) start(source string) {
	d.p = profile.New()
	d.p.Source = source
	d.p.Samples = d.sampleBuf[:0]
	d.source = source
	if d.counts == nil {
		d.counts = make(map[string]int)
		d.series = make(map[string]int)
		d.frames = make(map[frameRef]profile.FrameID)
		d.gcNames = make(map[uint64]string)
		d.classNames = make(map[string]classInfo)
		d.frameNames = make(map[string]string)
	}
	d.wallMode, d.interval, d.wallInterval = false, 0, 0
	d.types = [numKinds]int{}
}

// release drops what d refers to of the recording and keeps d for the next
// one, if fewer than idle holds are kept.
func (d *decoder) release() {
	d.p, d.labels, d.ctxLabels, d.allocSets, d.labelBuf = nil, nil, nil, nil, nil
	clear(d.counts)
	clear(d.series)
	d.chunk, d.md = nil, nil
	d.r, d.cr = reader{}, reader{}
	d.recs = [numEventKinds]record{}
	d.poolRecs = [numPoolKinds]record{}
	d.frameRec = record{}
	// Keep the buffers of ordinary uploads, not those of a rare huge one.
	if cap(d.sampleBuf) > maxKept {
		d.sampleBuf = nil
	}
	if cap(d.traceFrames) > maxKept {
		d.traceFrames, d.traceSpans = nil, nil
	}
	if cap(d.prefixes.slots) > maxKept {
		d.prefixes = prefixTable{}
	}
	if cap(d.below) > maxKept {
		d.merged, d.below = nil, nil
	}
	select {
	case idle <- d:
	default:
	}
}

// maxKept bounds the samples and frames an idle decoder's buffers keep
// (10 MiB of samples): a window of a busy JVM has tens of thousands.
const maxKept = 1 << 18

func (d *decoder) errorf(off int64, err error, format string, args ...any) error {
	return &profile.DecodeError{Source: d.source, Offset: off, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (d *decoder) decode(data []byte) error {
	if !Sniff(data) {
		return d.errorf(0, nil, "not a JFR recording: want magic %q", magic)
	}
	for off := int64(0); off < int64(len(data)); {
		h, err := readChunkHeader(data[off:])
		if err != nil {
			return d.errorf(off, err, "chunk header")
		}
		start, end := h.startNanos, h.startNanos+h.durationNanos
		if d.p.Start == 0 || start < d.p.Start {
			d.p.Start = start
		}
		if end > d.p.End {
			d.p.End = end
		}
		if err := d.decodeChunk(data[off:off+h.size], h); err != nil {
			return d.errorf(off, err, "chunk")
		}
		off += h.size
	}
	return nil
}

// decodeChunk decodes one chunk.
func (d *decoder) decodeChunk(b []byte, h chunkHeader) error {
	md, err := loadMetadata(b, h.metaOffset)
	if err != nil {
		return err
	}
	d.chunk, d.hdr, d.md = b, h, md
	// Records keep values of the previous chunk's classes in roles this
	// chunk's classes may lack.
	d.recs = [numEventKinds]record{}
	d.poolRecs = [numPoolKinds]record{}
	d.frameRec = record{}
	d.classCounts = append(d.classCounts[:0], make([]int, len(md.classes))...)
	for _, x := range []*index{&d.stacks, &d.threads, &d.methods, &d.classes, &d.states, &d.classLabels} {
		x.reset(len(b))
	}
	d.methodInfos, d.classInfos, d.stateInfos = d.methodInfos[:0], d.classInfos[:0], d.stateInfos[:0]
	clear(d.frames) // method keys are per chunk
	clear(d.gcNames)
	clear(d.allocSets) // class keys are per chunk

	if err := d.indexPools(); err != nil {
		return err
	}
	// A chunk's frames are about its methods, and its distinct stacks
	// (trace prefixes) some per trace: as many per method and per trace as
	// the chunk this decoder read last made, since the recordings a server
	// receives are mostly alike (a wrong guess costs a growth or some
	// unused capacity). Growing the tables as they fill instead copies them
	// a few times into fresh pages, and the head keeps what capacity is
	// left.
	framesPer, stacksPer := d.framesPerMethod, d.stacksPerTrace
	if stacksPer == 0 {
		framesPer, stacksPer = 1.25, 4
	}
	methods, traces := d.pools[poolMethod].n, d.pools[poolStackTrace].n
	stacks := int(float64(traces)*stacksPer) + 16
	d.p.Grow(int(float64(methods)*framesPer)+16, stacks)
	d.prefixes.reset(stacks)
	d.fresh, d.merges = d.p.NumStacks() == 1, 0
	d.merged, d.below = d.merged[:0], append(d.below[:0], false)
	d.belowIndex.Reset(maxKept)
	frames0, stacks0 := len(d.p.Frames), d.p.NumStacks()
	err = d.events()
	if methods > 0 && traces > 0 {
		d.framesPerMethod = max(1, float64(len(d.p.Frames)-frames0)/float64(methods))
		d.stacksPerTrace = max(1, float64(d.p.NumStacks()-stacks0)/float64(traces))
	}
	for i, n := range d.classCounts {
		if n > 0 {
			d.counts[md.classes[i].name] += n
		}
	}
	return err
}
