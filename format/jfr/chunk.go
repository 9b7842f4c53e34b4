package jfr

import (
	"fmt"
	"math"
)

// This file reads a chunk by its metadata: the constant pools are indexed
// (key → offset of the value) and their entries decoded only when an event
// refers to them, except stack traces, whose frames are read while indexing
// (events refer to most of them); events are read field by field into
// records, keeping the fields the decoder needs.
//
// It replaces github.com/grafana/jfr-parser, which parses every constant of
// every pool into Go values before the first event and spent most of an
// upload's ingest time doing so (see BENCHMARKS.md); no other Go library
// reads JFR.

// record holds the fields of one event or constant the decoder keeps, by
// role: integers and constant pool keys (floats as their bits) in v,
// strings in s. A record is reused for every value of its kind; roles its
// class lacks are never written and stay zero, and roleNone's slot takes
// fields no role is given.
type record struct {
	v [numRoles]uint64
	s [numRoles][]byte
}

func (rec *record) float(r role) float64 { return math.Float64frombits(rec.v[r]) }

// maxCheckpoints bounds the constant pool events of a chunk followed
// through their offset chain.
const maxCheckpoints = 1 << 16

// skipValue moves past a value of class c.
func skipValue(r *reader, c *class, cpool bool) {
	if !r.step() {
		return
	}
	if cpool {
		r.skipVarint()
		return
	}
	switch c.kind {
	case kindVarint:
		r.skipVarint()
	case kindByte:
		r.bytes(1)
	case kindFloat:
		r.bytes(4)
	case kindDouble:
		r.bytes(8)
	case kindString:
		r.skipString()
	default:
		if n := len(c.varints); n > 0 {
			r.skipVarints(n)
			return
		}
		for i := range c.fields {
			skipField(r, &c.fields[i])
		}
	}
}

// skipField moves past a value of field f, an array or not.
func skipField(r *reader, f *field) {
	switch {
	case !f.array:
		skipValue(r, f.class, f.cpool)
	case !f.cpool && len(f.class.varints) > 0:
		// Arrays of stack frames: most of a chunk's constants.
		n := len(f.class.varints)
		r.skipVarints(int(r.count(n)) * n)
	default:
		for n := r.count(1); n > 0 && r.err == nil; n-- {
			skipValue(r, f.class, f.cpool)
		}
	}
}

// readFields reads a struct of class c, keeping its top-level scalar
// fields in rec by role.
func readFields(r *reader, c *class, rec *record) {
	if !r.step() {
		return
	}
	if len(c.varints) > 0 {
		r.varintFields(rec, c.varints)
		return
	}
	for i := range c.fields {
		f := &c.fields[i]
		switch {
		case f.array:
			skipField(r, f)
		case f.cpool:
			rec.v[f.role] = r.varint()
		default:
			switch f.class.kind {
			case kindVarint:
				rec.v[f.role] = r.varint()
			case kindByte:
				rec.v[f.role] = uint64(int64(int8(r.byte())))
			case kindFloat:
				rec.v[f.role] = math.Float64bits(float64(math.Float32frombits(r.u32())))
			case kindDouble:
				rec.v[f.role] = r.u64()
			case kindString:
				rec.s[f.role] = r.string()
			default:
				skipValue(r, f.class, false)
			}
		}
	}
}

// indexPools follows the chain of constant pool events from the one the
// chunk header points at, recording where each constant of the pools the
// decoder resolves starts, and reading the stack traces.
func (d *decoder) indexPools() error {
	for i := range d.pools {
		d.pools[i].reset(len(d.chunk))
	}
	d.traceFrames, d.traceSpans = d.traceFrames[:0], d.traceSpans[:0]
	off := d.hdr.cpOffset
	for n := 0; ; n++ {
		if n == maxCheckpoints {
			return fmt.Errorf("more than %d constant pool events", maxCheckpoints)
		}
		delta, err := d.checkpoint(off)
		if err != nil {
			return fmt.Errorf("constant pool event at chunk offset %d: %w", off, err)
		}
		if delta == 0 {
			return nil
		}
		prev := off + delta
		if prev < chunkHeaderSize || prev >= off {
			return fmt.Errorf("constant pool event at chunk offset %d: previous one at offset %d, want one between %d and %d", off, prev, chunkHeaderSize, off)
		}
		off = prev
	}
}

