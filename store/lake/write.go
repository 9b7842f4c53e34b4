package lake

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// The writers fill the Parquet files column by column: each value of a
// row that depends on its label set, thread, type or state alone is made
// once (a parquet.Value, its levels set) and appended for every row that
// has it, so that a row costs a few appends and no allocation.

// parquetCodec compresses the pages of both Parquet files. It is shared:
// it keeps its zstd encoders, which are costly to make, in a pool.
var parquetCodec = &zstd.Codec{Level: zstd.DefaultLevel}

// parquetWriterOptions are the options of both Parquet files: zstd pages
// with checksums, statistics in the column chunks and the page index (not
// in the page headers too, which costs a small block a fifth of its
// samples file), so that readers skip row groups and pages a filter rules
// out.
// Columns named in noBounds have none: bounds that no filter would use
// cost a small file bytes and every file the time to work them out.
func parquetWriterOptions(noBounds ...[]string) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		parquet.Compression(parquetCodec),
		parquet.DataPageStatistics(false),
		parquet.CreatedBy("sparkprof", "", ""),
		parquet.PageBufferSize(64 << 10),
	}
	for _, path := range noBounds {
		opts = append(opts, parquet.SkipPageBounds(path...))
	}
	return opts
}

// leaf is a leaf column of a schema: its index and its levels.
type leaf struct {
	index, def, rep int
}

// leafOf returns the leaf column of s at path, which must be there.
func leafOf(s *parquet.Schema, path ...string) leaf {
	lc, ok := s.Lookup(path...)
	if !ok {
		panic(fmt.Sprintf("lake: no Parquet column %v", path))
	}
	return leaf{index: lc.ColumnIndex, def: lc.MaxDefinitionLevel, rep: lc.MaxRepetitionLevel}
}

// value returns v as a value of column c.
func (c leaf) value(v parquet.Value) parquet.Value { return v.Level(0, c.def, c.index) }

// null returns a null of column c.
func (c leaf) null() parquet.Value { return parquet.NullValue().Level(0, 0, c.index) }

// str returns s as a value of column c, or a null when s is empty.
func (c leaf) str(s string) parquet.Value {
	if s == "" {
		return c.null()
	}
	return c.value(parquet.ByteArrayValue([]byte(s)))
}

// int returns the decimal integer s as a value of column c, of the
// column's size (bits), and whether s is one.
func (c leaf) int(s string, bits int) (parquet.Value, bool) {
	n, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return parquet.Value{}, false
	}
	if bits == 32 {
		return c.value(parquet.Int32Value(int32(n))), true
	}
	return c.value(parquet.Int64Value(n)), true
}

// The leaf columns of the samples file, in the order of its schema.
const (
	sBlock = iota
	sTime
	sValue
	sType
	sUnit
	sStack
	sService
	sApp
	sExecutor
	sStage
	sStageAttempt
	sTask
	sPartition
	sThreadName
	sThreadState
	sLabelKey
	sLabelValue
	sLabelSet
	sThread
	sColumns
)

// samplesSchema is the schema of a samples file and leaves its leaf
// columns, by the constants above.
var samplesSchema = sync.OnceValues(func() (*parquet.Schema, []leaf) {
	s := parquet.SchemaOf(SampleRow{})
	leaves := make([]leaf, sColumns)
	for i, path := range [sColumns][]string{
		{"block"}, {"time"}, {"value"}, {"type"}, {"unit"}, {"stack_id"}, {"service_name"}, {"app"}, {"executor"},
		{"stage"}, {"stage_attempt"}, {"task"}, {"partition"}, {"thread_name"}, {"thread_state"},
		{"labels", "key_value", "key"}, {"labels", "key_value", "value"}, {"label_set"}, {"thread"},
	} {
		leaves[i] = leafOf(s, path...)
		if leaves[i].index != i {
			panic(fmt.Sprintf("lake: Parquet column %v is column %d, want %d", path, leaves[i].index, i))
		}
	}
	return s, leaves
})

