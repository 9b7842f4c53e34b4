package spark

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"sync"
	"unsafe"

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
	// updates holds the accumulator updates of the batch's tasks, until
	// the builder has applied them (scanTaskEvent).
	updates []accumUpdate
	err     error // the reader's memory refused the parse of a line
	done    chan struct{}
}

// batchBytes is the size of a batch.
const batchBytes = 1 << 20

var taskEventPrefix = []byte(`{"Event":"SparkListenerTask`)

// resultBytes is the memory of a result.
const resultBytes = int64(unsafe.Sizeof(result{}))

// parse fills b.results; p is the worker's parser. It stops at the first
// line whose parse the reader's memory refused, in bt.err.
func (bt *batch) parse(p *jsonParser) {
	bt.results = bt.results[:0]
	bt.updates = bt.updates[:0] // the batch before is applied
	bt.block.Lines(func(line []byte, pos eventlog.Pos) {
		if bt.err != nil {
			return
		}
		had := cap(bt.results)
		res, err := parseLine(line, pos, p, &bt.updates)
		if err != nil {
			bt.err = err
			return
		}
		bt.results = append(bt.results, res)
		if grown := cap(bt.results) - had; grown > 0 {
			bt.err = p.r.Reserve(int64(grown)*resultBytes, fmt.Sprintf("the lines of %s", pos.File))
		}
	})
}

// parseLine parses a task event, by the scanner when it can (appending the
// task's accumulator updates to updates), and leaves any other line to the
// builder. Its error is a refusal of the memory of the line's parse.
func parseLine(line []byte, pos eventlog.Pos, p *jsonParser, updates *[]accumUpdate) (result, error) {
	res := result{pos: pos}
	if !bytes.HasPrefix(line, taskEventPrefix) {
		res.line = line
		return res, nil
	}
	if t, end, ok := scanTaskEvent(line, updates); ok {
		res.kind, res.task = resTaskStart, t
		if end {
			res.kind, res.cls = resTaskEnd, "Success"
		}
		return res, nil
	}
	v, err := p.parse(line, pos)
	if err != nil {
		return res, err
	}
	if v == nil || v.Type() != fastjson.TypeObject {
		res.kind = resMalformed
		return res, nil
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
	return res, nil
}

// jsonParser is a JSON parser that draws the memory its parses take from
// the memory of the reader the lines come from: it keeps that of the
// largest line it parsed, for the next.
type jsonParser struct {
	fastjson.Parser
	r    *eventlog.Reader
	held int64 // reserved for the costliest line parsed
}

// What parsing a line takes, as fastjson allocates it (measured on lines
// of strings, of objects and of numbers): a copy of the line and a
// little more, and some hundreds of bytes for each value (with the
// arrays they grew out of). Lines up to shortLine are reserved for as one
// of shortLine bytes of values, without counting theirs.
const (
	parseBytesPerByte  = 2
	parseBytesPerValue = 640
	shortLine          = 4 << 10
)

// parseCost estimates the memory parsing line takes.
func parseCost(line []byte) int64 {
	if len(line) <= shortLine {
		return parseBytesPerByte*shortLine + parseBytesPerValue*shortLine/2
	}
	values := 1 + bytes.Count(line, []byte{','}) + bytes.Count(line, []byte{'['}) + bytes.Count(line, []byte{'{'})
	return parseBytesPerByte*int64(len(line)) + parseBytesPerValue*int64(values)
}

// parse parses line, at pos, once what its parse takes is reserved. It
// returns nil for a line that is not JSON; its error is a refusal of
// that memory.
func (p *jsonParser) parse(line []byte, pos eventlog.Pos) (*fastjson.Value, error) {
	if cost := parseCost(line); cost > p.held {
		if err := p.r.Reserve(cost-p.held, fmt.Sprintf("decoding line %d of %s (%d bytes)", pos.Line, pos.File, len(line))); err != nil {
			return nil, err
		}
		p.held = cost
	}
	v, err := p.ParseBytes(line)
	if err != nil {
		return nil, nil
	}
	return v, nil
}

// run reads r in batches parsed by workers goroutines and applies the
// results in log order. It stops at the first error: the reader's, or a
// refusal of the reader's memory for a parse.
func (b *builder) run(r *eventlog.Reader, workers int) error {
	workers = max(workers, 1)
	jobs := make(chan *batch, workers)
	ordered := make(chan *batch, 2*workers)
	quit := make(chan struct{}) // closed when the builder stops early
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
			case <-quit:
				return
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
			bt.block, bt.err, bt.done = block, nil, make(chan struct{})
			select {
			case ordered <- bt:
			case <-quit:
				return
			}
			select {
			case jobs <- bt:
			case <-quit:
				close(bt.done) // in ordered, never parsed
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := jsonParser{r: r}
			for bt := range jobs {
				bt.parse(&p)
				close(bt.done)
			}
		}()
	}
	p := jsonParser{r: r}
	var err error
	for bt := range ordered {
		<-bt.done
		if err == nil {
			err = bt.err
			for i := 0; i < len(bt.results) && err == nil; i++ {
				err = b.apply(&bt.results[i], &p)
			}
			if err != nil {
				close(quit) // the batches still in flight are only waited for
			}
		}
		select {
		case spare <- bt:
		default:
		}
	}
	wg.Wait()
	return cmp.Or(err, readErr)
}
