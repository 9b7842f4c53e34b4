package store

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// The samples of a block are Apache Parquet, so that a data lake (Spark,
// DuckDB, Trino...) reads them as a table without sparkprof: a block's
// samples file holds one row per sample, one row group per time slice,
// each sorted by stage, task, thread and time, so that a filter on a
// stage, a task or a time range reads few pages; its stacks file holds one
// row per stack the samples name, its frames inline. Both carry the
// block's name, which a join of samples to stacks over many blocks needs:
// stack ids are per block. The store reads its own columns back (the ids
// of label sets and threads in the block's tables); the label columns are
// for the lake. docs/storage-format.md documents the schema.

// sampleRow is a row of a block's samples file.
type sampleRow struct {
	Block        string            `parquet:"block,dict"`
	Time         int64             `parquet:"time,optional,delta,timestamp(microsecond)"`
	Value        int64             `parquet:"value"`
	Type         string            `parquet:"type,dict"`
	Unit         string            `parquet:"unit,dict"`
	StackID      int32             `parquet:"stack_id"`
	Service      string            `parquet:"service_name,optional,dict"`
	App          string            `parquet:"app,optional,dict"`
	Executor     string            `parquet:"executor,optional,dict"`
	Host         string            `parquet:"host,optional,dict"`
	Role         string            `parquet:"role,optional,dict"`
	Stage        *int32            `parquet:"stage,optional"`
	StageAttempt *int32            `parquet:"stage_attempt,optional"`
	Task         *int64            `parquet:"task,optional"`
	Partition    *int32            `parquet:"partition,optional"`
	ThreadID     int64             `parquet:"thread_id,optional,delta"`
	ThreadName   string            `parquet:"thread_name,optional,dict"`
	ThreadState  string            `parquet:"thread_state,optional,dict"`
	Labels       map[string]string `parquet:"labels,optional"`
	LabelSet     int32             `parquet:"label_set,delta"`
	Thread       int32             `parquet:"thread,delta"`
}

// stackRow is a row of a block's stacks file.
type stackRow struct {
	Block    string   `parquet:"block,dict"`
	StackID  int32    `parquet:"stack_id,delta"`
	Function string   `parquet:"function,dict"`
	Frames   []string `parquet:"frames,list" parquet-element:",dict"`
}

// Column names the store reads back from a samples file.
const (
	colTime        = "time"
	colValue       = "value"
	colType        = "type"
	colUnit        = "unit"
	colStack       = "stack_id"
	colThreadState = "thread_state"
	colLabelSet    = "label_set"
	colThread      = "thread"
)

// The file names of a block's Parquet files, beside its block file.
const (
	samplesSuffix = ".samples.parquet"
	stacksSuffix  = ".stacks.parquet"
)

// samplesPath and stacksPath return the paths of the Parquet files of the
// block whose file is path.
func samplesPath(path string) string { return strings.TrimSuffix(path, ".block") + samplesSuffix }
func stacksPath(path string) string  { return strings.TrimSuffix(path, ".block") + stacksSuffix }

// blockID returns the name of the block whose file is path, as the
// Parquet files' block column holds it.
func blockID(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	return strings.TrimSuffix(base, ".block")
}

// labelColumns are the columns of a sample row that come from its label
// set, worked out once per set.
type labelColumns struct {
	service, app, executor, host, role string
	threadName                         string
	stage, stageAttempt, partition     *int32
	task                               *int64
	extra                              map[string]string
	// order sorts rows by stage, then task: absent first.
	stageKey, taskKey int64
}

// columnsOf works out the label columns of label set id of p, whose
// profile-wide labels apply to every set.
func columnsOf(p *profile.Profile, id profile.LabelSetID) labelColumns {
	ls := p.Labels.Merge(p.LabelSet(id))
	c := labelColumns{stageKey: -1, taskKey: -1}
	int32Of := func(l profile.Label, dst **int32, key *int64) bool {
		n, err := strconv.ParseInt(l.Value, 10, 32)
		if err != nil {
			return false
		}
		v := int32(n)
		*dst = &v
		if key != nil {
			*key = n
		}
		return true
	}
	for _, l := range ls {
		ok := true
		switch l.Name {
		case profile.LabelServiceName:
			c.service = l.Value
		case profile.LabelAppID:
			c.app = l.Value
		case profile.LabelExecutorID:
			c.executor = l.Value
		case profile.LabelHost:
			c.host = l.Value
		case profile.LabelRole:
			c.role = l.Value
		case profile.LabelThreadName:
			c.threadName = l.Value
		case profile.LabelStageID:
			ok = int32Of(l, &c.stage, &c.stageKey)
		case profile.LabelStageAttempt:
			ok = int32Of(l, &c.stageAttempt, nil)
		case profile.LabelPartition:
			ok = int32Of(l, &c.partition, nil)
		case profile.LabelTaskID:
			n, err := strconv.ParseInt(l.Value, 10, 64)
			if ok = err == nil; ok {
				c.task, c.taskKey = &n, n
			}
		default:
			ok = false
		}
		if !ok { // another label, or a value the column cannot hold
			if c.extra == nil {
				c.extra = map[string]string{}
			}
			c.extra[l.Name] = l.Value
		}
	}
	return c
}