// labelColumns are the values of a sample row that come from its label
// set, worked out once per set.
type labelColumns struct {
	// fixed holds the values of the label columns, by the constants above
	// (sService to sThreadName; a null thread name: the thread's).
	fixed [sThreadState]parquet.Value
	// keys and values are the entries of the labels map.
	keys, values []parquet.Value
	// order sorts rows by stage, then task: absent first.
	stageKey, taskKey int64
}

// columnsOf works out the label columns of label set id of p, whose
// profile-wide labels apply to every set.
func columnsOf(p *profile.Profile, id profile.LabelSetID, leaves []leaf) labelColumns {
	ls := p.Labels.Merge(p.LabelSet(id))
	c := labelColumns{stageKey: -1, taskKey: -1}
	for i := sService; i < sThreadState; i++ {
		c.fixed[i] = leaves[i].null()
	}
	set := func(col int, v parquet.Value) { c.fixed[col] = v }
	for _, l := range ls {
		ok := true
		var v parquet.Value
		switch l.Name {
		case profile.LabelServiceName:
			set(sService, leaves[sService].str(l.Value))
		case profile.LabelAppID:
			set(sApp, leaves[sApp].str(l.Value))
		case profile.LabelExecutorID:
			set(sExecutor, leaves[sExecutor].str(l.Value))
		case profile.LabelThreadName:
			set(sThreadName, leaves[sThreadName].str(l.Value))
		case profile.LabelStageID:
			if v, ok = leaves[sStage].int(l.Value, 32); ok {
				set(sStage, v)
				c.stageKey = int64(v.Int32())
			}
		case profile.LabelStageAttempt:
			if v, ok = leaves[sStageAttempt].int(l.Value, 32); ok {
				set(sStageAttempt, v)
			}
		case profile.LabelPartition:
			if v, ok = leaves[sPartition].int(l.Value, 32); ok {
				set(sPartition, v)
			}
		case profile.LabelTaskID:
			if v, ok = leaves[sTask].int(l.Value, 64); ok {
				set(sTask, v)
				c.taskKey = v.Int64()
			}
		default:
			ok = false
		}
		if !ok { // another label, or a value the column cannot hold
			rep := 0
			if len(c.keys) > 0 {
				rep = leaves[sLabelKey].rep
			}
			k, val := leaves[sLabelKey], leaves[sLabelValue]
			c.keys = append(c.keys, parquet.ByteArrayValue([]byte(l.Name)).Level(rep, k.def, k.index))
			c.values = append(c.values, parquet.ByteArrayValue([]byte(l.Value)).Level(rep, val.def, val.index))
		}
	}
	if c.keys == nil { // no map
		c.keys = []parquet.Value{leaves[sLabelKey].null()}
		c.values = []parquet.Value{leaves[sLabelValue].null()}
	}
	return c
}

// rowBatch is the most rows written to the columns at once.
const rowBatch = 1024

// batchPool holds the values of a batch of rows, a slice per column, to
// be used again.
var batchPool = sync.Pool{New: func() any { return new([sColumns][]parquet.Value) }}

// getBatch returns empty slices of values from batchPool.
func getBatch() *[sColumns][]parquet.Value {
	return batchPool.Get().(*[sColumns][]parquet.Value)
}

// putBatch returns the slices of b to batchPool.
func putBatch(b *[sColumns][]parquet.Value) {
	for i := range b {
		clear(b[i]) // no strings kept alive
		b[i] = b[i][:0]
	}
	batchPool.Put(b)
}

// samplesWriter writes the samples file of a block.
type samplesWriter struct {
	p      *profile.Profile
	leaves []leaf
	block  parquet.Value
	cols   []labelColumns
	rank   []int32 // the label sets' order: by stage, task and id
	// threads, types, units and states hold the values of those columns
	// for each thread, type and state.
	threads, types, units []parquet.Value
	states                [256]parquet.Value
	vals                  *[sColumns][]parquet.Value // a batch of rows, from batchPool
}

