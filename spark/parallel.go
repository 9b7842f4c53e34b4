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

// A batch is a run of consecutive lines, copied out of the reader, parsed
// by one worker.
type batch struct {
	buf     []byte
	ends    []int
	pos     []eventlog.Pos
	results []result
	done    chan struct{}
}

const (
	batchLines = 256
	batchBytes = 2 << 20
)

var taskEventPrefix = []byte(`{"Event":"SparkListenerTask`)

// parse fills b.results; p is the worker's parser.
func (bt *batch) parse(p *fastjson.Parser) {
	bt.results = bt.results[:0]
	start := 0
	for i, end := range bt.ends {
		line := bt.buf[start:end]
		start = end
		res := result{pos: bt.pos[i]}
		if !bytes.HasPrefix(line, taskEventPrefix) {
			res.line = line
			bt.results = append(bt.results, res)
			continue
		}
		if t, end, ok := scanTaskEvent(line); ok {
			res.kind, res.task = resTaskStart, t
			if end {
				res.kind, res.cls = resTaskEnd, "Success"
			}
			bt.results = append(bt.results, res)
			continue
		}
		v, err := p.ParseBytes(line)
		if err != nil || v.Type() != fastjson.TypeObject {
			res.kind = resMalformed
			bt.results = append(bt.results, res)
			continue
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
		bt.results = append(bt.results, res)
	}
}

// run reads r in batches parsed by workers goroutines and applies the
// results in log order.
func (b *builder) run(r *eventlog.Reader, workers int) error {
	workers = max(workers, 1)
	jobs := make(chan *batch, workers)
	ordered := make(chan *batch, 2*workers)
	var readErr error
	go func() {
		defer close(jobs)
		defer close(ordered)
		var read int64
		for n := 0; ; n++ {
			bt := &batch{done: make(chan struct{})}
			for len(bt.ends) < batchLines && len(bt.buf) < batchBytes {
				line, pos, err := r.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					readErr = err
					break
				}
				bt.buf = append(bt.buf, line...)
				bt.ends = append(bt.ends, len(bt.buf))
				bt.pos = append(bt.pos, pos)
			}
			if len(bt.ends) == 0 {
				return
			}
			read += int64(len(bt.buf) + len(bt.ends))
			if b.progress != nil && n%64 == 0 {
				b.progress(read)
			}
			ordered <- bt
			jobs <- bt
			if readErr != nil {
				return
			}
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
	}
	wg.Wait()
	return readErr
}
