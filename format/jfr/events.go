package jfr

// This file is a minimal reader of JFR events by their metadata. jfr-parser
// decodes only the events it has generated code for and skips the rest;
// jdk.GarbageCollection, jdk.CPULoad, jdk.GCHeapSummary and
// jdk.NativeMethodSample are among those skipped, so they are read here
// from the field layouts that each chunk's metadata event describes.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

var errShort = errors.New("unexpected end of chunk")

// reader reads JFR's compressed integers and strings from one chunk.
type reader struct {
	b   []byte
	pos int
}

func (r *reader) varint() (uint64, error) {
	var v uint64
	for i := 0; i < 9; i++ {
		if r.pos >= len(r.b) {
			return 0, errShort
		}
		c := r.b[r.pos]
		r.pos++
		if i == 8 {
			return v | uint64(c)<<56, nil
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return v, nil
}

func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, errShort
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// string reads a JFR string: null, empty, constant pool reference (returned
// as ""), UTF-8, char array or Latin-1.
func (r *reader) string() (string, error) {
	enc, err := r.bytes(1)
	if err != nil {
		return "", err
	}
	switch enc[0] {
	case 0, 1:
		return "", nil
	case 2:
		_, err := r.varint()
		return "", err
	case 3, 5:
		n, err := r.varint()
		if err != nil {
			return "", err
		}
		b, err := r.bytes(n)
		return string(b), err
	case 4:
		n, err := r.varint()
		if err != nil {
			return "", err
		}
		if n > uint64(len(r.b)-r.pos) {
			return "", errShort
		}
		rs := make([]rune, n)
		for i := range rs {
			c, err := r.varint()
			if err != nil {
				return "", err
			}
			rs[i] = rune(c)
		}
		return string(rs), nil
	}
	return "", fmt.Errorf("unknown string encoding %d at chunk offset %d", enc[0], r.pos-1)
}

// field is one field of a JFR type.
type field struct {
	name  string
	typ   uint64
	cpool bool
	array bool
}

// class is a JFR type as the metadata describes it.
type class struct {
	name   string
	fields []field
}

// element is a node of the metadata event's element tree.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
}

const maxDepth = 32

func (r *reader) element(strs []string, depth int) (*element, error) {
	if depth > maxDepth {
		return nil, errors.New("metadata nested too deeply")
	}
	str := func() (string, error) {
		i, err := r.varint()
		if err != nil {
			return "", err
		}
		if i >= uint64(len(strs)) {
			return "", fmt.Errorf("metadata string index %d out of range", i)
		}
		return strs[i], nil
	}
	e := &element{attrs: map[string]string{}}
	var err error
	if e.name, err = str(); err != nil {
		return nil, err
	}
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	for ; n > 0; n-- {
		k, err := str()
		if err != nil {
			return nil, err
		}
		if e.attrs[k], err = str(); err != nil {
			return nil, err
		}
	}
	if n, err = r.varint(); err != nil {
		return nil, err
	}
	if n > uint64(len(r.b)-r.pos) {
		return nil, errShort
	}
	for ; n > 0; n-- {
		c, err := r.element(strs, depth+1)
		if err != nil {
			return nil, err
		}
		e.children = append(e.children, c)
	}
	return e, nil
}

// readMetadata reads the classes of the metadata event at offset off.
func readMetadata(chunk []byte, off int64) (map[uint64]*class, error) {
	r := &reader{b: chunk, pos: int(off)}
	for i := 0; i < 5; i++ { // size, type, start, duration, metadata id
		if _, err := r.varint(); err != nil {
			return nil, err
		}
	}
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(chunk)) {
		return nil, fmt.Errorf("metadata claims %d strings", n)
	}
	strs := make([]string, n)
	for i := range strs {
		if strs[i], err = r.string(); err != nil {
			return nil, err
		}
	}
	root, err := r.element(strs, 0)
	if err != nil {
		return nil, err
	}
	classes := map[uint64]*class{}
	var walk func(e *element)
	walk = func(e *element) {
		if e.name == "class" {
			id, err := strconv.ParseUint(e.attrs["id"], 10, 64)
			if err != nil {
				return // not a usable class; events of it are skipped
			}
			c := &class{name: e.attrs["name"]}
			for _, f := range e.children {
				if f.name != "field" {
					continue
				}
				t, _ := strconv.ParseUint(f.attrs["class"], 10, 64) // 0 is no type: reading such a field fails
				c.fields = append(c.fields, field{name: f.attrs["name"], typ: t,
					cpool: f.attrs["constantPool"] == "true", array: f.attrs["dimension"] == "1"})
			}
			classes[id] = c
			return
		}
		for _, c := range e.children {
			walk(c)
		}
	}
	walk(root)
	return classes, nil
}

// value is a decoded scalar field: an integer (or constant pool index), a
// float or a string. Struct values are skipped.
type value struct {
	i int64
	f float64
	s string
}

// skimmer reads event values of a chunk by its classes.
type skimmer struct {
	r       reader
	classes map[uint64]*class
}