// checkpoint indexes the constant pool event at off, returning the
// (negative) offset of the previous one, 0 for none.
func (d *decoder) checkpoint(off int64) (delta int64, err error) {
	r := &d.r
	r.at(d.chunk, int(off))
	size := r.varint()
	if r.err != nil || size == 0 || size > uint64(len(d.chunk))-uint64(off) {
		return 0, fmt.Errorf("size %d out of range", size)
	}
	if head := uint64(r.pos) - uint64(off); size < head {
		return 0, fmt.Errorf("size %d shorter than its own %d bytes", size, head)
	}
	r.at(d.chunk[:off+int64(size)], r.pos)
	if typ := r.varint(); typ != 1 {
		return 0, fmt.Errorf("event type %d, want 1 (constant pool)", typ)
	}
	r.varint() // start
	r.varint() // duration
	delta = int64(r.varint())
	r.varint() // flush or type mask
	for pools := r.count(2); pools > 0 && r.err == nil; pools-- {
		id := r.varint()
		c := d.md.class(id)
		if c == nil {
			if r.err == nil {
				r.fail(fmt.Errorf("constant pool of undeclared type %d at offset %d", id, r.pos))
			}
			break
		}
		var x *index // constants of a second class of a pool's name are skipped
		if c.pool != poolNone && d.md.pools[c.pool] == c {
			x = &d.pools[c.pool]
		}
		for n := r.count(1); n > 0 && r.err == nil; n-- {
			key := r.varint()
			switch {
			case x != nil && c.pool == poolStackTrace:
				x.put(key, uint32(len(d.traceSpans)))
				d.appendTrace(r, c)
			case x != nil:
				x.put(key, uint32(r.pos))
				skipValue(r, c, false)
			case c.chunkHeader:
				r.bytes(chunkHeaderSize)
			default:
				skipValue(r, c, false)
			}
		}
	}
	return delta, r.err
}

// constant reads the constant of pool kind k with key into the pool's
// record, reporting whether the chunk has it.
func (d *decoder) constant(k poolKind, key uint64) (*record, bool) {
	off, ok := d.pools[k].get(key)
	if !ok {
		return nil, false
	}
	c := d.md.pools[k]
	rec := &d.poolRecs[k]
	r := &d.cr
	r.at(d.chunk, int(off))
	readFields(r, c, rec)
	return rec, r.err == nil
}

// events reads every event of the chunk, handing those the decoder knows
// to event.
func (d *decoder) events() error {
	chunk := d.chunk
	r := &d.r
	for pos := chunkHeaderSize; pos < len(chunk); {
		r.at(chunk, pos)
		size := r.varint()
		if r.err != nil || size == 0 || size > uint64(len(chunk)-pos) || int(size) < r.pos-pos {
			return fmt.Errorf("event at chunk offset %d: size %d out of range", pos, size)
		}
		end := pos + int(size)
		r.at(chunk[:end], r.pos)
		if typ := r.varint(); typ > 1 { // 0 is metadata, 1 constant pools
			if c := d.md.class(typ); c != nil {
				d.classCounts[c.index]++
				if c.event != evNone {
					rec := &d.recs[c.event]
					readFields(r, c, rec)
					if r.err != nil {
						return fmt.Errorf("%s at chunk offset %d: %w", c.name, pos, r.err)
					}
					d.event(c.event, rec)
				}
			}
		}
		pos = end
	}
	return nil
}
