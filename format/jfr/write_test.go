package jfr

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

// testClass declares a class for testChunk; each field is "name:classID",
// with a "[]" suffix for an array and a "*" suffix for a constant pool
// reference.
type testClass struct {
	id     int
	name   string
	fields []string
}

// testChunk writes a one-chunk recording: metadata declaring classes, one
// constant pool event holding pools (each: class id, then its encoded
// entries), then events.
func testChunk(classes []testClass, pools [][]byte, events [][]byte) []byte {
	var strs []string
	index := map[string]int{}
	str := func(s string) uint64 {
		if i, ok := index[s]; ok {
			return uint64(i)
		}
		index[s] = len(strs)
		strs = append(strs, s)
		return uint64(len(strs) - 1)
	}
	var el []byte // the element tree, root → metadata → classes → fields
	el = binary.AppendUvarint(el, str("root"))
	el = append(el, 0, 1)
	el = binary.AppendUvarint(el, str("metadata"))
	el = append(el, 0)
	el = binary.AppendUvarint(el, uint64(len(classes)))
	for _, c := range classes {
		el = binary.AppendUvarint(el, str("class"))
		el = append(el, 2)
		el = binary.AppendUvarint(el, str("id"))
		el = binary.AppendUvarint(el, str(strconv.Itoa(c.id)))
		el = binary.AppendUvarint(el, str("name"))
		el = binary.AppendUvarint(el, str(c.name))
		el = binary.AppendUvarint(el, uint64(len(c.fields)))
		for _, f := range c.fields {
			name, typ, _ := strings.Cut(f, ":")
			typ, cpool := strings.CutSuffix(typ, "*")
			typ, array := strings.CutSuffix(typ, "[]")
			el = binary.AppendUvarint(el, str("field"))
			attrs := [][2]string{{"name", name}, {"class", typ}}
			if array {
				attrs = append(attrs, [2]string{"dimension", "1"})
			}
			if cpool {
				attrs = append(attrs, [2]string{"constantPool", "true"})
			}
			el = binary.AppendUvarint(el, uint64(len(attrs)))
			for _, a := range attrs {
				el = binary.AppendUvarint(el, str(a[0]))
				el = binary.AppendUvarint(el, str(a[1]))
			}
			el = append(el, 0)
		}
	}
	var meta []byte // type 0, start, duration, id, strings, elements
	meta = append(meta, 0, 0, 0, 0)
	meta = binary.AppendUvarint(meta, uint64(len(strs)))
	for _, s := range strs {
		meta = append(meta, strUTF8)
		meta = binary.AppendUvarint(meta, uint64(len(s)))
		meta = append(meta, s...)
	}
	meta = append(meta, el...)

	cp := []byte{1, 0, 0, 0, 0} // type 1, start, duration, delta, flush
	cp = binary.AppendUvarint(cp, uint64(len(pools)))
	for _, p := range pools {
		cp = append(cp, p...)
	}

	out := make([]byte, chunkHeaderSize)
	sized := func(b []byte) []byte { // an event: its size, then b
		n := len(b) + 1
		for binary.PutUvarint(make([]byte, 10), uint64(n)) != n-len(b) {
			n++
		}
		return append(binary.AppendUvarint(nil, uint64(n)), b...)
	}
	for _, e := range events {
		out = append(out, sized(e)...)
	}
	cpOff := len(out)
	out = append(out, sized(cp)...)
	metaOff := len(out)
	out = append(out, sized(meta)...)
	copy(out, magic)
	be := binary.BigEndian
	be.PutUint16(out[4:], 2)
	be.PutUint64(out[8:], uint64(len(out)))
	be.PutUint64(out[16:], uint64(cpOff))
	be.PutUint64(out[24:], uint64(metaOff))
	be.PutUint64(out[32:], 1e18)
	be.PutUint64(out[40:], 1e9)
	be.PutUint64(out[56:], 1e9)
	be.PutUint32(out[64:], compressedInts)
	return out
}