func newSamplesWriter(id string, p *profile.Profile) *samplesWriter {
	_, leaves := samplesSchema()
	w := &samplesWriter{p: p, leaves: leaves, block: leaves[sBlock].str(id)}
	w.cols = make([]labelColumns, p.NumLabelSets())
	for i := range w.cols {
		w.cols[i] = columnsOf(p, profile.LabelSetID(i), leaves)
	}
	order := make([]int32, len(w.cols))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ca, cb := &w.cols[a], &w.cols[b]
		if c := cmp.Compare(ca.stageKey, cb.stageKey); c != 0 {
			return c
		}
		if c := cmp.Compare(ca.taskKey, cb.taskKey); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	w.rank = make([]int32, len(order))
	for r, id := range order {
		w.rank[id] = int32(r)
	}
	w.threads = make([]parquet.Value, len(p.Threads))
	for i, t := range p.Threads {
		w.threads[i] = leaves[sThreadName].str(t.Name)
	}
	for _, t := range p.Types {
		w.types = append(w.types, leaves[sType].str(t.Name))
		w.units = append(w.units, leaves[sUnit].str(t.Unit))
	}
	for i := range w.states {
		w.states[i] = leaves[sThreadState].str(profile.ThreadState(i).String())
	}
	return w
}

// sorted returns samples ordered by stage, task (absent first) and label
// set, the order of the label sets' ranks: samples itself when they are in
// that order, else a copy, put in order by a counting sort, which keeps
// the samples of one label set in the order compaction merged them.
func (w *samplesWriter) sorted(samples []profile.Sample) []profile.Sample {
	inOrder := true
	for i := 1; i < len(samples) && inOrder; i++ {
		inOrder = w.rank[samples[i-1].Labels] <= w.rank[samples[i].Labels]
	}
	if inOrder {
		return samples
	}
	start := make([]int, len(w.rank)+1)
	for _, s := range samples {
		start[w.rank[s.Labels]+1]++
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	out := make([]profile.Sample, len(samples))
	for _, s := range samples {
		k := w.rank[s.Labels]
		out[start[k]] = s
		start[k]++
	}
	return out
}

// writeGroup writes samples, sorted, as a row group of pw.
func (w *samplesWriter) writeGroup(pw *parquet.GenericWriter[SampleRow], samples []profile.Sample) error {
	samples = w.sorted(samples)
	cws := pw.ColumnWriters()
	lv := w.leaves
	for len(samples) > 0 {
		batch := samples[:min(len(samples), rowBatch)]
		samples = samples[len(batch):]
		for i := range w.vals {
			w.vals[i] = w.vals[i][:0]
		}
		v := w.vals
		for _, s := range batch {
			c := &w.cols[s.Labels]
			v[sBlock] = append(v[sBlock], w.block)
			if s.Time != 0 {
				v[sTime] = append(v[sTime], lv[sTime].value(parquet.Int64Value(s.Time/1000)))
			} else {
				v[sTime] = append(v[sTime], lv[sTime].null())
			}
			v[sValue] = append(v[sValue], lv[sValue].value(parquet.Int64Value(s.Value)))
			v[sType] = append(v[sType], w.types[s.Type])
			v[sUnit] = append(v[sUnit], w.units[s.Type])
			v[sStack] = append(v[sStack], lv[sStack].value(parquet.Int32Value(int32(s.Stack))))
			for i := sService; i < sThreadName; i++ {
				v[i] = append(v[i], c.fixed[i])
			}
			if name := c.fixed[sThreadName]; !name.IsNull() {
				v[sThreadName] = append(v[sThreadName], name)
			} else {
				v[sThreadName] = append(v[sThreadName], w.threads[s.Thread])
			}
			v[sThreadState] = append(v[sThreadState], w.states[s.State])
			v[sLabelKey] = append(v[sLabelKey], c.keys...)
			v[sLabelValue] = append(v[sLabelValue], c.values...)
			v[sLabelSet] = append(v[sLabelSet], lv[sLabelSet].value(parquet.Int32Value(int32(s.Labels))))
			v[sThread] = append(v[sThread], lv[sThread].value(parquet.Int32Value(int32(s.Thread))))
		}
		for i, cw := range cws {
			if _, err := cw.WriteRowValues(w.vals[i]); err != nil {
				return err
			}
		}
	}
	return pw.Flush() // ends the row group
}

// WriteSamples writes the samples file of block id, whose profile
// is p, to w: one row group for each of groups, a time slice's samples,
// sorted by stage, task and label set.
func WriteSamples(w io.Writer, id string, p *profile.Profile, groups [][]profile.Sample) error {
	schema, _ := samplesSchema()
	opts := parquetWriterOptions([]string{"block"}, []string{"unit"}, []string{"thread_name"},
		[]string{"labels", "key_value", "key"}, []string{"labels", "key_value", "value"})
	pw := parquet.NewGenericWriter[SampleRow](w, append(opts, schema)...)
	sw := newSamplesWriter(id, p)
	sw.vals = getBatch()
	defer putBatch(sw.vals)
	for _, g := range groups {
		if err := sw.writeGroup(pw, g); err != nil {
			return fmt.Errorf("write samples: %w", err)
		}
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write samples: %w", err)
	}
	return nil
}

// stacksSchema is the schema of a stacks file and its leaf columns: block,
// stack_id, function and frames' elements.
var stacksSchema = sync.OnceValues(func() (*parquet.Schema, [4]leaf) {
	s := parquet.SchemaOf(StackRow{})
	return s, [4]leaf{leafOf(s, "block"), leafOf(s, "stack_id"), leafOf(s, "function"), leafOf(s, "frames", "list", "element")}
})

// WriteStacks writes the stacks file of block id to w: a row for
// each stack p's samples name, its frames' names leaf first.
func WriteStacks(w io.Writer, id string, p *profile.Profile) error {
	schema, lv := stacksSchema()
	used := make([]bool, p.NumStacks())
	for _, s := range p.Samples {
		used[s.Stack] = true
	}
	// Each frame's name, made a value once.
	names := make([]parquet.Value, len(p.Frames))
	for i, f := range p.Frames {
		names[i] = parquet.ByteArrayValue([]byte(f.Name))
	}
	pw := parquet.NewGenericWriter[StackRow](w, append(parquetWriterOptions([]string{"block"}, []string{"function"},
		[]string{"frames", "list", "element"}), schema)...)
	vals := getBatch()
	defer putBatch(vals)
	flush := func() error {
		for i, cw := range pw.ColumnWriters() {
			if _, err := cw.WriteRowValues(vals[i]); err != nil {
				return err
			}
			vals[i] = vals[i][:0]
		}
		return nil
	}
	block := lv[0].str(id)
	for sid := profile.StackID(1); int(sid) < len(used); sid++ {
		if !used[sid] {
			continue
		}
		leaf := names[p.Leaf(sid)]
		vals[0] = append(vals[0], block)
		vals[1] = append(vals[1], lv[1].value(parquet.Int32Value(int32(sid))))
		vals[2] = append(vals[2], lv[2].value(leaf))
		rep := 0
		for s := sid; s != profile.NoStack; s = p.Parent(s) {
			vals[3] = append(vals[3], names[p.Leaf(s)].Level(rep, lv[3].def, lv[3].index))
			rep = lv[3].rep
		}
		if len(vals[3]) >= 8*rowBatch {
			if err := flush(); err != nil {
				return fmt.Errorf("write stacks: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return fmt.Errorf("write stacks: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write stacks: %w", err)
	}
	return nil
}
