package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
)

// selection holds the flags that choose inputs and samples, shared by the
// commands that read profiles.
type selection struct {
	typ      string
	stage    string
	executor string
	thread   string
	focus    string
	ignore   string
	states   string
	from     string
	until    string
	format   string
	labels   multiFlag
}

// multiFlag is a flag that may be given several times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (s *selection) register(fs *flag.FlagSet) {
	fs.StringVar(&s.typ, "type", "", "profile type: cpu, wall, alloc, lock, live, or a sample type name (default: cpu if present)")
	fs.StringVar(&s.stage, "stage", "", "keep samples of this Spark stage id")
	fs.StringVar(&s.executor, "executor", "", "keep samples of this executor id (driver for the driver)")
	fs.StringVar(&s.thread, "thread", "", "keep samples of threads whose name matches this regular expression")
	fs.StringVar(&s.focus, "focus", "", "keep stacks with a frame matching this regular expression")
	fs.StringVar(&s.ignore, "ignore", "", "drop stacks with a frame matching this regular expression")
	fs.StringVar(&s.states, "state", "", "keep samples in these thread states, comma-separated (RUNNABLE, BLOCKED, WAITING, TIMED_WAITING, NATIVE)")
	fs.StringVar(&s.from, "from", "", "keep samples at or after this time (RFC 3339 or Unix milliseconds)")
	fs.StringVar(&s.until, "until", "", "keep samples before this time (RFC 3339 or Unix milliseconds)")
	fs.StringVar(&s.format, "format", "", "input format, instead of detecting it: "+strings.Join(format.Names(), ", "))
	fs.Var(&s.labels, "label", "keep samples whose labels match `name=value` (also !=, =~regex, !~regex); repeatable")
}

// filter turns the flags into a profile filter.
func (s *selection) filter() (profile.Filter, error) {
	var f profile.Filter
	compile := func(name, expr string) (*regexp.Regexp, error) {
		if expr == "" {
			return nil, nil
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%w: --%s: %v", errUsage, name, err)
		}
		return re, nil
	}
	var err error
	if f.Thread, err = compile("thread", s.thread); err != nil {
		return f, err
	}
	if f.Focus, err = compile("focus", s.focus); err != nil {
		return f, err
	}
	if f.Ignore, err = compile("ignore", s.ignore); err != nil {
		return f, err
	}
	add := func(name, value string) error {
		m, err := profile.NewMatcher(name, profile.MatchEqual, value)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		f.Labels = append(f.Labels, m)
		return nil
	}
	if s.stage != "" {
		if _, err := strconv.Atoi(s.stage); err != nil {
			return f, fmt.Errorf("%w: --stage %q: want a stage id, a number", errUsage, s.stage)
		}
		if err := add(profile.LabelStageID, s.stage); err != nil {
			return f, err
		}
	}
	if s.executor != "" {
		if err := add(profile.LabelExecutorID, s.executor); err != nil {
			return f, err
		}
	}
	for _, l := range s.labels {
		m, err := profile.ParseMatcher(l)
		if err != nil {
			return f, fmt.Errorf("%w: --label: %v", errUsage, err)
		}
		f.Labels = append(f.Labels, m)
	}
	if s.states != "" {
		for _, name := range strings.Split(s.states, ",") {
			st := profile.ParseThreadState(strings.TrimSpace(name))
			if st == profile.StateUnknown {
				return f, fmt.Errorf("%w: --state: unknown thread state %q", errUsage, name)
			}
			f.States = append(f.States, st)
		}
	}
	if f.From, err = parseTime("from", s.from); err != nil {
		return f, err
	}
	if f.Until, err = parseTime("until", s.until); err != nil {
		return f, err
	}
	return f, nil
}

// parseTime reads a time flag as RFC 3339 or Unix milliseconds and returns
// Unix nanoseconds; empty means 0 (no bound).
func parseTime(name, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return ms * int64(time.Millisecond), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, fmt.Errorf("%w: --%s %q: want RFC 3339 (2024-01-16T18:08:55Z) or Unix milliseconds", errUsage, name, v)
	}
	return t.UnixNano(), nil
}

