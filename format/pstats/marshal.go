package pstats

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Python's marshal type codes (Python/marshal.c), as versions 2 to 4 write
// them: Python 3.4 to 3.13 all write version 4.
const (
	typeNull         = '0'
	typeNone         = 'N'
	typeFalse        = 'F'
	typeTrue         = 'T'
	typeStopIter     = 'S'
	typeEllipsis     = '.'
	typeInt          = 'i'
	typeInt64        = 'I' // written by no Python 3, read for completeness
	typeLong         = 'l'
	typeFloat        = 'f'
	typeBinaryFloat  = 'g'
	typeString       = 's' // bytes
	typeInterned     = 't'
	typeRef          = 'r'
	typeTuple        = '('
	typeSmallTuple   = ')'
	typeList         = '['
	typeDict         = '{'
	typeUnicode      = 'u'
	typeASCII        = 'a'
	typeASCIIIntern  = 'A'
	typeShortASCII   = 'z'
	typeShortASCIIIn = 'Z'
	typeSet          = '<'
	typeFrozenSet    = '>'
	flagRef          = 0x80
)

// maxDepth bounds the nesting of containers, so that a hostile input
// cannot exhaust the stack; a pstats file nests four deep.
const maxDepth = 32

// A value is a decoded marshal object: nil (None), bool, int64, float64,
// string (str and bytes alike), tuple ([]value, lists and sets too) or
// *dict.
type value any

type tuple []value

// dict keeps a marshalled dict's entries in their order.
type dict struct {
	keys, vals []value
	offs       []int // where each key starts
}

// A marshalError is a malformed marshal stream: where, and what.
type marshalError struct {
	offset int64
	msg    string
}

func (e *marshalError) Error() string { return e.msg }

// unmarshaller reads one marshal object from data.
type unmarshaller struct {
	data  []byte
	off   int
	refs  []value
	depth int
}

func (u *unmarshaller) fail(off int, format string, args ...any) error {
	return &marshalError{offset: int64(off), msg: fmt.Sprintf(format, args...)}
}

func (u *unmarshaller) need(n int, what string) ([]byte, error) {
	if n < 0 || n > len(u.data)-u.off {
		return nil, u.fail(u.off, "%s needs %d bytes, %d are left: the file is truncated", what, n, len(u.data)-u.off)
	}
	b := u.data[u.off : u.off+n]
	u.off += n
	return b, nil
}

func (u *unmarshaller) int32(what string) (int32, error) {
	b, err := u.need(4, what)
	if err != nil {
		return 0, err
	}
	return int32(binary.LittleEndian.Uint32(b)), nil
}

// size reads a length, at most what remains of the data (each element
// takes at least a byte).
func (u *unmarshaller) size(what string) (int, error) {
	start := u.off
	n, err := u.int32(what)
	if err != nil {
		return 0, err
	}
	if n < 0 || int(n) > len(u.data)-u.off {
		return 0, u.fail(start, "%s %d is negative or longer than the %d bytes left", what, n, len(u.data)-u.off)
	}
	return int(n), nil
}

// object reads the next object.
func (u *unmarshaller) object() (value, error) {
	start := u.off
	b, err := u.need(1, "type code")
	if err != nil {
		return nil, err
	}
	code, ref := b[0]&^flagRef, b[0]&flagRef != 0
	// A container's reference slot is taken before its elements are read,
	// as CPython does, so that the indexes of later refs agree.
	slot := -1
	if ref {
		slot = len(u.refs)
		u.refs = append(u.refs, nil)
	}
	u.depth++
	defer func() { u.depth-- }()
	if u.depth > maxDepth {
		return nil, u.fail(start, "objects nested more than %d deep", maxDepth)
	}
	v, err := u.body(start, code)
	if err != nil {
		return nil, err
	}
	if slot >= 0 {
		u.refs[slot] = v
	}
	return v, nil
}

