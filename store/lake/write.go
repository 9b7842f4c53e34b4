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

// The samples file is written a batch of rows at a time through
// parquet-go's typed writer, which fills each column from the rows' field
// directly; the columns that depend on a sample's label set alone are
// worked out once per set. The stacks file, whose frames are a list, fills
// its column writers with values, each frame's name made a value once.

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

// samplesSchema is the schema of a samples file.
var samplesSchema = sync.OnceValue(func() *parquet.Schema { return parquet.SchemaOf(SampleRow{}) })

// labelColumns are the columns of a sample row that come from its label
// set, worked out once per set.
type labelColumns struct {
	row SampleRow // the label columns; a thread_name of "": the thread's
	// The integer columns, which row points to.
	stage, stageAttempt, partition int32
	task                           int64
}

// orderKey is the value of an integer column rows are sorted by: absent
// first.
func orderKey[T int32 | int64](v *T) int64 {
	if v == nil {
		return -1
	}
	return int64(*v)
}

// columnsOf sets c to the label columns of label set id of p, whose
// profile-wide labels apply to every set.
func columnsOf(c *labelColumns, p *profile.Profile, id profile.LabelSetID) {
	r := &c.row
	for _, l := range p.Labels.Merge(p.LabelSet(id)) {
		ok := true
		switch l.Name {
		case profile.LabelServiceName:
			r.Service = l.Value
		case profile.LabelAppID:
			r.App = l.Value
		case profile.LabelExecutorID:
			r.Executor = l.Value
		case profile.LabelHost:
			r.Host = l.Value
		case profile.LabelRole:
			r.Role = l.Value
		case profile.LabelThreadPool:
			r.ThreadPool = l.Value
		case profile.LabelAllocClass:
			r.AllocClass = l.Value
		case profile.LabelThreadName:
			r.ThreadName = l.Value
		case profile.LabelStageID:
			r.Stage, ok = intColumn(l.Value, &c.stage)
		case profile.LabelStageAttempt:
			r.StageAttempt, ok = intColumn(l.Value, &c.stageAttempt)
		case profile.LabelPartition:
			r.Partition, ok = intColumn(l.Value, &c.partition)
		case profile.LabelTaskID:
			r.Task, ok = intColumn(l.Value, &c.task)
		default:
			ok = false
		}
		if !ok { // another label, or a value the column cannot hold
			if r.Labels == nil {
				r.Labels = make(map[string]string)
			}
			r.Labels[l.Name] = l.Value
		}
	}
}

// intColumn sets *n to the decimal integer s and returns n, when s is one
// of n's size; else nil and false.
func intColumn[T int32 | int64](s string, n *T) (*T, bool) {
	bits := 64
	if _, ok := any(*n).(int32); ok {
		bits = 32
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return nil, false
	}
	*n = T(v)
	return n, true
}

// rowBatch is the most rows written to the columns at once.
const rowBatch = 1024

// rowPool holds batches of sample rows, to be used again.
var rowPool = sync.Pool{New: func() any { return new([rowBatch]SampleRow) }}

// samplesWriter writes the samples file of a block.
type samplesWriter struct {
	p     *profile.Profile
	block string
	cols  []labelColumns
	rank  []int32 // the label sets' order: by stage, task and id
	// states holds each thread state's name ("", a null, when unknown).
	states [256]string
	rows   *[rowBatch]SampleRow // a batch of rows, from rowPool
}

func newSamplesWriter(id string, p *profile.Profile) *samplesWriter {
	w := &samplesWriter{p: p, block: id}
	w.cols = make([]labelColumns, p.NumLabelSets())
	for i := range w.cols {
		columnsOf(&w.cols[i], p, profile.LabelSetID(i))
	}
	order := make([]int32, len(w.cols))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ra, rb := &w.cols[a].row, &w.cols[b].row
		return cmp.Or(cmp.Compare(orderKey(ra.Stage), orderKey(rb.Stage)), cmp.Compare(orderKey(ra.Task), orderKey(rb.Task)),
			cmp.Compare(a, b))
	})
	w.rank = make([]int32, len(order))
	for r, id := range order {
		w.rank[id] = int32(r)
	}
	for i := range w.states {
		w.states[i] = profile.ThreadState(i).String()
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
	p := w.p
	for len(samples) > 0 {
		batch := samples[:min(len(samples), rowBatch)]
		samples = samples[len(batch):]
		rows := w.rows[:len(batch)]
		for i, s := range batch {
			r := &rows[i]
			*r = w.cols[s.Labels].row
			r.Block = w.block
			r.Time = s.Time / 1000 // 0, no time, is null
			r.Value = s.Value
			t := &p.Types[s.Type]
			r.Type, r.Unit = t.Name, t.Unit
			r.StackID = int32(s.Stack)
			if r.ThreadName == "" {
				r.ThreadName = p.Threads[s.Thread].Name
			}
			r.ThreadState = w.states[s.State]
			r.LabelSet = int32(s.Labels)
			r.Thread = int32(s.Thread)
		}
		if _, err := pw.Write(rows); err != nil {
			return err
		}
	}
	return pw.Flush() // ends the row group
}

// WriteSamples writes the samples file of block id, whose profile
// is p, to w: one row group for each of groups, a time slice's samples,
// sorted by stage, task and label set.
func WriteSamples(w io.Writer, id string, p *profile.Profile, groups [][]profile.Sample) error {
	opts := parquetWriterOptions(noSampleBounds...)
	pw := parquet.NewGenericWriter[SampleRow](w, append(opts, samplesSchema())...)
	sw := newSamplesWriter(id, p)
	sw.rows = rowPool.Get().(*[rowBatch]SampleRow)
	defer func() {
		clear(sw.rows[:]) // no strings or maps kept alive
		rowPool.Put(sw.rows)
	}()
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

// noSampleBounds are the columns of the samples file without statistics
// or page bounds: those no filter of a lake engine would use (a sample's
// value, its ids in the block's tables, the stack a join looks up), and
// strings that are long or the same on every row.
var noSampleBounds = [][]string{
	{"block"}, {"value"}, {"unit"}, {"stack_id"}, {"service_name"}, {"stage_attempt"}, {"role"}, {"alloc_class"},
	{"thread_name"}, {"thread_state"}, {"labels", "key_value", "key"}, {"labels", "key_value", "value"},
	{"label_set"}, {"thread"},
}

// stackBatchPool holds the values of a batch of the stacks file's rows, a
// slice per column, to be used again.
var stackBatchPool = sync.Pool{New: func() any { return new([4][]parquet.Value) }}

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
	vals := stackBatchPool.Get().(*[4][]parquet.Value)
	defer func() {
		for i := range vals {
			clear(vals[i]) // no strings kept alive
			vals[i] = vals[i][:0]
		}
		stackBatchPool.Put(vals)
	}()
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
