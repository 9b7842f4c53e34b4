// Command tool generates large Spark event logs from real ones and times
// the bare decoding baselines the analysis is compared with.
//
//	tool gen -size 2G -o big.log SOURCE   replicate SOURCE's task events with fresh task ids
//	tool decode -mode json|fastjson FILE  decode the fields the analysis needs, nothing more
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/valyala/fastjson"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tool gen|decode ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "decode":
		err = decode(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tool:", err)
		os.Exit(1)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// gen writes the source's non-task events once, then its TaskStart and
// TaskEnd events again and again with task ids renumbered, until -size
// bytes, then the source's closing events.
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	size := fs.String("size", "2G", "bytes to write (suffix M or G)")
	out := fs.String("o", "", "output file")
	fs.Parse(args)
	if fs.NArg() != 1 || *out == "" {
		return fmt.Errorf("usage: tool gen -size N -o FILE SOURCE")
	}
	limit, err := parseSize(*size)
	if err != nil {
		return err
	}
	r, err := eventlog.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	var head, tasks, tail [][]byte
	seenTask := false
	for {
		line, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		l := append([]byte(nil), line...)
		switch {
		case bytes.Contains(l, []byte(`"Event":"SparkListenerTaskStart"`)), bytes.Contains(l, []byte(`"Event":"SparkListenerTaskEnd"`)):
			seenTask = true
			tasks = append(tasks, l)
		case !seenTask:
			head = append(head, l)
		case bytes.Contains(l, []byte(`"Event":"SparkListenerApplicationEnd"`)):
			tail = append(tail, l)
		}
	}
	if len(tasks) == 0 {
		return fmt.Errorf("%s has no task events", fs.Arg(0))
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	emit := func(l []byte) {
		w.Write(l)
		w.WriteByte('\n')
		written += int64(len(l)) + 1
	}
	for _, l := range head {
		emit(l)
	}
	key := []byte(`"Task ID":`)
	var buf []byte
	for round := int64(1); written < limit; round++ {
		for _, l := range tasks {
			i := bytes.Index(l, key)
			if i < 0 {
				emit(l)
				continue
			}
			j := i + len(key)
			k := j
			for k < len(l) && l[k] >= '0' && l[k] <= '9' {
				k++
			}
			id, _ := strconv.ParseInt(string(l[j:k]), 10, 64)
			buf = append(buf[:0], l[:j]...)
			buf = strconv.AppendInt(buf, id+round*10_000_000, 10)
			buf = append(buf, l[k:]...)
			emit(buf)
		}
	}
	for _, l := range tail {
		emit(l)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// decode reads FILE and decodes the fields of the events the analysis
// uses, with encoding/json or fastjson, printing MB/s.
func decode(args []string) error {
	fs := flag.NewFlagSet("decode", flag.ExitOnError)
	mode := fs.String("mode", "fastjson", "json or fastjson")
	fs.Parse(args)
	r, err := eventlog.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	start := time.Now()
	var bytesRead, tasks int64
	var p fastjson.Parser
	type taskEnd struct {
		Event    string `json:"Event"`
		StageID  int    `json:"Stage ID"`
		TaskInfo struct {
			TaskID     int64  `json:"Task ID"`
			ExecutorID string `json:"Executor ID"`
			LaunchTime int64  `json:"Launch Time"`
			FinishTime int64  `json:"Finish Time"`
		} `json:"Task Info"`
		Reason struct {
			Reason string `json:"Reason"`
		} `json:"Task End Reason"`
		Metrics struct {
			RunTime int64 `json:"Executor Run Time"`
			CPU     int64 `json:"Executor CPU Time"`
			GC      int64 `json:"JVM GC Time"`
			Read    struct {
				Remote int64 `json:"Remote Bytes Read"`
				Wait   int64 `json:"Fetch Wait Time"`
			} `json:"Shuffle Read Metrics"`
		} `json:"Task Metrics"`
	}
	for {
		line, _, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		bytesRead += int64(len(line)) + 1
		switch *mode {
		case "json":
			var ev taskEnd
			if json.Unmarshal(line, &ev) == nil && ev.TaskInfo.TaskID > 0 {
				tasks++
			}
		default:
			v, err := p.ParseBytes(line)
			if err != nil {
				continue
			}
			if v.GetInt64("Task Info", "Task ID") > 0 {
				_ = v.GetInt64("Task Metrics", "Executor Run Time") + v.GetInt64("Task Metrics", "Executor CPU Time") +
					v.GetInt64("Task Metrics", "JVM GC Time") + v.GetInt64("Task Metrics", "Shuffle Read Metrics", "Remote Bytes Read")
				tasks++
			}
		}
	}
	d := time.Since(start)
	fmt.Printf("%s: %d MB, %d task events, %.2f s, %.0f MB/s\n", *mode, bytesRead>>20, tasks, d.Seconds(), float64(bytesRead)/1e6/d.Seconds())
	return nil
}
