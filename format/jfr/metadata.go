package jfr

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync"
)

// kind is how a value of a class is written.
type kind uint8

const (
	kindStruct kind = iota // its fields, in order
	kindVarint             // short, char, int, long: a compressed integer
	kindByte               // boolean, byte
	kindFloat              // four bytes, big-endian
	kindDouble             // eight bytes, big-endian
	kindString             // java.lang.String
)

var primitiveKinds = map[string]kind{
	"boolean": kindByte, "byte": kindByte,
	"short": kindVarint, "char": kindVarint, "int": kindVarint, "long": kindVarint,
	"float": kindFloat, "double": kindDouble,
	"java.lang.String": kindString,
}

// role names a field the decoder keeps, by the field's name. Fields of
// other names are read past.
type role uint8

const (
	roleNone role = iota
	roleStartTime
	roleDuration
	roleSumOfPauses
	roleThread // eventThread, sampledThread
	roleStackTrace
	roleState
	roleContextID
	roleObjectClass
	roleTLABSize
	roleAllocationSize
	roleWeight
	roleSamples
	roleID
	roleName
	roleValue
	roleJVMUser
	roleJVMSystem
	roleMachineTotal
	roleHeapUsed
	roleType // Method.type: the class of a method
	roleString
	roleOSName
	roleOSThreadID
	roleJavaName
	roleJavaThreadID
	roleFrames
	roleMethod
	roleLineNumber
	numRoles
)

var roleOf = map[string]role{
	"startTime": roleStartTime, "duration": roleDuration, "sumOfPauses": roleSumOfPauses,
	"eventThread": roleThread, "sampledThread": roleThread,
	"stackTrace": roleStackTrace, "state": roleState, "contextId": roleContextID,
	"objectClass": roleObjectClass, "tlabSize": roleTLABSize,
	"allocationSize": roleAllocationSize, "weight": roleWeight, "samples": roleSamples,
	"id": roleID, "name": roleName, "value": roleValue,
	"jvmUser": roleJVMUser, "jvmSystem": roleJVMSystem, "machineTotal": roleMachineTotal,
	"heapUsed": roleHeapUsed, "type": roleType, "string": roleString,
	"osName": roleOSName, "osThreadId": roleOSThreadID,
	"javaName": roleJavaName, "javaThreadId": roleJavaThreadID,
	"frames": roleFrames, "method": roleMethod, "lineNumber": roleLineNumber,
}

// eventKind is an event type the decoder turns into samples, series or
// settings.
type eventKind uint8

const (
	evNone eventKind = iota
	evExecutionSample
	evWallClockSample
	evAllocInNewTLAB
	evAllocOutsideTLAB
	evAllocSample
	evMonitorEnter
	evThreadPark
	evLiveObject
	evActiveSetting
	evNativeMethodSample
	evGarbageCollection
	evCPULoad
	evGCHeapSummary
	numEventKinds
)

var eventKinds = map[string]eventKind{
	"jdk.ExecutionSample":             evExecutionSample,
	"profiler.WallClockSample":        evWallClockSample,
	"jdk.ObjectAllocationInNewTLAB":   evAllocInNewTLAB,
	"jdk.ObjectAllocationOutsideTLAB": evAllocOutsideTLAB,
	"jdk.ObjectAllocationSample":      evAllocSample,
	"jdk.JavaMonitorEnter":            evMonitorEnter,
	"jdk.ThreadPark":                  evThreadPark,
	"profiler.LiveObject":             evLiveObject,
	"jdk.ActiveSetting":               evActiveSetting,
	"jdk.NativeMethodSample":          evNativeMethodSample,
	"jdk.GarbageCollection":           evGarbageCollection,
	"jdk.CPULoad":                     evCPULoad,
	"jdk.GCHeapSummary":               evGCHeapSummary,
}

// poolKind is a constant pool the decoder resolves references into.
type poolKind uint8

const (
	poolNone poolKind = iota
	poolStackTrace
	poolThread
	poolMethod
	poolClass
	poolSymbol
	poolThreadState
	poolGCName
	numPoolKinds
)

