package spark

import (
	"bytes"
	"strconv"
)

// The fast path for task events. TaskStart and TaskEnd lines are nearly all
// of a log's bytes, and most of each TaskEnd is accumulator and executor
// metric arrays the model does not keep. fastjson builds a value for every
// one of them; this scanner walks the line once, reads the fields the model
// needs and skips the rest without allocating. Anything it does not expect
// (escaped strings, an end reason other than Success, odd types) makes it
// give up, and the line goes to fastjson: the scanner only has to be right
// about what it accepts. A test checks it against fastjson on every task
// event of the corpus.

type scanner struct {
	b   []byte
	i   int
	bad bool
	// leave, set by an object's field, makes object return at once; its
	// caller then skips the rest of the object (skipNested(1)).
	leave bool
	// updates holds the accumulator updates of the tasks scanned, which
	// share its array (see scanTaskEvent).
	updates *[]accumUpdate
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) expect(c byte) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != c {
		s.bad = true
		return
	}
	s.i++
}

// str reads a string without escapes and returns its bytes.
func (s *scanner) str() []byte {
	s.expect('"')
	if s.bad {
		return nil
	}
	start := s.i
	j := bytes.IndexByte(s.b[s.i:], '"')
	if j < 0 {
		s.bad = true
		return nil
	}
	v := s.b[start : start+j]
	if bytes.IndexByte(v, '\\') >= 0 {
		s.bad = true // escapes: let fastjson decode it
		return nil
	}
	s.i = start + j + 1
	return v
}

func (s *scanner) num() int64 {
	s.ws()
	start := s.i
	for s.i < len(s.b) && (s.b[s.i] == '-' || (s.b[s.i] >= '0' && s.b[s.i] <= '9')) {
		s.i++
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.bad = true
		return 0
	}
	n, ok := parseInt(s.b[start:s.i])
	if !ok {
		s.bad = true
	}
	return n
}

// parseInt parses a decimal integer as strconv.ParseInt does: by hand
// when it has at most 18 digits, which cannot overflow.
func parseInt(b []byte) (int64, bool) {
	d := b
	if len(d) > 0 && (d[0] == '-' || d[0] == '+') {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if b[0] == '-' {
		n = -n
	}
	return n, true
}

func (s *scanner) boolean() bool {
	s.ws()
	switch {
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return false
	}
	s.bad = true
	return false
}

// skip skips one value of any type.
func (s *scanner) skip() {
	s.ws()
	if s.i >= len(s.b) {
		s.bad = true
		return
	}
	switch c := s.b[s.i]; c {
	case '"':
		s.i++
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '\\':
				s.i += 2
				continue
			case '"':
				s.i++
				return
			}
			s.i++
		}
		s.bad = true
	case '{', '[':
		s.skipNested(0)
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\n', '\t', '\r':
				return
			}
			s.i++
		}
	}
}

// skipNested skips to the end of the container depth levels deep at s.i:
// 0 skips the container that starts there, 1 the rest of the one s.i is
// in.
func (s *scanner) skipNested(depth int) {
	// The hot loop of the scanner: accumulator arrays are most of a
	// TaskEnd. Plain bytes are skipped by table lookup, strings by
	// searching for their closing quote.
	b, i := s.b, s.i
	for i < len(b) {
		c := b[i]
		if !structural[c] {
			i++
			continue
		}
		switch c {
		case '"':
			end, ok := stringEnd(b, i+1)
			if !ok {
				s.bad = true
				return
			}
			i = end + 1
		case '{', '[':
			depth++
			i++
		default: // '}', ']'
			depth--
			i++
			if depth == 0 {
				s.i = i
				return
			}
		}
	}
	s.bad = true
}

// structural marks the bytes skip must look at inside containers.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// stringEnd returns the index of the quote closing a string whose content
// starts at i.
func stringEnd(b []byte, i int) (int, bool) {
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return 0, false
		}
		j := i + k
		n := 0
		for m := j - 1; m >= 0 && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return j, true
		}
		i = j + 1
	}
}

// once reports whether field bit of an object is met for the first time.
// A repeated key makes the scanner give up: fastjson, which takes the
// first of duplicate keys, decides.
func (s *scanner) once(seen *uint64, bit uint) bool {
	if *seen&(1<<bit) != 0 {
		s.bad = true
		return false
	}
	*seen |= 1 << bit
	return true
}

