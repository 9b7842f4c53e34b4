package profile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The stored form of a profile is written by hand rather than with gob or
// protobuf: every table and sample field is a column of varints (times as
// deltas), which encodes and decodes several times faster than gob's
// reflection and needs no generated code, and compresses well with zstd.
//
//	"SPPC" version(1)
//	types    n {name unit}
//	frames   n {name file line kind}
//	stacks   n {parent} {frame}          (stack 0, the empty stack, implied)
//	threads  n {id name}                 (thread 0 implied)
//	sets     n {k {name value}}          (set 0 implied)
//	samples  n {stack} {value} {time delta} {set} {thread} {type} {state}
//	labels   k {name value}
//	series   n {name unit labels points n {time delta} {float64 bits}}
//	start end source warnings n {text}
//
// Counts and ids are uvarints, values and times varints, strings a uvarint
// length and bytes. AppendSamples writes the samples line alone, after
// "SPPS" version(1).
const columnsMagic = "SPPC\x01"

// MarshalBinary encodes the profile with all its tables, for storage.
func (p *Profile) MarshalBinary() ([]byte, error) { return p.AppendBinary(nil) }

// AppendBinary appends the encoding MarshalBinary returns to b.
func (p *Profile) AppendBinary(b []byte) ([]byte, error) {
	e := encoder{b: grow(b, 64+len(p.Samples)*12+len(p.Frames)*48)}
	e.b = append(e.b, columnsMagic...)
	e.uint(len(p.Types))
	for _, t := range p.Types {
		e.str(t.Name)
		e.str(t.Unit)
	}
	e.uint(len(p.Frames))
	for _, f := range p.Frames {
		e.str(f.Name)
		e.str(f.File)
		e.int(int64(f.Line))
		e.uint(int(f.Kind))
	}
	e.uint(len(p.stacks) - 1)
	for _, n := range p.stacks[1:] {
		e.uint(int(n.parent))
	}
	for _, n := range p.stacks[1:] {
		e.uint(int(n.frame))
	}
	e.uint(len(p.Threads) - 1)
	for _, t := range p.Threads[1:] {
		e.int(t.ID)
		e.str(t.Name)
	}
	e.uint(len(p.labelSets) - 1)
	for _, ls := range p.labelSets[1:] {
		e.labels(ls)
	}
	e.samples(p.Samples)
	e.labels(p.Labels)
	e.uint(len(p.Series))
	for _, sr := range p.Series {
		e.str(sr.Name)
		e.str(sr.Unit)
		e.labels(sr.Labels)
		e.uint(len(sr.Points))
		var prev int64
		for _, pt := range sr.Points {
			e.int(pt.Time - prev)
			prev = pt.Time
			e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(pt.Value))
		}
	}
	e.int(p.Start)
	e.int(p.End)
	e.str(p.Source)
	e.uint(len(p.Warnings))
	for _, w := range p.Warnings {
		e.str(w)
	}
	return e.b, nil
}

type encoder struct{ b []byte }

func (e *encoder) uint(n int)   { e.b = binary.AppendUvarint(e.b, uint64(n)) }
func (e *encoder) int(n int64)  { e.b = binary.AppendVarint(e.b, n) }
func (e *encoder) str(s string) { e.uint(len(s)); e.b = append(e.b, s...) }

// room returns e's buffer at its full capacity, with room for size more
// bytes after its length, and that length: a column is written there,
// and e.b set to what was written.
func (e *encoder) room(size int) ([]byte, int) {
	e.b = grow(e.b, size)
	return e.b[:cap(e.b)], len(e.b)
}

// putUvarint writes x as binary.PutUvarint does at b[n:], returning the
// position after it. Unlike binary.AppendUvarint it does not check
// capacity per byte.
func putUvarint(b []byte, n int, x uint64) int {
	for x >= 0x80 {
		b[n] = byte(x) | 0x80
		x >>= 7
		n++
	}
	b[n] = byte(x)
	return n + 1
}

// putVarint writes x as binary.PutVarint does at b[n:].
func putVarint(b []byte, n int, x int64) int {
	return putUvarint(b, n, uint64(x<<1)^uint64(x>>63))
}

func (e *encoder) labels(ls Labels) {
	e.uint(len(ls))
	for _, l := range ls {
		e.str(l.Name)
		e.str(l.Value)
	}
}