var poolKinds = map[string]poolKind{
	"jdk.types.StackTrace":  poolStackTrace,
	"java.lang.Thread":      poolThread,
	"jdk.types.Method":      poolMethod,
	"java.lang.Class":       poolClass,
	"jdk.types.Symbol":      poolSymbol,
	"jdk.types.ThreadState": poolThreadState,
	"jdk.types.GCName":      poolGCName,
}

// class is a JFR type as a chunk's metadata describes it. Classes are
// shared between decodes (see loadMetadata) and never modified.
type class struct {
	id     uint64
	name   string
	index  int // position in metadata.classes
	kind   kind
	fields []field
	event  eventKind
	pool   poolKind
	// chunkHeader marks jdk.types.ChunkHeader, whose constants are raw
	// copies of a chunk header rather than its declared fields.
	chunkHeader bool
	// varints holds, for a struct made only of compressed integers and
	// constant pool keys (a stack frame, say), the role of each field in
	// order; it is nil for other classes.
	varints []role
}

// field is one field of a class.
type field struct {
	name  string
	class *class
	cpool bool // the value is a constant pool key
	array bool
	role  role
}

// metadata is the type system of a chunk.
type metadata struct {
	classes []*class
	small   []*class // by id, for ids below maxSmallID
	large   map[uint64]*class
	// execSample is jdk.ExecutionSample, whose settings say the CPU
	// sampling period.
	execSample *class
	// pools are the classes of the constant pools the decoder resolves,
	// by kind (the first class of each name).
	pools [numPoolKinds]*class
}

const maxSmallID = 1 << 12

func (m *metadata) class(id uint64) *class {
	if id < uint64(len(m.small)) {
		return m.small[id]
	}
	return m.large[id]
}

// metadataCache keeps the metadata of recent chunks by content: every chunk
// of a JVM, and of JVMs of one version, declares the same types, and
// reading them costs more than many events.
var metadataCache struct {
	sync.Mutex
	seed    maphash.Seed
	entries map[uint64]cachedMetadata
}

type cachedMetadata struct {
	body []byte // the event after its header
	md   *metadata
}

const metadataCacheSize = 64

// loadMetadata returns the metadata of the event at offset off of chunk.
func loadMetadata(chunk []byte, off int64) (*metadata, error) {
	r := &reader{b: chunk, pos: int(off)}
	size := r.varint()
	if r.err != nil || size == 0 || size > uint64(len(chunk))-uint64(off) {
		return nil, fmt.Errorf("metadata event size %d out of range at chunk offset %d", size, off)
	}
	raw := chunk[off : off+int64(size)]
	// The event's header (its size, type, start and duration, and the
	// metadata's id) differs from chunk to chunk: the cache is keyed by
	// what follows, the declarations. Skip the four fields past the size.
	r.at(raw, r.pos-int(off))
	for range 4 {
		r.varint()
	}
	if r.err != nil {
		return nil, fmt.Errorf("metadata event header at chunk offset %d: %w", off, r.err)
	}
	body := raw[r.pos:]

	c := &metadataCache
	c.Lock()
	if c.entries == nil {
		c.seed = maphash.MakeSeed()
		c.entries = make(map[uint64]cachedMetadata)
	}
	h := maphash.Bytes(c.seed, body)
	e, ok := c.entries[h]
	c.Unlock()
	if ok && bytes.Equal(e.body, body) {
		return e.md, nil
	}

	md, err := readMetadata(body)
	if err != nil {
		return nil, err
	}
	c.Lock()
	if len(c.entries) >= metadataCacheSize {
		clear(c.entries)
	}
	c.entries[h] = cachedMetadata{body: bytes.Clone(body), md: md}
	c.Unlock()
	return md, nil
}

// element is a node of the metadata event's element tree.
type element struct {
	name     string
	attrs    []attr
	children []*element
}

type attr struct{ key, value string }

func (e *element) attr(key string) string {
	for _, a := range e.attrs {
		if a.key == key {
			return a.value
		}
	}
	return ""
}

const maxDepth = 32