func (u *unmarshaller) body(start int, code byte) (value, error) {
	switch code {
	case typeNone:
		return nil, nil
	case typeFalse, typeTrue:
		return code == typeTrue, nil
	case typeInt:
		n, err := u.int32("int")
		return int64(n), err
	case typeInt64:
		b, err := u.need(8, "int64")
		if err != nil {
			return nil, err
		}
		return int64(binary.LittleEndian.Uint64(b)), nil
	case typeLong:
		return u.long(start)
	case typeBinaryFloat:
		b, err := u.need(8, "float")
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case typeFloat:
		n, err := u.need(1, "float length")
		if err != nil {
			return nil, err
		}
		b, err := u.need(int(n[0]), "float text")
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return nil, u.fail(start, "float %q: %v", b, err)
		}
		return f, nil
	case typeString, typeInterned, typeUnicode, typeASCII, typeASCIIIntern:
		n, err := u.size("string length")
		if err != nil {
			return nil, err
		}
		return u.text(code, n)
	case typeShortASCII, typeShortASCIIIn:
		n, err := u.need(1, "string length")
		if err != nil {
			return nil, err
		}
		return u.text(code, int(n[0]))
	case typeTuple, typeList, typeSet, typeFrozenSet:
		n, err := u.size("length")
		if err != nil {
			return nil, err
		}
		return u.elements(n)
	case typeSmallTuple:
		n, err := u.need(1, "tuple length")
		if err != nil {
			return nil, err
		}
		return u.elements(int(n[0]))
	case typeDict:
		return u.dict()
	case typeRef:
		i, err := u.int32("ref index")
		if err != nil {
			return nil, err
		}
		if i < 0 || int(i) >= len(u.refs) {
			return nil, u.fail(start, "reference %d to an object not yet read (%d read)", i, len(u.refs))
		}
		return u.refs[i], nil
	case typeNull:
		return nil, u.fail(start, "unexpected end-of-dict marker")
	case typeStopIter, typeEllipsis:
		return nil, u.fail(start, "type %q has no place in a profile", code)
	}
	return nil, u.fail(start, "unknown marshal type code 0x%02x (%q): not a pstats file, or written by a Python newer than 3.13", code, code)
}

func (u *unmarshaller) text(code byte, n int) (value, error) {
	start := u.off
	b, err := u.need(n, "string")
	if err != nil {
		return nil, err
	}
	if code == typeUnicode && !utf8.Valid(b) {
		return nil, u.fail(start, "string is not UTF-8")
	}
	return string(b), nil
}

func (u *unmarshaller) elements(n int) (value, error) {
	t := make(tuple, 0, min(n, 1024))
	for range n {
		v, err := u.object()
		if err != nil {
			return nil, err
		}
		t = append(t, v)
	}
	return t, nil
}

func (u *unmarshaller) dict() (value, error) {
	d := &dict{}
	top := u.depth == 1
	for i := 0; ; i++ {
		if u.off < len(u.data) && u.data[u.off] == typeNull {
			u.off++
			return d, nil
		}
		off := u.off
		k, err := u.object()
		if err == nil {
			var v value
			v, err = u.object()
			d.vals = append(d.vals, v)
		}
		if err != nil {
			if me, ok := err.(*marshalError); ok && top {
				me.msg = fmt.Sprintf("stats entry %d (from offset %d): %s", i, off, me.msg)
			}
			return nil, err
		}
		d.offs = append(d.offs, off)
		d.keys = append(d.keys, k)
	}
}

// long reads an arbitrary-precision int: a signed count of 15-bit digits,
// least significant first. Values beyond int64 are an error: no count or
// line of a profile is that large.
func (u *unmarshaller) long(start int) (value, error) {
	n, err := u.int32("long digit count")
	if err != nil {
		return nil, err
	}
	neg := n < 0
	if neg {
		n = -n
	}
	if n < 0 || n > 5 {
		return nil, u.fail(start, "int of %d 15-bit digits does not fit 64 bits", n)
	}
	b, err := u.need(2*int(n), "long digits")
	if err != nil {
		return nil, err
	}
	var x uint64
	for i := int(n) - 1; i >= 0; i-- {
		d := binary.LittleEndian.Uint16(b[2*i:])
		if d >= 1<<15 {
			return nil, u.fail(start, "long digit %d out of range", d)
		}
		if x > math.MaxInt64>>15 {
			return nil, u.fail(start, "int of %d 15-bit digits does not fit 64 bits", n)
		}
		x = x<<15 | uint64(d)
	}
	if x > math.MaxInt64 {
		return nil, u.fail(start, "int %d does not fit 64 bits", x)
	}
	if neg {
		return -int64(x), nil
	}
	return int64(x), nil
}