// samples writes the sample columns, most of a profile: each into room
// made once rather than appended byte by byte.
func (e *encoder) samples(samples []Sample) {
	e.uint(len(samples))
	// Room for the longest varint of a column's type: ids are 32 bits.
	const max32, max64 = binary.MaxVarintLen32, binary.MaxVarintLen64
	b, n := e.room(max32 * len(samples))
	for i := range samples {
		n = putUvarint(b, n, uint64(samples[i].Stack))
	}
	e.b = b[:n]
	b, n = e.room(max64 * len(samples))
	for i := range samples {
		n = putVarint(b, n, samples[i].Value)
	}
	e.b = b[:n]
	b, n = e.room(max64 * len(samples))
	var prev int64
	for i := range samples {
		n = putVarint(b, n, samples[i].Time-prev)
		prev = samples[i].Time
	}
	e.b = b[:n]
	b, n = e.room(max32 * len(samples))
	for i := range samples {
		n = putUvarint(b, n, uint64(samples[i].Labels))
	}
	e.b = b[:n]
	b, n = e.room(max32 * len(samples))
	for i := range samples {
		n = putUvarint(b, n, uint64(samples[i].Thread))
	}
	e.b = b[:n]
	b, n = e.room(2 * len(samples))
	for i := range samples {
		b[n+i] = byte(samples[i].Type)
	}
	n += len(samples)
	for i := range samples {
		b[n+i] = byte(samples[i].State)
	}
	e.b = b[:n+len(samples)]
}

// UnmarshalBinary restores a profile written by MarshalBinary into p,
// which must be new. Truncated data and ids out of range are errors.
func (p *Profile) UnmarshalBinary(data []byte) error {
	if len(data) < len(columnsMagic) || string(data[:len(columnsMagic)]) != columnsMagic {
		// Stores written before the column format (gob) are not read:
		// gob may allocate without bound on damaged input.
		return fmt.Errorf("decode profile: not in the sparkprof column format (no %q at offset 0); data written by sparkprof before November 2026 must be imported again", columnsMagic)
	}
	d := decoder{b: data, off: len(columnsMagic)}
	if err := p.decodeColumns(&d); err != nil {
		return fmt.Errorf("decode profile at offset %d: %w", d.off, err)
	}
	if d.off != len(data) {
		return fmt.Errorf("decode profile: %d bytes after the end at offset %d", len(data)-d.off, d.off)
	}
	return nil
}

func (p *Profile) decodeColumns(d *decoder) error {
	*p = *New()
	n := d.count(2)
	if n > 256 {
		return fmt.Errorf("%d sample types, at most 256", n)
	}
	for range n {
		p.AddType(SampleType{Name: d.str(), Unit: d.str()})
	}
	// Frames and stacks go straight into the tables: a decoded profile is
	// read, and AddFrame or Push build the indexes if it is added to (a new
	// profile has no stack index until then).
	p.frameIndex = nil
	n = d.count(4)
	p.Frames = make([]Frame, 0, n)
	for range n {
		p.Frames = append(p.Frames, Frame{Name: d.str(), File: d.str(), Line: int32(d.int()), Kind: FrameKind(d.uint())})
	}
	n = d.count(2)
	p.stacks = grow(p.stacks, n)[:n+1]
	for i := 1; i <= n; i++ {
		p.stacks[i].parent = StackID(d.uint())
	}
	for i := 1; i <= n; i++ {
		p.stacks[i].frame = FrameID(d.uint())
		if d.err != nil {
			return d.err
		}
		if int(p.stacks[i].parent) >= i || int(p.stacks[i].frame) >= len(p.Frames) {
			return fmt.Errorf("stack %d out of range", i)
		}
	}
	n = d.count(2)
	for range n {
		t := Thread{ID: d.int(), Name: d.str()}
		p.Threads = append(p.Threads, t)
		p.threadIdx[t] = ThreadID(len(p.Threads) - 1)
	}
	// Label sets go straight into the table too, their index built by
	// AddLabels if ever needed.
	n = d.count(1)
	p.labelIndex = nil
	p.labelSets = d.appendLabelSets(p.labelSets, n)
	p.Samples = d.samples()
	if err := p.checkSamples(p.Samples); err != nil {
		return err
	}
	p.Labels = d.labels()
	n = d.count(3)
	for range n {
		sr := Series{Name: d.str(), Unit: d.str(), Labels: d.labels()}
		pts := d.count(9)
		sr.Points = make([]Point, 0, pts)
		var prev int64
		for range pts {
			prev += d.int()
			sr.Points = append(sr.Points, Point{Time: prev, Value: math.Float64frombits(d.uint64())})
		}
		p.Series = append(p.Series, sr)
	}
	p.Start, p.End, p.Source = d.int(), d.int(), d.str()
	n = d.count(1)
	for range n {
		p.Warnings = append(p.Warnings, d.str())
	}
	return d.err
}