// load reads every profile under paths, keeps the selected samples and
// merges them into one profile. Inputs that fail are reported on stderr and
// skipped; load fails when none could be read. Progress goes to stderr when
// there are several inputs.
func (s *selection) load(e *env, paths []string) (*profile.Profile, error) {
	f, err := s.filter()
	if err != nil {
		return nil, err
	}
	if s.format != "" {
		if _, ok := format.Lookup(s.format); !ok {
			return nil, fmt.Errorf("%w: --format %q: want one of %s", errUsage, s.format, strings.Join(format.Names(), ", "))
		}
	}
	files, err := format.Expand(paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no profiles found in %s", strings.Join(paths, " "))
	}
	prog := newProgress(e.stderr, "loading", len(files))
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true})
	have := map[string]bool{} // label names the inputs carry
	var failed, loaded int
	err = format.LoadAll(files, format.Options{Format: s.format}, func(r format.Result) error {
		prog.step(r.Path)
		if r.Err != nil {
			failed++
			prog.clear()
			fmt.Fprintf(e.stderr, "sparkprof: skipping %v\n", r.Err)
			return nil
		}
		for _, w := range r.Profile.Warnings {
			prog.clear()
			fmt.Fprintf(e.stderr, "sparkprof: warning: %s: %s\n", r.Path, w)
		}
		addLabelNames(have, r.Profile)
		r.Profile.Filter(f)
		m.Add(r.Profile)
		loaded++
		return nil
	})
	prog.done()
	if err != nil {
		return nil, err
	}
	if loaded == 0 {
		return nil, fmt.Errorf("none of the %d inputs could be read", len(files))
	}
	if failed > 0 {
		fmt.Fprintf(e.stderr, "sparkprof: %d of %d inputs skipped\n", failed, len(files))
	}
	s.hintMissingLabels(e.stderr, f.Labels, have)
	return m.Profile(), nil
}

// addLabelNames adds the names of the labels p's samples carry to names.
func addLabelNames(names map[string]bool, p *profile.Profile) {
	for _, l := range p.Labels {
		names[l.Name] = true
	}
	for id := range p.NumLabelSets() {
		for _, l := range p.LabelSet(profile.LabelSetID(id)) {
			names[l.Name] = true
		}
	}
}

// hintMissingLabels says which of the matchers need a label none of the
// inputs carry (have), so that they selected nothing, and which labels
// the inputs do carry.
func (s *selection) hintMissingLabels(w io.Writer, matchers []profile.Matcher, have map[string]bool) {
	var names []string
	for n := range have {
		names = append(names, n)
	}
	slices.Sort(names)
	carried := "no labels"
	if len(names) > 0 {
		carried = "the labels " + strings.Join(names, ", ")
	}
	for _, m := range matchers {
		if have[m.Name] || m.Matches("") {
			continue
		}
		flag := "--label " + m.String()
		switch {
		case m.Name == profile.LabelStageID && s.stage != "":
			flag = "--stage " + s.stage
		case m.Name == profile.LabelExecutorID && s.executor != "":
			flag = "--executor " + s.executor
		}
		fmt.Fprintf(w, "sparkprof: %s selects nothing: no sample of the inputs has a %s label (they carry %s)\n", flag, m.Name, carried)
	}
}

// pickType returns the sample type of p that --type names, or the default:
// CPU, then wall, then the first type p has.
func (s *selection) pickType(p *profile.Profile) (profile.SampleType, error) {
	if len(p.Types) == 0 {
		if len(p.Series) > 0 {
			// Uber's CpuAndMemory and PySpark's cpumem records, say.
			return profile.SampleType{}, fmt.Errorf("the inputs hold no samples, only metric series (%s): sparkprof analyze draws them on an app's timeline", p.Series[0].Name)
		}
		return profile.SampleType{}, fmt.Errorf("the inputs hold no samples")
	}
	want := s.typ
	if want == "" {
		for _, fam := range []string{"cpu", "wall"} {
			for _, t := range p.Types {
				if t.Family() == fam {
					return t, nil
				}
			}
		}
		return p.Types[0], nil
	}
	if t, ok := p.FindType(want); ok {
		return t, nil
	}
	have := make([]string, len(p.Types))
	for i, t := range p.Types {
		have[i] = t.String()
	}
	return profile.SampleType{}, fmt.Errorf("--type %s: the inputs have no such samples; they have %s", want, strings.Join(have, ", "))
}

// progress prints "loading 3/120 path" on one terminal line. It stays
// silent when stderr is not a terminal.
type progress struct {
	w      io.Writer
	verb   string
	n, i   int
	active bool
}

func newProgress(w io.Writer, verb string, n int) *progress {
	p := &progress{w: w, verb: verb, n: n}
	if f, ok := w.(*os.File); ok && n > 0 {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.active = true
		}
	}
	return p
}

func (p *progress) step(what string) {
	p.i++
	if p.active {
		if len(what) > 60 {
			what = "…" + what[len(what)-59:]
		}
		fmt.Fprintf(p.w, "\r\033[K%s %d/%d %s", p.verb, p.i, p.n, what)
	}
}

// detail replaces the current line's text, for progress within one input.
func (p *progress) detail(what string) {
	if p.active {
		fmt.Fprintf(p.w, "\r\033[K%s %d/%d %s", p.verb, p.i, p.n, what)
	}
}

func (p *progress) clear() {
	if p.active {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func (p *progress) done() { p.clear() }
