// Package pstats decodes the profiles Python's cProfile and profile modules
// save (pstats.Stats.dump_stats, cProfile -o): a marshalled dict from each
// function, (file, first line, name), to its primitive and total call
// counts, self and cumulative seconds, and its callers with the same
// figures per caller. PySpark writes them: sc.dump_profiles (rdd_<id>.pstats,
// udf_<id>.pstats) and Spark 4's spark.profile.dump (udf_<id>_perf.pstats).
//
// A pstats file holds a call graph, not stacks. Decode makes stacks of it:
// each function's self time goes to a stack ending in it, split among its
// callers by the self time each call site spent in it, and further up by
// the callers' cumulative time (see stacks.go). The self time of every
// function is kept exactly; the paths above the first caller are an
// estimate, as in every flame graph drawn from a call graph.
package pstats

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/sparkprof/sparkprof/profile"
)

// Func names a function as pstats does.
type Func struct {
	File string // "~" for built-ins
	Line int64
	Name string
}

// String formats f as pstats prints it: file:line(name), or {name} for a
// built-in.
func (f Func) String() string {
	if f.File == "~" && f.Line == 0 {
		return "{" + f.Name + "}"
	}
	return fmt.Sprintf("%s:%d(%s)", f.File, f.Line, f.Name)
}

// Stat is one function's entry.
type Stat struct {
	Func
	PrimitiveCalls int64   // calls not made through recursion (cc)
	Calls          int64   // all calls (nc)
	Self           float64 // seconds in the function itself (tt)
	Cumulative     float64 // seconds in it and what it called (ct)
	Callers        []Edge
}

// Edge is the share of a function's figures that one caller accounts for.
// The profile module records only the call count; cProfile all four.
type Edge struct {
	Caller         int // index of the caller in the Stats
	Calls          int64
	PrimitiveCalls int64
	Self           float64
	Cumulative     float64
}

// Sniff reports whether head starts a marshalled dict whose first key is a
// tuple of a string, as a pstats file does, or an empty dict.
func Sniff(head []byte) bool {
	if len(head) < 2 || head[0]&^flagRef != typeDict {
		return false
	}
	if len(head) == 2 && head[1] == typeNull {
		return true
	}
	switch head[1] &^ flagRef {
	case typeSmallTuple:
		return len(head) >= 4 && head[2] == 3 && isString(head[3])
	case typeTuple:
		return len(head) >= 7 && bytes.Equal(head[2:6], []byte{3, 0, 0, 0}) && isString(head[6])
	}
	return false
}

func isString(code byte) bool {
	switch code &^ flagRef {
	case typeShortASCII, typeShortASCIIIn, typeASCII, typeASCIIIntern, typeUnicode, typeInterned, typeString, typeRef:
		return true
	}
	return false
}

// Read decodes the stats of a pstats file, in the file's order. source
// names it in errors, which are *profile.DecodeError.
func Read(data []byte, source string) ([]Stat, error) {
	u := &unmarshaller{data: data}
	v, err := u.object()
	if err != nil {
		var me *marshalError
		if errors.As(err, &me) {
			return nil, &profile.DecodeError{Source: source, Offset: me.offset, Msg: "pstats: " + me.msg}
		}
		return nil, err
	}
	d, ok := v.(*dict)
	if !ok {
		return nil, &profile.DecodeError{Source: source, Offset: 0, Msg: fmt.Sprintf("pstats: the file holds a %s, not the dict of functions a pstats file is", kind(v))}
	}
	if u.off != len(data) {
		return nil, &profile.DecodeError{Source: source, Offset: int64(u.off), Msg: fmt.Sprintf("pstats: %d bytes after the dict of functions", len(data)-u.off)}
	}
	r := reader{source: source, index: make(map[Func]int, len(d.keys))}
	stats := make([]Stat, len(d.keys))
	for i, k := range d.keys {
		f, err := r.funcKey(k, d.offs[i], "stats key")
		if err != nil {
			return nil, err
		}
		if _, dup := r.index[f]; dup {
			return nil, r.fail(d.offs[i], "stats key", "function %s listed twice", f)
		}
		r.index[f] = i
		stats[i].Func = f
	}
	for i, v := range d.vals {
		if err := r.stat(&stats[i], v, d.offs[i]); err != nil {
			return nil, err
		}
	}
	return stats, nil
}

type reader struct {
	source string
	index  map[Func]int
}

func (r *reader) fail(off int, field, format string, args ...any) error {
	return &profile.DecodeError{Source: r.source, Offset: int64(off), Field: field, Msg: "pstats: " + fmt.Sprintf(format, args...)}
}

