package jfr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

var errShort = errors.New("unexpected end of data")

// reader reads JFR's compressed integers, big-endian floats and strings
// from one chunk. The first error sticks: reads after it return zero
// values, so a caller checks err once per event or constant.
type reader struct {
	b   []byte
	pos int
	err error
	// steps bounds the values read (see step).
	steps int
}

// at starts reading b at pos, allowing values a few times the bytes left:
// every value but an empty struct takes a byte, so that bounds real data,
// while arrays of arrays of empty structs could otherwise loop for a
// number of times quadratic in the data.
func (r *reader) at(b []byte, pos int) {
	r.b, r.pos, r.err = b, pos, nil
	if pos > len(b) {
		r.fail(errShort) // every read relies on pos <= len(b)
	}
	r.steps = 4*(len(b)-r.pos) + 64
}

var errSteps = errors.New("values nest more than the data can hold")

// step counts one value read, failing when the budget is spent.
func (r *reader) step() bool {
	r.steps--
	if r.steps < 0 {
		r.fail(errSteps)
		return false
	}
	return true
}

// fail records err (the first one wins) and ends reading.
func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.pos = len(r.b)
}

// varint reads a compressed integer: seven bits per byte, least significant
// group first, the ninth byte holding eight bits.
func (r *reader) varint() uint64 {
	if r.pos < len(r.b) {
		if c := r.b[r.pos]; c < 0x80 {
			r.pos++
			return uint64(c)
		}
	}
	return r.varintSlow()
}

func (r *reader) varintSlow() uint64 {
	// The integer's bytes as a local slice, so there is no bounds check or
	// store to r per byte.
	b := r.b[r.pos:]
	if len(b) > 9 {
		b = b[:9]
	}
	var v uint64
	for i, c := range b {
		if i == 8 {
			r.pos += 9
			return v | uint64(c)<<56
		}
		v |= uint64(c&0x7f) << (7 * i & 63) // i < 8: the mask drops the compiler's check for shifts past 63
		if c < 0x80 {
			r.pos += i + 1
			return v
		}
	}
	r.fail(errShort)
	return 0
}

// skipVarint moves past a compressed integer.
func (r *reader) skipVarint() {
	for i := 0; i < 9; i++ {
		if r.pos >= len(r.b) {
			r.fail(errShort)
			return
		}
		c := r.b[r.pos]
		r.pos++
		if c < 0x80 {
			return
		}
	}
}

// skipVarints moves past n compressed integers.
func (r *reader) skipVarints(n int) {
	b, pos := r.b, r.pos
	run := 0 // continuation bytes so far in the current integer
	for n > 0 {
		if pos >= len(b) {
			r.fail(errShort)
			return
		}
		c := b[pos]
		pos++
		// The ninth byte of an integer holds eight bits: it always ends it.
		if c < 0x80 || run == 8 {
			n--
			run = 0
			continue
		}
		run++
	}
	r.pos = pos
}

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail(errShort)
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

// bytes returns the next n bytes, in place.
func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)-r.pos) {
		r.fail(errShort)
		return nil
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b
}

func (r *reader) u32() uint32 {
	b := r.bytes(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

func (r *reader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// count reads an element count, failing when the rest of the data could
// not hold that many elements of at least min bytes each.
func (r *reader) count(min int) uint64 {
	n := r.varint()
	if n > uint64(len(r.b)-r.pos)/uint64(max(min, 1)) {
		r.fail(fmt.Errorf("count %d exceeds the %d bytes left", n, len(r.b)-r.pos))
		return 0
	}
	return n
}

// String encodings of JFR.
const (
	strNull = iota
	strEmpty
	strPool // a reference to a constant pool of strings
	strUTF8
	strChars // UTF-16 code units, each a compressed integer
	strLatin1
)

// string reads a string as bytes, pointing into the chunk when no
// conversion is needed (else into a new slice). Null strings and constant pool references read as
// empty.
func (r *reader) string() []byte {
	switch enc := r.byte(); enc {
	case strNull, strEmpty:
		return nil
	case strPool:
		r.varint()
		return nil
	case strUTF8:
		return r.bytes(r.varint())
	case strLatin1:
		b := r.bytes(r.varint())
		for i, c := range b {
			if c >= utf8.RuneSelf {
				conv := append(make([]byte, 0, 2*len(b)), b[:i]...)
				for _, c := range b[i:] {
					conv = utf8.AppendRune(conv, rune(c))
				}
				return conv
			}
		}
		return b
	case strChars:
		n := r.count(1)
		var conv []byte
		var high rune // a high surrogate waiting for its low half
		for ; n > 0 && r.err == nil; n-- {
			c := rune(uint16(r.varint()))
			switch {
			case high != 0 && utf16.IsSurrogate(c):
				conv = utf8.AppendRune(conv, utf16.DecodeRune(high, c))
				high = 0
				continue
			case high != 0:
				conv = utf8.AppendRune(conv, utf8.RuneError)
				high = 0
			}
			if c >= 0xd800 && c < 0xdc00 {
				high = c
				continue
			}
			conv = utf8.AppendRune(conv, c)
		}
		if high != 0 {
			conv = utf8.AppendRune(conv, utf8.RuneError)
		}
		return conv
	default:
		if r.err == nil {
			r.fail(fmt.Errorf("unknown string encoding %d at chunk offset %d", enc, r.pos-1))
		}
		return nil
	}
}

// skipString moves past a string.
func (r *reader) skipString() {
	switch enc := r.byte(); enc {
	case strNull, strEmpty:
	case strPool:
		r.skipVarint()
	case strUTF8, strLatin1:
		r.bytes(r.varint())
	case strChars:
		for n := r.count(1); n > 0 && r.err == nil; n-- {
			r.skipVarint()
		}
	default:
		if r.err == nil {
			r.fail(fmt.Errorf("unknown string encoding %d at chunk offset %d", enc, r.pos-1))
		}
	}
}

// varintFields reads a struct of compressed integers only, keeping each in
// rec by its role (roleNone's slot takes the rest). It is r.varint in a
// loop with the position in a local and short integers read in place:
// such structs (stack frames, most events) are most of a chunk's bytes.
func (r *reader) varintFields(rec *record, roles []role) {
	b, pos := r.b, r.pos
	for _, ro := range roles {
		var v uint64
		switch {
		case pos < len(b) && b[pos] < 0x80:
			v = uint64(b[pos])
			pos++
		case pos+1 < len(b) && b[pos+1] < 0x80:
			v = uint64(b[pos]&0x7f) | uint64(b[pos+1])<<7
			pos += 2
		default:
			r.pos = pos
			if v = r.varintSlow(); r.err != nil {
				return
			}
			pos = r.pos
		}
		rec.v[ro] = v
	}
	r.pos = pos
}
