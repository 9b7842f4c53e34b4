package spark

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/valyala/fastjson"
)

// What a parsed line is.
const (
	resOther     = iota // any event but a task event: the builder parses it
	resTaskStart        // a TaskStart, parsed
	resTaskEnd          // a TaskEnd, parsed
	resMalformed        // not a JSON object
	resSkip             // a task event without its Task Info
)

type result struct {
	kind uint8
	task *Task
	cls  string
	line []byte // for resOther: the line, owned by the batch
	pos  eventlog.Pos
}

// A batch is a block of consecutive lines, straight from the reader,
// parsed by one worker.
type batch struct {
	block   eventlog.Block
	results []result
	done    chan struct{}
}

// batchBytes is the size of a batch.
const batchBytes = 1 << 20

var taskEventPrefix = []byte(`{"Event":"SparkListenerTask`)

// parse fills b.results; p is the worker's parser.
func (bt *batch) parse(p *fastjson.Parser) {
	bt.results = bt.results[:0]
	bt.block.Lines(func(line []byte, pos eventlog.Pos) {
		bt.results = append(bt.results, parseLine(line, pos, p))
	})
}

// parseLine parses a task event, by the scanner when it can, and leaves
// any other line to the builder.
func parseLine(line []byte, pos eventlog.Pos, p *fastjson.Parser) result {
	res := result{pos: pos}
	if !bytes.HasPrefix(line, taskEventPrefix) {
		res.line = line
		return res
	}
	if t, end, ok := scanTaskEvent(line); ok {
		res.kind, res.task = resTaskStart, t
		if end {
			res.kind, res.cls = resTaskEnd, "Success"
		}
		return res
	}
	v, err := p.ParseBytes(line)
	if err != nil || v.Type() != fastjson.TypeObject {
		res.kind = resMalformed
		return res
	}
	var ok bool
	switch string(v.GetStringBytes("Event")) {
	case "SparkListenerTaskStart":
		res.kind = resTaskStart
		res.task, ok = parseTaskStart(v)
	case "SparkListenerTaskEnd":
		res.kind = resTaskEnd
		res.task, res.cls, ok = parseTaskEnd(v)
	default:
		res.line, ok = line, true // TaskGettingResult and the like
	}
	if !ok {
		res.kind = resSkip
	}
	return res
}

// run reads r in batches parsed by workers goroutines and applies the
// results in log order.
func (b *builder) run(r *eventlog.Reader, workers int) error {
	workers = max(workers, 1)
	jobs := make(chan *batch, workers)
	ordered := make(chan *batch, 2*workers)
	// Batches applied are read into again, their blocks' and results'
	// memory with them: at most every batch in flight is kept.
	spare := make(chan *batch, 3*workers+2)
	var readErr error
	go func() {
		defer close(jobs)
		defer close(ordered)
		var read int64
		for n := 0; ; n++ {
			var bt *batch
			select {
			case bt = <-spare:
			default:
				bt = new(batch)
			}
			block, err := r.NextBlock(bt.block.Data, batchBytes)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				readErr = err
				return
			}
			read += int64(len(block.Data))
			if b.progress != nil && n%64 == 0 {
				b.progress(read)
			}
			bt.block, bt.done = block, make(chan struct{})
			ordered <- bt
			jobs <- bt
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p fastjson.Parser
			for bt := range jobs {
				bt.parse(&p)
				close(bt.done)
			}
		}()
	}
	var p fastjson.Parser
	for bt := range ordered {
		<-bt.done
		for i := range bt.results {
			b.apply(&bt.results[i], &p)
		}
		select {
		case spare <- bt:
		default:
		}
	}
	wg.Wait()
	return readErr
}