// parquetWriterOptions are the options of both Parquet files: zstd pages
// with checksums, statistics in the column chunks and the page index (not
// in the page headers too, which costs a small block a fifth of its
// samples file), so that readers skip row groups and pages a filter rules
// out.
func parquetWriterOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&zstd.Codec{Level: zstd.DefaultLevel}),
		parquet.DataPageStatistics(false),
		parquet.CreatedBy("sparkprof", "", ""),
		parquet.PageBufferSize(64 << 10),
	}
}

// writeSamplesParquet writes the samples file of block id, whose profile
// is p, to w: one row group for each of groups, a time slice's samples,
// sorted by stage, task, label set, thread, time and stack.
func writeSamplesParquet(w io.Writer, id string, p *profile.Profile, groups [][]profile.Sample) error {
	cols := make([]labelColumns, p.NumLabelSets())
	for i := range cols {
		cols[i] = columnsOf(p, profile.LabelSetID(i))
	}
	pw := parquet.NewGenericWriter[sampleRow](w, parquetWriterOptions()...)
	var rows []sampleRow
	for _, g := range groups {
		g = slices.Clone(g)
		slices.SortFunc(g, func(a, b profile.Sample) int {
			ca, cb := &cols[a.Labels], &cols[b.Labels]
			return cmp.Or(cmp.Compare(ca.stageKey, cb.stageKey), cmp.Compare(ca.taskKey, cb.taskKey),
				cmp.Compare(a.Labels, b.Labels), cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Time, b.Time),
				cmp.Compare(a.Stack, b.Stack), cmp.Compare(a.Type, b.Type), cmp.Compare(a.State, b.State))
		})
		rows = slices.Grow(rows[:0], len(g))
		for _, s := range g {
			c := &cols[s.Labels]
			t := p.Threads[s.Thread]
			typ := p.Types[s.Type]
			r := sampleRow{
				Block: id, Time: s.Time / 1000, Value: s.Value, Type: typ.Name, Unit: typ.Unit, StackID: int32(s.Stack),
				Service: c.service, App: c.app, Executor: c.executor, Host: c.host, Role: c.role,
				Stage: c.stage, StageAttempt: c.stageAttempt, Task: c.task, Partition: c.partition,
				ThreadID: t.ID, ThreadName: cmp.Or(c.threadName, t.Name), ThreadState: s.State.String(),
				Labels: c.extra, LabelSet: int32(s.Labels), Thread: int32(s.Thread),
			}
			rows = append(rows, r)
		}
		if _, err := pw.Write(rows); err != nil {
			return fmt.Errorf("write samples: %w", err)
		}
		if err := pw.Flush(); err != nil { // ends the row group
			return fmt.Errorf("write samples: %w", err)
		}
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write samples: %w", err)
	}
	return nil
}

// writeStacksParquet writes the stacks file of block id to w: a row for
// each stack p's samples name, its frames' names leaf first.
func writeStacksParquet(w io.Writer, id string, p *profile.Profile) error {
	used := map[profile.StackID]bool{}
	for _, s := range p.Samples {
		used[s.Stack] = true
	}
	ids := slices.Sorted(maps.Keys(used))
	rows := make([]stackRow, 0, len(ids))
	var names []string // the frames of all rows, one backing array
	for _, sid := range ids {
		start := len(names)
		for s := sid; s != profile.NoStack; s = p.Parent(s) {
			names = append(names, p.Frames[p.Leaf(s)].Name)
		}
		r := stackRow{Block: id, StackID: int32(sid), Frames: names[start:len(names):len(names)]}
		if len(r.Frames) > 0 {
			r.Function = r.Frames[0]
		}
		rows = append(rows, r)
	}
	pw := parquet.NewGenericWriter[stackRow](w, parquetWriterOptions()...)
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("write stacks: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write stacks: %w", err)
	}
	return nil
}