// samples reads the sample columns encoder.samples wrote; checkSamples
// then checks their ids against the tables.
func (d *decoder) samples() []Sample {
	n := d.count(7)
	if d.err != nil {
		return nil
	}
	samples := make([]Sample, n)
	d.uints(n, func(i int, vs []uint64) {
		for j, v := range vs {
			samples[i+j].Stack = StackID(v)
		}
	})
	d.uints(n, func(i int, vs []uint64) {
		for j, v := range vs {
			samples[i+j].Value = unzigzag(v)
		}
	})
	var prev int64
	d.uints(n, func(i int, vs []uint64) {
		for j, v := range vs {
			prev += unzigzag(v)
			samples[i+j].Time = prev
		}
	})
	d.uints(n, func(i int, vs []uint64) {
		for j, v := range vs {
			samples[i+j].Labels = LabelSetID(v)
		}
	})
	d.uints(n, func(i int, vs []uint64) {
		for j, v := range vs {
			samples[i+j].Thread = ThreadID(v)
		}
	})
	for i := range samples {
		samples[i].Type = TypeID(d.byte())
	}
	for i := range samples {
		samples[i].State = ThreadState(d.byte())
	}
	if d.err != nil {
		return nil
	}
	return samples
}

// CheckSamples reports a sample whose ids are outside p's tables: for
// samples decoded apart from the tables they refer to.
func (p *Profile) CheckSamples(samples []Sample) error { return p.checkSamples(samples) }

// checkSamples reports a sample whose ids are outside p's tables.
func (p *Profile) checkSamples(samples []Sample) error {
	for i, s := range samples {
		if int(s.Stack) >= len(p.stacks) || int(s.Labels) >= len(p.labelSets) || int(s.Thread) >= len(p.Threads) || int(s.Type) >= len(p.Types) {
			return fmt.Errorf("sample %d out of range", i)
		}
	}
	return nil
}

// samplesMagic starts the encoding AppendSamples returns.
const samplesMagic = "SPPS\x01"

// AppendSamples appends samples in the stored column form, without the
// tables their ids refer to, to b: samples stored apart from their
// profile's tables, as a compacted block's time slices are. WithSamples
// reads them back.
func AppendSamples(b []byte, samples []Sample) []byte {
	e := encoder{b: grow(b, len(samplesMagic)+len(samples)*12)}
	e.b = append(e.b, samplesMagic...)
	e.samples(samples)
	return e.b
}

// WithSamples decodes samples AppendSamples wrote, whose ids refer to p's
// tables, and returns a copy of p holding them in place of p's samples.
// The copy shares p's tables: neither may be added to afterwards (see
// OwnLabelSets).
func (p *Profile) WithSamples(data []byte) (*Profile, error) {
	if len(data) < len(samplesMagic) || string(data[:len(samplesMagic)]) != samplesMagic {
		return nil, fmt.Errorf("decode samples: no %q at offset 0", samplesMagic)
	}
	d := decoder{b: data, off: len(samplesMagic)}
	samples := d.samples()
	if d.err != nil {
		return nil, fmt.Errorf("decode samples at offset %d: %w", d.off, d.err)
	}
	if d.off != len(data) {
		return nil, fmt.Errorf("decode samples: %d bytes after the end at offset %d", len(data)-d.off, d.off)
	}
	if err := p.checkSamples(samples); err != nil {
		return nil, fmt.Errorf("decode samples: %w", err)
	}
	cp := *p
	cp.Samples = samples
	return &cp, nil
}

// decoder reads the column format; the first error sticks and later reads
// return zero values.
type decoder struct {
	b   []byte
	off int
	err error
}

var errTruncated = errors.New("data ends early")

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.off += n
	return v
}

