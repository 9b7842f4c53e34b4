package jfr

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sparkprof/sparkprof/profile"
)

// snapshot is a Pyroscope LabelsSnapshot (the "labels" part of an upload of
// the Pyroscope Java agent) as the decoder uses it: each context's labels,
// looked up by context id.
//
// It is read with protowire rather than unmarshalled into the generated
// message, whose map of a map per context, and a string per entry, cost
// more than the rest of a busy executor's upload of a thousand contexts
// (see BENCHMARKS.md, "Server ingest"). Here the contexts' labels share
// one array, and the strings one string.
type snapshot struct {
	contexts spans // context id → its pairs in pairs[from:to]
	pairs    []labelPair
	strs     spans // string id → its span in text
	text     string
}

// span is a range [from, to) of a slice, or of a string.
type span struct{ from, to int32 }

// spans maps ids to spans: the ids below denseIDs (an agent numbers its
// contexts and strings from one) in a slice, the others in a map.
type spans struct {
	dense  []span // by id; a zero span is none
	sparse map[uint64]span
}

// denseIDs bounds the ids spans keeps in its slice.
const denseIDs = 1 << 16

func (t *spans) put(id uint64, s span) {
	if id < denseIDs {
		if int(id) >= len(t.dense) {
			t.dense = append(t.dense, make([]span, int(id)+1-len(t.dense))...)
		}
		t.dense[id] = s
		return
	}
	if t.sparse == nil {
		t.sparse = map[uint64]span{}
	}
	t.sparse[id] = s
}

func (t *spans) get(id uint64) (span, bool) {
	if id < denseIDs {
		if int(id) < len(t.dense) && t.dense[id] != (span{}) {
			return t.dense[id], true
		}
		return span{}, false
	}
	s, ok := t.sparse[id]
	return s, ok
}

// n counts the ids t holds.
func (t *spans) n() int {
	n := len(t.sparse)
	for _, s := range t.dense {
		if s != (span{}) {
			n++
		}
	}
	return n
}

// labelPair is a label of a context: the ids of its name and value.
type labelPair struct{ name, value int64 }

// LabelsSnapshot's fields, and those of its map entries and contexts.
const (
	snapshotContexts = 1 // map<int64, Context>
	snapshotStrings  = 2 // map<int64, string>
	contextLabels    = 1 // map<int64, int64>
	entryKey         = 1
	entryValue       = 2
)

// parseSnapshot reads a serialized LabelsSnapshot.
func parseSnapshot(b []byte) (*snapshot, error) {
	// A label takes at least six bytes of the message: room for them all.
	s := &snapshot{pairs: make([]labelPair, 0, len(b)/6)}
	var text strings.Builder
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case snapshotContexts:
			key, ctx, err := entry(v)
			if err != nil {
				return fmt.Errorf("context: %w", err)
			}
			from := len(s.pairs)
			if err := s.readContext(ctx); err != nil {
				return fmt.Errorf("context %d: %w", key, err)
			}
			// A later entry of the same id replaces an earlier one, as
			// in any protobuf map, an empty one included.
			s.contexts.put(key, span{int32(from), int32(len(s.pairs))})
		case snapshotStrings:
			key, str, err := entry(v)
			if err != nil {
				return fmt.Errorf("string: %w", err)
			}
			s.strs.put(key, span{int32(text.Len()), int32(text.Len() + len(str))})
			text.Write(str)
		}
		return nil
	})
	s.text = text.String()
	return s, err
}

// readContext appends the labels of a Context message to s.pairs.
func (s *snapshot) readContext(b []byte) error {
	n := 0
	return eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != contextLabels || typ != protowire.BytesType {
			return nil
		}
		// An entry's fields may come in any order, and a missing one is 0.
		var p labelPair
		err := eachField(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
			switch {
			case typ != protowire.VarintType:
			case num == entryKey:
				p.name = int64(n)
			case num == entryValue:
				p.value = int64(n)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n++; n > maxContextLabels {
			return fmt.Errorf("more than %d labels, where a context holds a span's or a task's few", maxContextLabels)
		}
		s.pairs = append(s.pairs, p)
		return nil
	})
}

// str returns the string of id, "" for one the snapshot lacks.
func (s *snapshot) str(id int64) string {
	sp, _ := s.strs.get(uint64(id))
	return s.text[sp.from:sp.to]
}

// scanLabels is the most labels of a context whose duplicates labels
// finds by a scan.
const scanLabels = 16

// maxContextLabels bounds the labels of one context: a context holds a
// span's or a task's few labels, and the labels of a sample are a series
// of it, as Pyroscope bounds a series' labels.
const maxContextLabels = 256

// labels returns the labels of context ctx in name order, appending them
// to buf's array; nil for a context the snapshot lacks.
func (s *snapshot) labels(ctx uint64, buf *profile.Labels) profile.Labels {
	sp, ok := s.contexts.get(ctx)
	if !ok {
		return nil
	}
	start := len(*buf)
	pairs := s.pairs[sp.from:sp.to]
	if len(pairs) > scanLabels {
		// Sorted by name id, the later of a name's labels last: a scan
		// of each label's later ones would cost the square of them.
		pairs = slices.Clone(pairs)
		slices.SortStableFunc(pairs, func(a, b labelPair) int { return cmp.Compare(a.name, b.name) })
		for i, p := range pairs {
			if i+1 < len(pairs) && pairs[i+1].name == p.name {
				continue
			}
			*buf = append(*buf, profile.Label{Name: s.str(p.name), Value: s.str(p.value)})
		}
	} else {
		for i, p := range pairs {
			// Of two labels of one name id the later wins, as in a
			// protobuf map. A context holds a few labels: a scan costs
			// less than a set.
			if slices.ContainsFunc(pairs[i+1:], func(q labelPair) bool { return q.name == p.name }) {
				continue
			}
			*buf = append(*buf, profile.Label{Name: s.str(p.name), Value: s.str(p.value)})
		}
	}
	ls := (*buf)[start:len(*buf):len(*buf)] // a later append must not write into it
	slices.SortFunc(ls, func(a, b profile.Label) int { return cmp.Compare(a.Name, b.Name) })
	return ls
}

// entry reads a map entry whose key is a varint and whose value is
// length-delimited.
func entry(b []byte) (key uint64, value []byte, err error) {
	err = eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		switch {
		case num == entryKey && typ == protowire.VarintType:
			key = n
		case num == entryValue && typ == protowire.BytesType:
			value = v
		}
		return nil
	})
	return key, value, err
}

// errSnapshot is a LabelsSnapshot that does not parse.
var errSnapshot = errors.New("malformed protobuf")

// eachField calls fn with each field of the message b: its number, wire
// type, and its bytes (length-delimited fields) or value (varints).
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errSnapshot
		}
		b = b[n:]
		var (
			v   []byte
			val uint64
		)
		switch typ {
		case protowire.VarintType:
			val, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return errSnapshot
		}
		b = b[n:]
		if err := fn(num, typ, v, val); err != nil {
			return err
		}
	}
	return nil
}