// TestNestedEmptyStructs: arrays of arrays of empty structs take no bytes
// per element; reading them is bounded by the data's size, not its square.
func TestNestedEmptyStructs(t *testing.T) {
	classes := []testClass{
		{id: 20, name: "long"},
		{id: 100, name: "test.Outer", fields: []string{"a:101[]"}},
		{id: 101, name: "test.Inner", fields: []string{"b:102[]"}},
		{id: 102, name: "test.Empty"},
	}
	const n = 20000
	pool := binary.AppendUvarint(nil, 100) // class
	pool = append(pool, 1, 1)              // one entry, key 1
	pool = binary.AppendUvarint(pool, n)   // n inner arrays
	for range n {
		pool = binary.AppendUvarint(pool, n) // of n empty structs each
	}
	_, err := Decode(testChunk(classes, [][]byte{pool}, nil), "nested.jfr")
	if !errors.Is(err, errSteps) {
		t.Errorf("err = %v, want %v", err, errSteps)
	}
}

// tinyRecording is a chunk with one CPU sample of a two-frame stack on a
// named thread, built from scratch: a seed small enough for fuzzing to
// mutate every part of a chunk.
func tinyRecording() []byte {
	classes := []testClass{
		{id: 20, name: "long"}, {id: 21, name: "int"}, {id: 22, name: "boolean"}, {id: 23, name: "java.lang.String"},
		{id: 30, name: "java.lang.Thread", fields: []string{"osName:23", "osThreadId:20", "javaName:23", "javaThreadId:20"}},
		{id: 31, name: "jdk.types.Symbol", fields: []string{"string:23"}},
		{id: 32, name: "java.lang.Class", fields: []string{"name:31*"}},
		{id: 33, name: "jdk.types.Method", fields: []string{"type:32*", "name:31*"}},
		{id: 34, name: "jdk.types.StackFrame", fields: []string{"method:33*", "lineNumber:21", "bytecodeIndex:21"}},
		{id: 35, name: "jdk.types.StackTrace", fields: []string{"truncated:22", "frames:34[]"}},
		{id: 101, name: "jdk.ExecutionSample", fields: []string{"startTime:20", "sampledThread:30*", "stackTrace:35*"}},
	}
	s := func(v string) []byte { return append([]byte{strUTF8, byte(len(v))}, v...) }
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	pools := [][]byte{
		cat([]byte{31, 3}, []byte{1}, s("pkg/Main"), []byte{2}, s("run"), []byte{3}, s("work")),
		{32, 1, 1, 1},                       // class 1: pkg/Main
		{33, 2, 1, 1, 2, 2, 1, 3},           // methods 1 (run) and 2 (work) of class 1
		{35, 1, 7, 0, 2, 2, 12, 0, 1, 5, 0}, // trace 7: work:12 called from run:5
		cat([]byte{30, 1, 9}, s("os"), []byte{42}, s("Executor task launch worker for task 3.0 in stage 1.0 (TID 3)"), []byte{3}),
	}
	event := []byte{101, 0x80, 0x94, 0xeb, 0xdc, 0x03, 9, 7} // at 1e9 ticks (one second into the chunk), thread 9, trace 7
	return testChunk(classes, pools, [][]byte{event})
}

func TestTinyRecording(t *testing.T) {
	p, err := Decode(tinyRecording(), "tiny.jfr")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 1 {
		t.Fatalf("%d samples, want 1", len(p.Samples))
	}
	smp := p.Samples[0]
	var names []string
	for _, f := range p.Stack(smp.Stack, nil) {
		names = append(names, p.Frames[f].Name+":"+strconv.Itoa(int(p.Frames[f].Line)))
	}
	th := p.Threads[smp.Thread]
	if got := strings.Join(names, ";"); got != "pkg.Main.run:5;pkg.Main.work:12" ||
		th.ID != 3 || !strings.HasPrefix(th.Name, "Executor task") || p.Types[smp.Type] != profile.TypeCPU || smp.Time != 1e18+1e9 {
		t.Errorf("stack %s, thread %+v, type %v, time %d", got, th, p.Types[smp.Type], smp.Time)
	}
}
