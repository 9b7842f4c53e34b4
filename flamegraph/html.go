package flamegraph

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/ui"
)

// pageData is the profile as the page's script (the web UI's flame graph
// page bundle, ui/src/flamepage) reads it: string tables and flat integer
// arrays, so that the page can filter samples and build the tree itself.
// Stack i (from 1) is stacks[2(i-1)] (parent, 0 for a root frame) and
// stacks[2(i-1)+1] (frame name). Samples are rows of sampleWidth integers:
// stack, type, thread pool, stage, thread, value; rows with the same first
// five columns are merged.
type pageData struct {
	Title   string   `json:"title"`
	Type    int      `json:"type"`
	Types   []string `json:"types"` // "name:unit"
	Frames  []string `json:"frames"`
	Stacks  []int    `json:"stacks"`
	Pools   []string `json:"pools"`
	Stages  []string `json:"stages"`
	Threads []string `json:"threads"`
	Samples []int64  `json:"samples"`
	// Base holds the baseline's samples of a diff page, else it is nil.
	Base []int64 `json:"base"`
}

const sampleWidth = 6

// encoder interns the tables of one or more profiles into a pageData.
type encoder struct {
	d       pageData
	frames  map[string]int
	stacks  map[[2]int]int
	strs    map[*[]string]map[string]int
	types   map[string]int
	scratch []int // per-profile stack id → page stack id
}

func newEncoder() *encoder {
	e := &encoder{
		frames: map[string]int{},
		stacks: map[[2]int]int{},
		strs:   map[*[]string]map[string]int{},
		types:  map[string]int{},
	}
	e.d.Frames, e.d.Stacks = []string{}, []int{}
	// Index 0 of each label table is "no value".
	e.d.Pools, e.d.Stages, e.d.Threads = []string{""}, []string{""}, []string{""}
	return e
}

func (e *encoder) str(table *[]string, s string) int {
	m := e.strs[table]
	if m == nil {
		m = map[string]int{"": 0}
		e.strs[table] = m
	}
	i, ok := m[s]
	if !ok {
		i = len(*table)
		*table = append(*table, s)
		m[s] = i
	}
	return i
}

// add encodes p's samples and returns them as flat rows.
func (e *encoder) add(p *profile.Profile) []int64 {
	typeIdx := make([]int, len(p.Types))
	for i, t := range p.Types {
		k := t.String()
		j, ok := e.types[k]
		if !ok {
			j = len(e.d.Types)
			e.d.Types = append(e.d.Types, k)
			e.types[k] = j
		}
		typeIdx[i] = j
	}
	e.scratch = e.scratch[:0]
	for s := 0; s < p.NumStacks(); s++ {
		if s == int(profile.NoStack) {
			e.scratch = append(e.scratch, 0)
			continue
		}
		id := profile.StackID(s)
		name := p.Frames[p.Leaf(id)].Name
		fi, ok := e.frames[name]
		if !ok {
			fi = len(e.d.Frames)
			e.d.Frames = append(e.d.Frames, name)
			e.frames[name] = fi
		}
		// Parents precede children in the stack table.
		key := [2]int{e.scratch[p.Parent(id)], fi}
		si, ok := e.stacks[key]
		if !ok {
			si = len(e.d.Stacks)/2 + 1
			e.d.Stacks = append(e.d.Stacks, key[0], key[1])
			e.stacks[key] = si
		}
		e.scratch = append(e.scratch, si)
	}
	type row [5]int
	sums := map[row]int64{}
	var order []row
	for _, s := range p.Samples {
		ls := p.SampleLabels(s)
		pool, _ := ls.Get(profile.LabelThreadPool)
		stage, _ := ls.Get(profile.LabelStageID)
		thread := ""
		if int(s.Thread) < len(p.Threads) && s.Thread != profile.NoThread {
			thread = p.Threads[s.Thread].Name
		} else if n, ok := ls.Get(profile.LabelThreadName); ok {
			thread = n
		}
		r := row{e.scratch[s.Stack], typeIdx[s.Type], e.str(&e.d.Pools, pool), e.str(&e.d.Stages, stage), e.str(&e.d.Threads, thread)}
		if _, ok := sums[r]; !ok {
			order = append(order, r)
		}
		sums[r] += s.Value
	}
	out := make([]int64, 0, len(order)*sampleWidth)
	for _, r := range order {
		out = append(out, int64(r[0]), int64(r[1]), int64(r[2]), int64(r[3]), int64(r[4]), sums[r])
	}
	return out
}

// initialType returns the index in types of the type named by want, as a
// "name:unit", a name or a family ("cpu", "alloc", ...), or 0.
func initialType(types []string, want string) (int, error) {
	if want == "" {
		return 0, nil
	}
	for i, t := range types {
		name, unit, _ := strings.Cut(t, ":")
		st := profile.SampleType{Name: name, Unit: unit}
		if t == want || name == want || st.Family() == want {
			return i, nil
		}
	}
	return 0, fmt.Errorf("flamegraph: profile has no sample type %q (has %s)", want, strings.Join(types, ", "))
}

// HTML writes one self-contained interactive HTML page for p, drawn by the
// web UI's own flame graph (package ui's flame graph bundle): a canvas
// flame graph with zoom, search, a function table, a tooltip, a sandwich
// view (callers and callees of the function picked), and filters by sample
// type, thread pool, stage and thread name, all applied in the page from
// an embedded compact encoding of p. opts.Type picks the type shown first.
func HTML(w io.Writer, p *profile.Profile, opts Options) error {
	if p == nil {
		return errors.New("flamegraph: nil profile")
	}
	e := newEncoder()
	e.d.Samples = e.add(p)
	return writePage(w, e, opts)
}

// DiffHTML writes the same page for a differential flame graph of next
// against base: frames are red where next grew and blue where it shrank
// against base normalised to next's total; the tooltip shows both values
// and the change.
func DiffHTML(w io.Writer, base, next *profile.Profile, opts Options) error {
	if base == nil || next == nil {
		return errors.New("flamegraph: nil profile")
	}
	e := newEncoder()
	e.d.Base = e.add(base)
	e.d.Samples = e.add(next)
	return writePage(w, e, opts)
}

func writePage(w io.Writer, e *encoder, opts Options) error {
	if e.d.Types == nil {
		e.d.Types = []string{}
	}
	t, err := initialType(e.d.Types, opts.Type)
	if err != nil {
		return err
	}
	e.d.Type = t
	e.d.Title = opts.Title
	if e.d.Title == "" {
		e.d.Title = "sparkprof flame graph"
	}
	// json.Marshal escapes <, > and & as \u003c..., so no name can close
	// the <script> element that holds the data.
	data, err := json.Marshal(&e.d)
	if err != nil {
		return fmt.Errorf("flamegraph: encoding page data: %w", err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<link rel=\"icon\" href=\"data:,\">\n<style>\n%s</style>\n</head>\n<body>\n", html.EscapeString(e.d.Title), ui.FlameStyle())
	fmt.Fprintf(bw, "<div id=\"root\"></div>\n<noscript>This flame graph draws with JavaScript; its data is the JSON in the element #data.</noscript>\n<script type=\"application/json\" id=\"data\">%s</script>\n<script>\n%s</script>\n</body>\n</html>\n", data, ui.FlameScript())
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("flamegraph: writing HTML: %w", err)
	}
	return nil
}