// int reads a varint: the zigzag form of a uvarint, as binary.Varint.
func (d *decoder) int() int64 { return unzigzag(d.uint()) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// uints reads a column of n uvarints, handing them to set in runs of up to
// 256 starting at index i: a loop over the bytes, with one- and two-byte
// values (most ids) read in place, instead of a call to uint per value.
func (d *decoder) uints(n int, set func(i int, vs []uint64)) {
	var run [256]uint64
	b, off := d.b, d.off
	for i := 0; i < n && d.err == nil; i += len(run) {
		vs := run[:min(len(run), n-i)]
		for j := range vs {
			if off < len(b) && b[off] < 0x80 {
				vs[j] = uint64(b[off])
				off++
				continue
			}
			if off+1 < len(b) && b[off+1] < 0x80 {
				vs[j] = uint64(b[off]&0x7f) | uint64(b[off+1])<<7
				off += 2
				continue
			}
			v, k := binary.Uvarint(b[off:])
			if k <= 0 {
				d.off = off
				d.fail(errTruncated)
				return
			}
			vs[j] = v
			off += k
		}
		set(i, vs)
	}
	d.off = off
}

// count reads a count of items that take at least min bytes each, so that
// a corrupt count cannot make a huge allocation.
func (d *decoder) count(min int) int {
	n := d.uint()
	if n > uint64(len(d.b)-d.off)/uint64(min) {
		d.fail(fmt.Errorf("count %d exceeds the %d bytes left", n, len(d.b)-d.off))
		return 0
	}
	return int(n)
}

func (d *decoder) byte() byte {
	if d.err != nil || d.off >= len(d.b) {
		d.fail(errTruncated)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.b)-d.off < 8 {
		d.fail(errTruncated)
		return 0
	}
	d.off += 8
	return binary.LittleEndian.Uint64(d.b[d.off-8:])
}

func (d *decoder) str() string {
	n := d.count(1)
	if d.err != nil {
		return ""
	}
	d.off += n
	return string(d.b[d.off-n : d.off])
}

// appendLabelSets reads n label sets as labels reads each and appends them
// to sets. A block holds a label set per task, hundreds of thousands, so
// rather than allocate each set and each of its strings, it reads them
// twice: first to check them and to size one array for all their labels
// and one buffer for the strings that differ from the previous set's in
// the same place (task ids; the names, app, executor and stage mostly
// repeat), then to fill them.
func (d *decoder) appendLabelSets(sets []Labels, n int) []Labels {
	start, total, fresh := d.off, 0, 0
	var prev, cur [][]byte
	b, off := d.b, d.off
	for range n {
		k, next := uvarintAt(b, off)
		if next < 0 {
			d.fail(errTruncated)
			return sets
		}
		if k > uint64(len(b)-next)/2 {
			d.fail(fmt.Errorf("label set at offset %d: count %d exceeds the %d bytes left", off, k, len(b)-next))
			return sets
		}
		off = next
		total += int(k)
		cur = cur[:0]
		for j := range 2 * int(k) {
			m, next := uvarintAt(b, off)
			if next < 0 || m > uint64(len(b)-next) {
				d.fail(errTruncated)
				return sets
			}
			s := b[next : next+int(m)]
			off = next + int(m)
			if j >= len(prev) || !bytes.Equal(s, prev[j]) {
				fresh += len(s)
			}
			cur = append(cur, s)
		}
		prev, cur = cur, prev
	}
	d.off = off
	var text strings.Builder
	text.Grow(fresh)
	// read returns the next string's bytes, checked above.
	read := func() []byte {
		m, next := uvarintAt(b, start)
		start = next + int(m)
		return b[next:start]
	}
	// keep returns s as a string: same, the previous set's string in its
	// place, when they are equal, else a copy in text.
	keep := func(s []byte, same string) string {
		if string(s) == same {
			return same
		}
		at := text.Len()
		text.Write(s)
		return text.String()[at:]
	}
	sets = slices.Grow(sets, n)
	all := make(Labels, total)
	var last Labels
	for range n {
		k, next := uvarintAt(b, start)
		start = next
		ls := all[:k:k]
		all = all[k:]
		for j := range ls {
			var name, value string
			if j < len(last) {
				name, value = last[j].Name, last[j].Value
			}
			ls[j].Name = keep(read(), name)
			ls[j].Value = keep(read(), value)
		}
		if k == 0 {
			ls = nil // as labels reads it
		}
		sets = append(sets, ls)
		last = ls
	}
	return sets
}

// uvarintAt reads the uvarint at b[off:] and returns it with the offset
// after it, or -1 when b ends first or it overflows.
func uvarintAt(b []byte, off int) (uint64, int) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), off + 1
	}
	if off >= len(b) {
		return 0, -1
	}
	v, k := binary.Uvarint(b[off:])
	if k <= 0 {
		return 0, -1
	}
	return v, off + k
}

func (d *decoder) labels() Labels {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	ls := make(Labels, 0, n)
	for range n {
		ls = append(ls, Label{Name: d.str(), Value: d.str()})
	}
	return ls
}