// value reads one value of type typ.
func (s *skimmer) value(typ uint64, cpool bool, depth int) (value, error) {
	var v value
	if cpool {
		u, err := s.r.varint()
		v.i = int64(u)
		return v, err
	}
	c := s.classes[typ]
	if c == nil {
		return v, fmt.Errorf("field of unknown type %d", typ)
	}
	switch c.name {
	case "boolean", "byte":
		b, err := s.r.bytes(1)
		if err == nil {
			v.i = int64(int8(b[0]))
		}
		return v, err
	case "float":
		b, err := s.r.bytes(4)
		if err == nil {
			v.f = float64(math.Float32frombits(binary.BigEndian.Uint32(b)))
		}
		return v, err
	case "double":
		b, err := s.r.bytes(8)
		if err == nil {
			v.f = math.Float64frombits(binary.BigEndian.Uint64(b))
		}
		return v, err
	case "short", "char", "int", "long":
		u, err := s.r.varint()
		v.i = int64(u)
		return v, err
	case "java.lang.String":
		str, err := s.r.string()
		v.s = str
		return v, err
	}
	if depth > maxDepth {
		return v, errors.New("values nested too deeply")
	}
	for _, f := range c.fields {
		if _, err := s.field(f, depth+1); err != nil {
			return v, err
		}
	}
	return v, nil
}

// field reads one field, arrays included (their value is not kept).
func (s *skimmer) field(f field, depth int) (value, error) {
	if !f.array {
		return s.value(f.typ, f.cpool, depth)
	}
	n, err := s.r.varint()
	if err != nil {
		return value{}, err
	}
	if n > uint64(len(s.r.b)-s.r.pos) {
		return value{}, errShort
	}
	for ; n > 0; n-- {
		if _, err := s.value(f.typ, f.cpool, depth); err != nil {
			return value{}, err
		}
	}
	return value{}, nil
}

// event is one event read by the skimmer: its type and named field values.
type event struct {
	typ    string
	fields map[string]value
}

// wantedEvents are the events the skimmer decodes.
var wantedEvents = map[string]bool{
	"jdk.GarbageCollection":  true,
	"jdk.CPULoad":            true,
	"jdk.GCHeapSummary":      true,
	"jdk.NativeMethodSample": true,
}

// skimEvents reads the wanted events of a chunk, and the string values of
// constant pool jdk.types.GCName (GC names), calling fn for each event.
func skimEvents(chunk []byte, metaOff int64, fn func(event)) (gcNames map[int64]string, err error) {
	classes, err := readMetadata(chunk, metaOff)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	gcNames = map[int64]string{}
	s := &skimmer{r: reader{b: chunk}, classes: classes}
	// Constant pools are read only for GC names, so only when the chunk has
	// GC events: most of a profiler chunk's checkpoint bytes are stacks.
	var checkpoints [][2]int
	sawGC := false
	for pos := chunkHeaderSize; pos < len(chunk); {
		s.r.pos = pos
		size, err := s.r.varint()
		if err != nil {
			return gcNames, fmt.Errorf("event at chunk offset %d: %w", pos, err)
		}
		if size == 0 || size > uint64(len(chunk)-pos) {
			return gcNames, fmt.Errorf("event at chunk offset %d: size %d out of range", pos, size)
		}
		end := pos + int(size)
		s.r.b = chunk[:end]
		typ, err := s.r.varint()
		if err != nil {
			return gcNames, err
		}
		switch c := classes[typ]; {
		case typ == 1:
			checkpoints = append(checkpoints, [2]int{pos, end})
		case c != nil && wantedEvents[c.name]:
			sawGC = sawGC || c.name == "jdk.GarbageCollection"
			ev := event{typ: c.name, fields: map[string]value{}}
			for _, f := range c.fields {
				v, err := s.field(f, 0)
				if err != nil {
					return gcNames, fmt.Errorf("%s at chunk offset %d: field %s: %w", c.name, pos, f.name, err)
				}
				ev.fields[f.name] = v
			}
			fn(ev)
		}
		s.r.b = chunk
		pos = end
	}
	if sawGC {
		for _, cp := range checkpoints {
			s.r.b, s.r.pos = chunk[:cp[1]], cp[0]
			if _, err := s.r.varint(); err != nil { // size
				return gcNames, err
			}
			if _, err := s.r.varint(); err != nil { // type
				return gcNames, err
			}
			if err := s.checkpoint(gcNames); err != nil {
				return gcNames, fmt.Errorf("checkpoint at chunk offset %d: %w", cp[0], err)
			}
		}
		s.r.b = chunk
	}
	return gcNames, nil
}

// checkpoint reads a constant pool event, keeping GC names.
func (s *skimmer) checkpoint(gcNames map[int64]string) error {
	for i := 0; i < 3; i++ { // start, duration, delta to previous
		if _, err := s.r.varint(); err != nil {
			return err
		}
	}
	if _, err := s.r.bytes(1); err != nil { // flush / type mask
		return err
	}
	pools, err := s.r.varint()
	if err != nil {
		return err
	}
	for ; pools > 0; pools-- {
		typ, err := s.r.varint()
		if err != nil {
			return err
		}
		c := s.classes[typ]
		if c == nil {
			return fmt.Errorf("pool of unknown type %d", typ)
		}
		n, err := s.r.varint()
		if err != nil {
			return err
		}
		for ; n > 0; n-- {
			key, err := s.r.varint()
			if err != nil {
				return err
			}
			if c.name == "jdk.types.GCName" && len(c.fields) == 1 {
				v, err := s.field(c.fields[0], 0)
				if err != nil {
					return err
				}
				gcNames[int64(key)] = v.s
				continue
			}
			if _, err := s.value(typ, false, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