// object calls field for each key of an object; field must consume the
// value (or call skip).
func (s *scanner) object(field func(key []byte)) {
	s.expect('{')
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return
	}
	for !s.bad {
		k := s.str()
		s.expect(':')
		if s.bad {
			return
		}
		field(k)
		if s.leave {
			return
		}
		s.ws()
		if s.i >= len(s.b) {
			s.bad = true
			return
		}
		if s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.b[s.i] == '}' {
			s.i++
			return
		}
		s.bad = true
	}
}

// taskInfo reads a "Task Info" object and reports its Killed flag.
func (s *scanner) taskInfo(t *Task) (killed bool) {
	t.Partition = -1
	var seen1 uint64
	s.object(func(k []byte) {
		switch string(k) {
		case "Task ID":
			if !s.once(&seen1, 0) {
				return
			}
			t.ID = s.num()
		case "Index":
			if !s.once(&seen1, 1) {
				return
			}
			t.Index = int(s.num())
		case "Attempt":
			if !s.once(&seen1, 2) {
				return
			}
			t.Attempt = int(s.num())
		case "Partition ID":
			if !s.once(&seen1, 3) {
				return
			}
			t.Partition = int(s.num())
		case "Launch Time":
			if !s.once(&seen1, 4) {
				return
			}
			t.LaunchMs = s.num()
		case "Executor ID":
			if !s.once(&seen1, 5) {
				return
			}
			t.ExecutorID = string(s.str())
		case "Host":
			if !s.once(&seen1, 6) {
				return
			}
			t.Host = string(s.str())
		case "Locality":
			if !s.once(&seen1, 7) {
				return
			}
			t.Locality = string(s.str())
		case "Speculative":
			if !s.once(&seen1, 8) {
				return
			}
			t.Speculative = s.boolean()
		case "Getting Result Time":
			if !s.once(&seen1, 9) {
				return
			}
			t.FetchStartMs = s.num()
		case "Finish Time":
			if !s.once(&seen1, 10) {
				return
			}
			t.FinishMs = s.num()
		case "Killed":
			if !s.once(&seen1, 11) {
				return
			}
			killed = s.boolean()
		case "Accumulables":
			if !s.once(&seen1, 12) {
				return
			}
			all := s.accumulables(*s.updates)
			if start := len(*s.updates); len(all) > start {
				t.accums = all[start:len(all):len(all)]
			}
			*s.updates = all
		default:
			s.skip()
		}
	})
	return killed
}

// accumulables reads a task's "Accumulables" list into updates: the
// updates of its accumulators other than its task metrics whose update is
// an integer, SQL metrics among them.
func (s *scanner) accumulables(updates []accumUpdate) []accumUpdate {
	s.expect('[')
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return updates
	}
	for !s.bad {
		s.ws()
		if u, updated, ok := s.sparkAccumulable(); ok {
			if updated {
				updates = append(updates, u)
			}
		} else {
			updates = s.accumulable(updates)
		}
		s.ws()
		if s.i >= len(s.b) {
			s.bad = true
			break
		}
		if s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.b[s.i] == ']' {
			s.i++
			break
		}
		s.bad = true
	}
	return updates
}

// Spark writes an accumulable's fields in this order, without spaces.
var (
	accumIDKey     = []byte(`{"ID":`)
	accumNameKey   = []byte(`,"Name":`)
	accumUpdateKey = []byte(`,"Update":`)
	metricName     = []byte(`"` + taskMetricPrefix)
)

// sparkAccumulable reads an accumulable written as Spark writes them,
// {"ID":n,"Name":"...","Update":v,...}, reporting its update (updated: an
// integer update of an accumulator other than a task metric's) and ok. On
// any other form it reports !ok having read nothing, and accumulable reads
// it field by field.
func (s *scanner) sparkAccumulable() (u accumUpdate, updated, ok bool) {
	b, i := s.b, s.i
	if !bytes.HasPrefix(b[i:], accumIDKey) {
		return u, false, false
	}
	i += len(accumIDKey)
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	id, isInt := parseInt(b[start:i])
	if !isInt || !bytes.HasPrefix(b[i:], accumNameKey) {
		return u, false, false
	}
	i += len(accumNameKey)
	if bytes.HasPrefix(b[i:], metricName) {
		s.i = i
		s.skipNested(1)
		return u, false, true
	}
	if i >= len(b) || b[i] != '"' {
		return u, false, false
	}
	end, closed := stringEnd(b, i+1)
	if !closed || !bytes.HasPrefix(b[end+1:], accumUpdateKey) {
		return u, false, false
	}
	s.i = end + 1 + len(accumUpdateKey)
	start = s.i
	s.skip()
	u.id = id
	u.value, updated = integer(b[start:s.i])
	s.skipNested(1)
	return u, updated, true
}