// readMetadata reads the body of a metadata event (what follows its
// header): a string table, then a tree of elements whose "class" elements
// declare the types and their fields.
func readMetadata(body []byte) (*metadata, error) {
	r := &reader{b: body}
	strs := make([]string, r.count(1))
	for i := range strs {
		strs[i] = string(r.string())
	}
	if r.err != nil {
		return nil, fmt.Errorf("metadata strings: %w", r.err)
	}
	root, err := readElement(r, strs, 0)
	if err != nil {
		return nil, fmt.Errorf("metadata elements: %w", err)
	}
	md := &metadata{large: map[uint64]*class{}}
	var fields [][]*element
	var walk func(e *element)
	walk = func(e *element) {
		if e.name != "class" {
			for _, c := range e.children {
				walk(c)
			}
			return
		}
		id, err := strconv.ParseUint(e.attr("id"), 10, 64)
		if err != nil || md.class(id) != nil {
			return // not a usable class: events of it are skipped
		}
		c := &class{id: id, name: e.attr("name"), index: len(md.classes)}
		c.kind = primitiveKinds[c.name]
		c.event = eventKinds[c.name]
		c.pool = poolKinds[c.name]
		c.chunkHeader = c.name == "jdk.types.ChunkHeader"
		if c.event == evExecutionSample {
			md.execSample = c
		}
		if c.pool != poolNone && md.pools[c.pool] == nil {
			md.pools[c.pool] = c
		}
		md.classes = append(md.classes, c)
		if id < maxSmallID {
			if int(id) >= len(md.small) {
				md.small = append(md.small, make([]*class, int(id)+1-len(md.small))...)
			}
			md.small[id] = c
		} else {
			md.large[id] = c
		}
		fields = append(fields, e.children)
	}
	walk(root)
	// Fields name their type by id, possibly declared later.
	for i, c := range md.classes {
		for _, f := range fields[i] {
			if f.name != "field" {
				continue
			}
			id, err := strconv.ParseUint(f.attr("class"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("class %s: field %s: type %q is not a number", c.name, f.attr("name"), f.attr("class"))
			}
			t := md.class(id)
			if t == nil {
				return nil, fmt.Errorf("class %s: field %s: undeclared type %d", c.name, f.attr("name"), id)
			}
			name := f.attr("name")
			c.fields = append(c.fields, field{
				name:  name,
				class: t,
				cpool: f.attr("constantPool") == "true",
				array: f.attr("dimension") == "1",
				role:  roleOf[name],
			})
		}
	}
	for _, c := range md.classes {
		for _, f := range c.fields {
			if f.array || !f.cpool && f.class.kind != kindVarint {
				c.varints = nil
				break
			}
			c.varints = append(c.varints, f.role)
		}
	}
	if err := checkNesting(md); err != nil {
		return nil, err
	}
	return md, nil
}

// checkNesting rejects struct fields that nest deeper than maxDepth,
// recursive ones included, so reading values never recurses without
// bound.
func checkNesting(md *metadata) error {
	depth := make([]int, len(md.classes)) // 0 unknown, -1 in progress
	var visit func(c *class) int
	visit = func(c *class) int {
		switch depth[c.index] {
		case -1:
			return maxDepth + 1
		case 0:
		default:
			return depth[c.index]
		}
		depth[c.index] = -1
		d := 1
		for _, f := range c.fields {
			if !f.cpool && f.class.kind == kindStruct {
				d = max(d, 1+visit(f.class))
			}
		}
		depth[c.index] = min(d, maxDepth+1)
		return depth[c.index]
	}
	for _, c := range md.classes {
		if visit(c) > maxDepth {
			return fmt.Errorf("class %s: fields nest deeper than %d levels", c.name, maxDepth)
		}
	}
	return nil
}

func readElement(r *reader, strs []string, depth int) (*element, error) {
	if depth > maxDepth {
		return nil, errors.New("elements nested too deeply")
	}
	str := func() string {
		i := r.varint()
		if i >= uint64(len(strs)) {
			r.fail(fmt.Errorf("string index %d out of range", i))
			return ""
		}
		return strs[i]
	}
	e := &element{name: str()}
	e.attrs = make([]attr, r.count(2))
	for i := range e.attrs {
		e.attrs[i] = attr{str(), str()}
	}
	n := r.count(3)
	for ; n > 0 && r.err == nil; n-- {
		c, err := readElement(r, strs, depth+1)
		if err != nil {
			return nil, err
		}
		e.children = append(e.children, c)
	}
	return e, r.err
}
