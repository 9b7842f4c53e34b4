// Package lake writes and reads the Parquet files of a block: its samples
// and its stacks, the tables a data lake reads.
package lake

import "strings"

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

// SampleRow is a row of a block's samples file, and its schema. An
// optional column's zero value is written as null.
type SampleRow struct {
	Block        string            `parquet:"block,dict"`
	Time         int64             `parquet:"time,optional,delta,timestamp(microsecond)"`
	Value        int64             `parquet:"value"`
	Type         string            `parquet:"type,dict"`
	Unit         string            `parquet:"unit,dict"`
	StackID      int32             `parquet:"stack_id"`
	Service      string            `parquet:"service_name,optional,dict"`
	App          string            `parquet:"app,optional,dict"`
	Executor     string            `parquet:"executor,optional,dict"`
	Stage        *int32            `parquet:"stage,optional"`
	StageAttempt *int32            `parquet:"stage_attempt,optional"`
	Task         *int64            `parquet:"task,optional"`
	Partition    *int32            `parquet:"partition,optional"`
	Host         string            `parquet:"host,optional,dict"`
	Role         string            `parquet:"role,optional,dict"`
	ThreadPool   string            `parquet:"thread_pool,optional,dict"`
	AllocClass   string            `parquet:"alloc_class,optional,dict"`
	ThreadName   string            `parquet:"thread_name,optional,dict"`
	ThreadState  string            `parquet:"thread_state,optional,dict"`
	Labels       map[string]string `parquet:"labels,optional" parquet-key:",dict" parquet-value:",dict"`
	LabelSet     int32             `parquet:"label_set,delta"`
	Thread       int32             `parquet:"thread,delta"`
}

// StackRow is a row of a block's stacks file.
type StackRow struct {
	Block    string   `parquet:"block,dict"`
	StackID  int32    `parquet:"stack_id,delta"`
	Function string   `parquet:"function,dict"`
	Frames   []string `parquet:"frames,list" parquet-element:",dict"`
}

// Column names the store reads back from a samples file.
const (
	ColTime        = "time"
	ColValue       = "value"
	ColType        = "type"
	ColUnit        = "unit"
	ColStack       = "stack_id"
	ColThreadState = "thread_state"
	ColLabelSet    = "label_set"
	ColThread      = "thread"
)

// The file names of a block's Parquet files, beside its block file.
const (
	SamplesSuffix = ".samples.parquet"
	StacksSuffix  = ".stacks.parquet"
)

// SamplesPath and StacksPath return the paths of the Parquet files of the
// block whose file is path.
func SamplesPath(path string) string { return strings.TrimSuffix(path, ".block") + SamplesSuffix }
func StacksPath(path string) string  { return strings.TrimSuffix(path, ".block") + StacksSuffix }

// BlockOf returns the block whose Parquet file is name, and whether
// name is one.
func BlockOf(name string) (string, bool) {
	for _, suffix := range []string{SamplesSuffix, StacksSuffix} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base + ".block", true
		}
	}
	return "", false
}

// BlockID returns the name of the block whose file is path, as the
// Parquet files' block column holds it.
func BlockID(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	return strings.TrimSuffix(base, ".block")
}
