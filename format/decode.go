package format

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/format/chrometrace"
	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/format/jfr"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/format/pstats"
	"github.com/sparkprof/sparkprof/format/pyspark"
	"github.com/sparkprof/sparkprof/format/speedscope"
	"github.com/sparkprof/sparkprof/format/uber"
	"github.com/sparkprof/sparkprof/profile"
)

// A Format is one profile format sparkprof decodes.
type Format struct {
	// Name is how users name the format, e.g. on the command line.
	Name string
	// Sniff reports whether data starting with head is in this format.
	Sniff func(head []byte) bool
	// Decode parses a whole (decompressed) input; source names it in errors.
	Decode func(data []byte, source string) (*profile.Profile, error)
}

// Formats lists every format in detection order: binary formats with a magic
// number first, then JSON shapes, then folded text, which accepts the most.
// Uber records come before PySpark ones because both are JSON lines and the
// Uber shapes are more specific. A pstats file (Python's marshal) starts
// with '{' like JSON, then a tuple code no JSON has, so it goes before them.
var Formats = []Format{
	{"jfr", jfr.Sniff, jfr.Decode},
	{"pprof", pprof.Sniff, pprof.Decode},
	{"pstats", pstats.Sniff, pstats.Decode},
	{"speedscope", speedscope.Sniff, speedscope.Decode},
	{"chrometrace", chrometrace.Sniff, chrometrace.Decode},
	{"uber", uber.Sniff, uber.Decode},
	{"pyspark", pyspark.Sniff, pyspark.Decode},
	{"folded", folded.Sniff, folded.Decode},
}

// sniffSize is how much of an input Detect looks at.
const sniffSize = 64 << 10

// Lookup returns the format called name.
func Lookup(name string) (Format, bool) {
	for _, f := range Formats {
		if f.Name == name {
			return f, true
		}
	}
	return Format{}, false
}

// Names returns the names of all formats, in detection order.
func Names() []string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = f.Name
	}
	return names
}

// Detect returns the format of decompressed data, judged by its content.
func Detect(data []byte) (Format, bool) {
	head := data
	if len(head) > sniffSize {
		head = head[:sniffSize]
	}
	for _, f := range Formats {
		if f.Sniff(head) {
			return f, true
		}
	}
	return Format{}, false
}

// Options control Decode and Load.
type Options struct {
	// Format forces a format by name; empty detects it from the content.
	Format string
	// MaxSize bounds the decompressed size of one input; 0 means
	// DefaultMaxSize.
	MaxSize int64
	// JFRLabels is a Pyroscope LabelsSnapshot sent beside a JFR upload; it
	// maps the samples' async-profiler context ids to labels.
	JFRLabels []byte
	// Start is the Unix ns time a trace's relative times count from:
	// py-spy's chrometrace stamps its events from its own start. 0 leaves
	// such samples untimed.
	Start int64
}

// Decode decompresses data, detects its format, decodes it and labels the
// result: Spark thread pools, stages and tasks from thread names, and the
// app and executor a Spark profiler output path implies. source names the
// input in errors and is matched against Spark's output path layout. The
// profile is complete: its interning indexes are given up for the next
// decode to reuse (see profile.DropIndexes).
func Decode(data []byte, source string, opts Options) (*profile.Profile, error) {
	data, err := Decompress(data, source, opts.MaxSize)
	if err != nil {
		return nil, err
	}
	var f Format
	if opts.Format != "" {
		var ok bool
		if f, ok = Lookup(opts.Format); !ok {
			return nil, fmt.Errorf("%s: unknown format %q (want one of %s)", source, opts.Format, strings.Join(Names(), ", "))
		}
	} else {
		var ok bool
		if f, ok = Detect(data); !ok {
			return nil, &profile.DecodeError{Source: source, Offset: 0,
				Msg: "not a profile in any known format (" + strings.Join(Names(), ", ") + "); pass the format explicitly if it is one of them"}
		}
	}
	decode := f.Decode
	switch {
	case f.Name == "jfr" && len(opts.JFRLabels) > 0:
		decode = func(data []byte, source string) (*profile.Profile, error) {
			return jfr.DecodeWithOptions(data, source, jfr.Options{Labels: opts.JFRLabels})
		}
	case f.Name == "chrometrace" && opts.Start != 0:
		decode = func(data []byte, source string) (*profile.Profile, error) {
			return chrometrace.DecodeAt(data, source, opts.Start)
		}
	}
	p, err := decode(data, source)
	if err != nil {
		return nil, err
	}
	label(p, source)
	p.DropIndexes()
	return p, nil
}

// label adds the labels sparkprof derives from thread names and the path.
func label(p *profile.Profile, source string) {
	attribution.LabelThreads(p)
	if ls := SparkPathLabels(source); len(ls) > 0 {
		p.Labels = p.Labels.Merge(ls)
	}
	if p.Source == "" {
		p.Source = source
	}
}

// Load reads and decodes the file at path. A JFR file's LabelsSnapshot
// saved beside it (see LabelsBeside) labels its samples, unless
// opts.JFRLabels is set.
func Load(path string, opts Options) (*profile.Profile, error) {
	if IsLabelsName(filepath.Base(path)) {
		return nil, fmt.Errorf("%s: a Pyroscope LabelsSnapshot, not a profile: name the JFR beside it (X.jfr[.gz] for X.labels.pb[.gz]), which is read with its labels", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if opts.JFRLabels == nil {
		if lp := LabelsBeside(path); lp != "" {
			if opts.JFRLabels, err = ReadFile(lp, opts.MaxSize); err != nil {
				return nil, fmt.Errorf("labels of %s: %w", path, err)
			}
		}
	}
	return Decode(data, path, opts)
}

// A Result is the outcome of loading one file.
type Result struct {
	Path    string
	Profile *profile.Profile // nil when Err is set
	Err     error
}

// LoadAll loads paths in parallel, with at most GOMAXPROCS files decoded at
// once, and calls fn with each result in the order of paths, from one
// goroutine. Results are handed over as soon as they and all earlier ones
// are ready, so memory holds only the files in flight, not all of them.
// LoadAll stops early and returns fn's error if fn fails.
func LoadAll(paths []string, opts Options, fn func(Result) error) error {
	workers := runtime.GOMAXPROCS(0)
	if workers > len(paths) {
		workers = len(paths)
	}
	// One channel per path keeps delivery ordered; tokens bound how far
	// decoding may run ahead of delivery.
	done := make([]chan Result, len(paths))
	for i := range done {
		done[i] = make(chan Result, 1)
	}
	tokens := make(chan struct{}, 2*workers)
	stop := make(chan struct{})
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p, err := Load(paths[i], opts)
				done[i] <- Result{Path: paths[i], Profile: p, Err: err}
			}
		}()
	}
	go func() {
		defer close(next)
		for i := range paths {
			select {
			case tokens <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case next <- i:
			case <-stop:
				return
			}
		}
	}()
	var err error
	for i := range paths {
		r := <-done[i]
		<-tokens
		if err = fn(r); err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	return err
}
