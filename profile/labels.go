package profile

import (
	"slices"
	"strings"
)

// Standard label names. The CLI filters, the server's API and the UI use
// them the same way.
const (
	LabelServiceName  = "service_name" // the app name, as Pyroscope calls it
	LabelAppID        = "spark_app_id"
	LabelAppAttempt   = "spark_app_attempt"
	LabelExecutorID   = "spark_executor_id" // "driver" for the driver
	LabelHost         = "host"
	LabelRole         = "role" // "driver" or "executor"
	LabelStageID      = "spark_stage_id"
	LabelStageAttempt = "spark_stage_attempt"
	LabelTaskID       = "spark_task_id"
	LabelPartition    = "spark_partition"
	LabelRDDID        = "spark_rdd_id" // of a profile PySpark dumped per RDD
	LabelUDFID        = "spark_udf_id" // of a profile PySpark dumped per UDF
	LabelThreadPool   = "thread_pool"
	LabelThreadName   = "thread_name"
	LabelAllocClass   = "alloc_class" // class of the allocated objects (allocation and live samples)
)

// Label is one name=value pair.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Labels is a set of labels. A normalised set is sorted by name and holds
// each name at most once.
type Labels []Label

// FromMap builds a normalised label set from a map.
func FromMap(m map[string]string) Labels {
	ls := make(Labels, 0, len(m))
	for k, v := range m {
		ls = append(ls, Label{k, v})
	}
	return ls.Normalize()
}

// Normalize returns the set sorted by name, without empty values; of
// duplicate names the last one wins. It may reorder ls in place.
func (ls Labels) Normalize() Labels {
	if len(ls) == 0 {
		return nil
	}
	sorted := true
	for i := range ls {
		if ls[i].Value == "" || (i > 0 && ls[i-1].Name >= ls[i].Name) {
			sorted = false
			break
		}
	}
	if sorted {
		return ls
	}
	slices.SortStableFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	out := ls[:0]
	for _, l := range ls {
		if l.Value == "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Name == l.Name {
			out[n-1] = l
			continue
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Get returns the value of label name.
func (ls Labels) Get(name string) (string, bool) {
	for _, l := range ls {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// Match reports whether ls satisfies every matcher; a label ls lacks
// matches as "".
func (ls Labels) Match(ms []Matcher) bool {
	for _, m := range ms {
		v, _ := ls.Get(m.Name)
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// Merge returns ls with the labels of other added; other wins on conflicts.
// Both must be normalised; the result is a new normalised set.
func (ls Labels) Merge(other Labels) Labels {
	return AppendMerged(make(Labels, 0, len(ls)+len(other)), ls, other)
}

// AppendMerged appends ls.Merge(other) to dst and returns the extended
// slice: many merged sets can share one array.
func AppendMerged(dst, ls, other Labels) Labels {
	i, j := 0, 0
	for i < len(ls) && j < len(other) {
		switch {
		case ls[i].Name < other[j].Name:
			dst = append(dst, ls[i])
			i++
		case ls[i].Name > other[j].Name:
			dst = append(dst, other[j])
			j++
		default:
			dst = append(dst, other[j])
			i++
			j++
		}
	}
	dst = append(dst, ls[i:]...)
	return append(dst, other[j:]...)
}

// Without returns ls without the labels named.
func (ls Labels) Without(names ...string) Labels {
	out := make(Labels, 0, len(ls))
	for _, l := range ls {
		if !slices.Contains(names, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// Only returns the labels of ls named.
func (ls Labels) Only(names ...string) Labels {
	var out Labels
	for _, l := range ls {
		if slices.Contains(names, l.Name) {
			out = append(out, l)
		}
	}
	return out
}

// String formats the set as {a="x", b="y"}.
func (ls Labels) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(l.Value)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// key is a unique string for a normalised set, used to intern sets.
func (ls Labels) key() string {
	if len(ls) == 0 {
		return ""
	}
	n := 0
	for _, l := range ls {
		n += len(l.Name) + len(l.Value) + 2
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}
