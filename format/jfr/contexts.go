package jfr

import (
	"encoding/binary"
	"fmt"
)

// MapContexts returns a copy of the recording data (whole chunks, not
// compressed) in which the context id of every event that carries one
// (async-profiler's contextId, which a Pyroscope LabelsSnapshot maps to
// labels) is what f returns for it, given the event's index among those
// events and its old id. Other bytes are kept, but for what the longer or
// shorter events move: event sizes, the chain of constant pool events and
// the chunk header's offsets. It makes recordings of as many task contexts
// as a busy executor's from a real recording of a few.
func MapContexts(data []byte, f func(i int, ctx uint64) uint64) ([]byte, error) {
	var out []byte
	n := 0
	for off := 0; off < len(data); {
		h, err := readChunkHeader(data[off:])
		if err != nil {
			return nil, fmt.Errorf("chunk at offset %d: %w", off, err)
		}
		chunk, err := mapChunkContexts(data[off:off+int(h.size)], h, f, &n)
		if err != nil {
			return nil, fmt.Errorf("chunk at offset %d: %w", off, err)
		}
		out = append(out, chunk...)
		off += int(h.size)
	}
	return out, nil
}

// paddedDelta is the width of the constant pool events' offsets to the one
// before them in a chunk MapContexts writes: the widest varint, so that
// writing an offset does not move what follows.
const paddedDelta = 9

// mapChunkContexts is MapContexts of one chunk; n counts the events with a
// context id so far.
func mapChunkContexts(b []byte, h chunkHeader, f func(int, uint64) uint64, n *int) ([]byte, error) {
	md, err := loadMetadata(b, h.metaOffset)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), b[:chunkHeaderSize]...)
	moved := map[int]int{} // old offset → new offset of the events the header and pools name
	var checkpoints []int  // new offsets of the constant pool events
	var r reader
	for pos := chunkHeaderSize; pos < len(b); {
		r.at(b, pos)
		size := r.varint()
		if r.err != nil || size == 0 || size > uint64(len(b)-pos) {
			return nil, fmt.Errorf("event at chunk offset %d: size %d out of range", pos, size)
		}
		end := pos + int(size)
		body := b[r.pos:end]
		moved[pos] = len(out)
		r.at(b[:end], r.pos)
		switch typ := r.varint(); {
		case typ == 1:
			checkpoints = append(checkpoints, len(out))
			body, err = padDelta(body)
		default:
			if c := md.class(typ); c != nil {
				body, err = mapContext(body, c, f, n)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("event at chunk offset %d: %w", pos, err)
		}
		out = appendEvent(out, body)
		pos = end
	}
	// The pool events' offsets to the one before them, now that they
	// moved: each points at the previous one, the first at none.
	be := binary.BigEndian
	for i, at := range checkpoints {
		var delta int64
		if i > 0 {
			delta = int64(checkpoints[i-1] - at)
		}
		r.at(out, at)
		r.varint() // size
		r.varint() // type
		r.varint() // start
		r.varint() // duration
		putPadded(out[r.pos:r.pos+paddedDelta], uint64(delta))
	}
	cp, ok1 := moved[int(h.cpOffset)]
	meta, ok2 := moved[int(h.metaOffset)]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("the header's offsets (%d, %d) are not at events", h.cpOffset, h.metaOffset)
	}
	be.PutUint64(out[8:], uint64(len(out)))
	be.PutUint64(out[16:], uint64(cp))
	be.PutUint64(out[24:], uint64(meta))
	return out, nil
}

// appendEvent appends an event of body (its type and fields) to out,
// preceded by its size, which counts itself.
func appendEvent(out, body []byte) []byte {
	size := len(body) + 1
	for size-len(body) < uvarintLen(uint64(size)) {
		size++
	}
	// A size written wider than it needs (padded) fits the size counted.
	var buf [paddedDelta]byte
	putPadded(buf[:size-len(body)], uint64(size))
	return append(append(out, buf[:size-len(body)]...), body...)
}

// padDelta returns the body of a constant pool event with its offset to
// the previous one (its third field) rewritten paddedDelta bytes wide, to
// be filled in once the events' places are known.
func padDelta(body []byte) ([]byte, error) {
	var r reader
	r.at(body, 0)
	r.varint() // type
	r.varint() // start
	r.varint() // duration
	start := r.pos
	r.varint() // delta
	if r.err != nil {
		return nil, r.err
	}
	out := append([]byte(nil), body[:start]...)
	out = append(out, make([]byte, paddedDelta)...)
	return append(out, body[r.pos:]...), nil
}

// mapContext returns body, an event of class c, with its context id
// replaced by f's, or body itself when its class has none.
func mapContext(body []byte, c *class, f func(int, uint64) uint64, n *int) ([]byte, error) {
	ctx := -1
	for i := range c.fields {
		if c.fields[i].role == roleContextID && !c.fields[i].array {
			ctx = i
		}
	}
	if ctx < 0 {
		return body, nil
	}
	var r reader
	r.at(body, 0)
	r.varint() // type
	for i := range c.fields[:ctx] {
		skipField(&r, &c.fields[i])
	}
	start := r.pos
	old := r.varint()
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, r.err)
	}
	id := f(*n, old)
	*n++
	out := append([]byte(nil), body[:start]...)
	out = binary.AppendUvarint(out, id)
	return append(out, body[r.pos:]...), nil
}

// putPadded writes v as a varint exactly len(b) bytes wide: the bytes
// before the last say that more follow even where v needs none of them,
// which JFR's readers accept. The widest, nine bytes, holds 64 bits (the
// ninth byte's eight).
func putPadded(b []byte, v uint64) {
	for i := range b {
		if i == len(b)-1 {
			b[i] = byte(v)
			return
		}
		b[i] = byte(v&0x7f) | 0x80
		v >>= 7
	}
}

// uvarintLen is the bytes v takes as a varint of JFR's: up to nine.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80 && n < paddedDelta; n++ {
		v >>= 7
	}
	return n
}