// funcKey reads a (file, line, name) tuple.
func (r *reader) funcKey(v value, off int, field string) (Func, error) {
	t, ok := v.(tuple)
	if !ok || len(t) != 3 {
		return Func{}, r.fail(off, field, "want a (file, line, function) tuple, found %s", kind(v))
	}
	file, ok1 := t[0].(string)
	line, ok2 := t[1].(int64)
	name, ok3 := t[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return Func{}, r.fail(off, field, "want a (str, int, str) tuple, found (%s, %s, %s)", kind(t[0]), kind(t[1]), kind(t[2]))
	}
	return Func{File: file, Line: line, Name: name}, nil
}

// stat reads (cc, nc, tt, ct, callers).
func (r *reader) stat(s *Stat, v value, off int) error {
	field := s.Func.String()
	t, ok := v.(tuple)
	if !ok || len(t) != 5 {
		return r.fail(off, field, "want a (cc, nc, tt, ct, callers) tuple, found %s", kind(v))
	}
	var err error
	if s.PrimitiveCalls, err = r.count(t[0], off, field+".cc"); err != nil {
		return err
	}
	if s.Calls, err = r.count(t[1], off, field+".nc"); err != nil {
		return err
	}
	if s.Self, err = r.seconds(t[2], off, field+".tt"); err != nil {
		return err
	}
	if s.Cumulative, err = r.seconds(t[3], off, field+".ct"); err != nil {
		return err
	}
	callers, ok := t[4].(*dict)
	if !ok {
		return r.fail(off, field+".callers", "want a dict, found %s", kind(t[4]))
	}
	for i, k := range callers.keys {
		cf := field + ".callers"
		f, err := r.funcKey(k, callers.offs[i], cf)
		if err != nil {
			return err
		}
		e, err := r.edge(callers.vals[i], callers.offs[i], cf+"["+f.String()+"]")
		if err != nil {
			return err
		}
		ci, known := r.index[f]
		if !known {
			// pstats keeps such callers for printing; they add no time.
			continue
		}
		e.Caller = ci
		s.Callers = append(s.Callers, e)
	}
	return nil
}

// edge reads a caller's figures: (nc, cc, tt, ct) from cProfile, a call
// count from the profile module.
func (r *reader) edge(v value, off int, field string) (Edge, error) {
	if n, ok := v.(int64); ok {
		if n < 0 {
			return Edge{}, r.fail(off, field, "negative call count %d", n)
		}
		return Edge{Calls: n, PrimitiveCalls: n}, nil
	}
	t, ok := v.(tuple)
	if !ok || len(t) != 4 {
		return Edge{}, r.fail(off, field, "want a call count or an (nc, cc, tt, ct) tuple, found %s", kind(v))
	}
	var e Edge
	var err error
	if e.Calls, err = r.count(t[0], off, field+".nc"); err != nil {
		return e, err
	}
	if e.PrimitiveCalls, err = r.count(t[1], off, field+".cc"); err != nil {
		return e, err
	}
	if e.Self, err = r.seconds(t[2], off, field+".tt"); err != nil {
		return e, err
	}
	e.Cumulative, err = r.seconds(t[3], off, field+".ct")
	return e, err
}

func (r *reader) count(v value, off int, field string) (int64, error) {
	n, ok := v.(int64)
	if !ok || n < 0 {
		return 0, r.fail(off, field, "want a count (an int, 0 or more), found %s", describe(v))
	}
	return n, nil
}

// maxSeconds bounds a time, so that it fits int64 nanoseconds with room
// for sums: about 290 years.
const maxSeconds = 9e9

func (r *reader) seconds(v value, off int, field string) (float64, error) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	default:
		return 0, r.fail(off, field, "want seconds (a float), found %s", kind(v))
	}
	if math.IsNaN(f) || f < 0 || f > maxSeconds {
		return 0, &profile.DecodeError{Source: r.source, Offset: int64(off), Field: field,
			Msg: fmt.Sprintf("pstats: seconds %v not in [0, %g]", f, maxSeconds), Err: profile.ErrValueRange}
	}
	return f, nil
}

// kind names a value's Python type, for errors.
func kind(v value) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case tuple:
		return fmt.Sprintf("tuple of %d", len(v))
	case *dict:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

func describe(v value) string {
	if n, ok := v.(int64); ok {
		return fmt.Sprintf("int %d", n)
	}
	return kind(v)
}