// accumulable reads one accumulable of any form, field by field, appending
// its update to updates as sparkAccumulable reports it.
func (s *scanner) accumulable(updates []accumUpdate) []accumUpdate {
	var u accumUpdate
	var seen uint64
	updated, metric := false, false
	s.object(func(k []byte) {
		switch string(k) {
		case "ID":
			if s.once(&seen, 0) {
				u.id = s.num()
			}
		case "Update":
			if s.once(&seen, 1) {
				start := s.i
				s.skip()
				u.value, updated = integer(s.b[start:s.i])
			}
		case "Name":
			if s.once(&seen, 2) {
				s.ws()
				name := s.i
				s.skip()
				// A task metric's: the rest of it is not read.
				metric = bytes.HasPrefix(s.b[name:s.i], metricName)
			}
		default:
			s.skip()
		}
		// The rest (Value, Internal, Metadata...) is not read
		// either, once the three fields are: fastjson too takes
		// the first of duplicate keys.
		s.leave = metric || seen == 0b111
	})
	if s.leave {
		s.leave = false
		s.skipNested(1)
	}
	if updated && !metric {
		updates = append(updates, u)
	}
	return updates
}

// integer reads a JSON value's bytes as an integer, written as a number
// or as a string of one.
func integer(raw []byte) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		raw = raw[1 : len(raw)-1]
	}
	return parseInt(raw)
}

// metrics reads a "Task Metrics" object, or one of the objects of numbers
// in it, into m by fields (taskMetricFields).
func (s *scanner) metrics(m *TaskMetrics, fields []metricField) {
	var seen uint64
	next := 0 // the field the next key most likely is: Spark writes them in order
	s.object(func(k []byte) {
		i := metricIndex(fields, next, k)
		if i < 0 {
			s.skip()
			return
		}
		next = i + 1
		if !s.once(&seen, uint(i)) {
			return
		}
		if f := &fields[i]; f.field != nil {
			*f.field(m) = s.num()
		} else {
			s.metrics(m, f.fields)
		}
	})
}

// metricIndex returns the index of the field of key in fields, trying
// fields[next] first, or -1 when fields has none.
func metricIndex(fields []metricField, next int, key []byte) int {
	if next < len(fields) && fields[next].key == string(key) {
		return next
	}
	for i := range fields {
		if fields[i].key == string(key) {
			return i
		}
	}
	return -1
}

// scanTaskEvent parses a TaskStart or a successful TaskEnd line without
// building values. ok is false when the line needs the full parser. The
// task's accumulator updates are appended to updates, when not nil, and
// share its array: the caller keeps it until the task is applied, then
// reuses it, so that a batch of lines allocates them once.
func scanTaskEvent(line []byte, updates *[]accumUpdate) (t *Task, end bool, ok bool) {
	if updates == nil {
		updates = new([]accumUpdate)
	}
	s := scanner{b: line, updates: updates}
	t = &Task{}
	var event []byte
	var info, reasonOK bool
	killed := false
	var seen7 uint64
	s.object(func(k []byte) {
		switch string(k) {
		case "Event":
			if !s.once(&seen7, 0) {
				return
			}
			event = s.str()
		case "Stage ID":
			if !s.once(&seen7, 1) {
				return
			}
			t.StageID = int(s.num())
		case "Stage Attempt ID":
			if !s.once(&seen7, 2) {
				return
			}
			t.StageAttempt = int(s.num())
		case "Task Info":
			if !s.once(&seen7, 3) {
				return
			}
			killed = s.taskInfo(t)
			info = true
		case "Task End Reason":
			if !s.once(&seen7, 4) {
				return
			}
			s.object(func(k []byte) {
				if string(k) == "Reason" && string(s.str()) == "Success" {
					reasonOK = true
					return
				}
				s.skip()
			})
		case "Task Metrics":
			if !s.once(&seen7, 5) {
				return
			}
			s.metrics(&t.Metrics, taskMetricFields)
		default:
			s.skip()
		}
	})
	s.ws()
	if s.bad || s.i != len(line) || !info {
		return nil, false, false
	}
	switch string(event) {
	case "SparkListenerTaskStart":
		t.Status = "RUNNING"
		return t, false, true
	case "SparkListenerTaskEnd":
		if !reasonOK || killed {
			return nil, false, false
		}
		t.Status = "SUCCESS"
		return t, true, true
	}
	return nil, false, false
}
