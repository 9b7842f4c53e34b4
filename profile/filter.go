package profile

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// MatchOp is how a Matcher compares a label's value.
type MatchOp uint8

// Matcher operators, as in Prometheus selectors.
const (
	MatchEqual     MatchOp = iota // =
	MatchNotEqual                 // !=
	MatchRegexp                   // =~
	MatchNotRegexp                // !~
)

// Matcher selects samples by one label. A missing label has value "".
type Matcher struct {
	Name  string
	Op    MatchOp
	Value string
	re    *regexp.Regexp
	// set holds the alternatives of a regexp that is only literals
	// separated by "|" (what a multi-select writes, and the stage page's
	// thousands of task ids), which are matched by lookup instead.
	set map[string]struct{}
}

// ParseMatcher parses "name=value", "name!=value", "name=~regex" or
// "name!~regex". Regular expressions are anchored, as in Prometheus.
func ParseMatcher(s string) (Matcher, error) {
	for _, op := range []struct {
		tok string
		op  MatchOp
	}{{"!=", MatchNotEqual}, {"=~", MatchRegexp}, {"!~", MatchNotRegexp}, {"=", MatchEqual}} {
		i := strings.Index(s, op.tok)
		if i <= 0 {
			continue
		}
		name := strings.TrimSpace(s[:i])
		value := strings.Trim(strings.TrimSpace(s[i+len(op.tok):]), `"`)
		return NewMatcher(name, op.op, value)
	}
	return Matcher{}, fmt.Errorf("label matcher %q: want name=value, name!=value, name=~regex or name!~regex", s)
}

// NewMatcher returns a matcher; for the regexp operators value must compile.
func NewMatcher(name string, op MatchOp, value string) (Matcher, error) {
	m := Matcher{Name: name, Op: op, Value: value}
	if op == MatchRegexp || op == MatchNotRegexp {
		if literalAlternatives(value) {
			m.set = make(map[string]struct{})
			for _, alt := range strings.Split(value, "|") {
				m.set[alt] = struct{}{}
			}
			return m, nil
		}
		re, err := regexp.Compile("^(?:" + value + ")$")
		if err != nil {
			return Matcher{}, fmt.Errorf("label matcher %s: %w", name, err)
		}
		m.re = re
	}
	return m, nil
}

// literalAlternatives reports whether regexp value is literals separated
// by "|", with no other character that regexp syntax gives a meaning.
func literalAlternatives(value string) bool {
	return strings.Contains(value, "|") && !strings.ContainsAny(value, `\.+*?()[]{}^$`)
}

// Matches reports whether value satisfies the matcher.
func (m Matcher) Matches(value string) bool {
	switch m.Op {
	case MatchEqual:
		return value == m.Value
	case MatchNotEqual:
		return value != m.Value
	}
	var match bool
	if m.set != nil {
		_, match = m.set[value]
	} else {
		match = m.re.MatchString(value)
	}
	return match == (m.Op == MatchRegexp)
}

// Literals returns the values an equality matcher, or a regexp matcher
// made of literal alternatives, matches, and true; for other matchers, nil
// and false.
func (m Matcher) Literals() ([]string, bool) {
	switch {
	case m.Op == MatchEqual:
		return []string{m.Value}, true
	case m.Op == MatchRegexp && m.set != nil:
		out := make([]string, 0, len(m.set))
		for v := range m.set {
			out = append(out, v)
		}
		return out, true
	}
	return nil, false
}

// String formats the matcher as it is parsed.
func (m Matcher) String() string {
	op := [...]string{"=", "!=", "=~", "!~"}[m.Op]
	return m.Name + op + m.Value
}

// Filter selects samples. Zero fields select everything.
type Filter struct {
	// Family keeps one profile family: "cpu", "wall", "alloc", "lock",
	// "live" (see SampleType.Family), or a sample type name.
	Family string
	// Labels must all match. A matcher on thread_name matches the name of
	// the sample's thread where its labels have no thread_name.
	Labels []Matcher
	// Thread must match the sample's thread name.
	Thread *regexp.Regexp
	// From and Until bound sample times (Unix ns, inclusive from,
	// exclusive until). Samples without a time are kept when the profile's
	// recording overlaps the window.
	From, Until int64
	// Focus keeps samples with a frame matching it; Ignore drops them.
	Focus, Ignore *regexp.Regexp
	// CallSite keeps the samples whose stacks begin, from the root, with
	// frames of these function names in this order: Pyroscope's stack
	// trace selector.
	CallSite []string
	// States keeps samples taken in one of these thread states.
	States []ThreadState
}

// ByStack reports whether f selects samples by their stacks (Focus,
// Ignore, CallSite), which a series summed over stacks cannot answer.
func (f Filter) ByStack() bool {
	return f.Focus != nil || f.Ignore != nil || len(f.CallSite) > 0
}

// Filter drops the samples f does not select, in place.
func (p *Profile) Filter(f Filter) {
	keep := f.Selector(p)
	kept := p.Samples[:0]
	for i := range p.Samples {
		if keep(&p.Samples[i]) {
			kept = append(kept, p.Samples[i])
		}
	}
	p.Samples = kept
}

// Selector returns whether f selects a sample of p. Label sets are judged
// when first seen, so sets added to p later are judged too.
func (f Filter) Selector(p *Profile) func(*Sample) bool {
	keepType := make([]bool, len(p.Types))
	for i, t := range p.Types {
		keepType[i] = f.Family == "" || t.Family() == f.Family || t.Name == f.Family
	}
	var keepThread []bool
	if f.Thread != nil {
		keepThread = make([]bool, len(p.Threads))
		for i, t := range p.Threads {
			keepThread[i] = f.Thread.MatchString(t.Name)
		}
	}
	// A matcher on thread_name matches the name of the sample's thread
	// where its labels have none: a JFR names threads, and only a label
	// snapshot (Pyroscope's) gives a thread_name label.
	others := f.Labels
	var threadNameOK []bool // by thread: its name satisfies the thread_name matchers
	if slices.ContainsFunc(f.Labels, isThreadName) {
		others = slices.DeleteFunc(slices.Clone(f.Labels), isThreadName)
		threadNameOK = make([]bool, len(p.Threads))
		for i, t := range p.Threads {
			threadNameOK[i] = threadNameMatches(f.Labels, t.Name)
		}
	}
	// Per label set: 0 not judged yet, 1 selected, 2 not, 3 selected if
	// the sample's thread name satisfies the thread_name matchers.
	var labelOK []uint8
	labelsMatch := func(s *Sample) bool {
		if len(f.Labels) == 0 {
			return true
		}
		id := s.Labels
		for int(id) >= len(labelOK) {
			labelOK = append(labelOK, 0)
		}
		if labelOK[id] == 0 {
			labelOK[id] = 2
			switch {
			case threadNameOK == nil || p.labelSetHas(id, LabelThreadName):
				if p.labelSetMatches(id, f.Labels) {
					labelOK[id] = 1
				}
			case p.labelSetMatches(id, others):
				labelOK[id] = 3
			}
		}
		return labelOK[id] == 1 || labelOK[id] == 3 && int(s.Thread) < len(threadNameOK) && threadNameOK[s.Thread]
	}
	frameFocus := p.framesMatching(f.Focus)
	frameIgnore := p.framesMatching(f.Ignore)
	focusMemo := map[StackID]bool{}
	ignoreMemo := map[StackID]bool{}
	atCallSite := p.callSiteMatcher(f.CallSite)
	unknownTimeOK := (f.From == 0 || p.End == 0 || p.End >= f.From) &&
		(f.Until == 0 || p.Start == 0 || p.Start < f.Until)

	return func(s *Sample) bool {
		switch {
		case !keepType[s.Type]:
			return false
		case keepThread != nil && !keepThread[s.Thread]:
			return false
		case len(f.States) > 0 && !slices.Contains(f.States, s.State):
			return false
		case !labelsMatch(s):
			return false
		}
		if f.From != 0 || f.Until != 0 {
			if s.Time == 0 {
				if !unknownTimeOK {
					return false
				}
			} else if (f.From != 0 && s.Time < f.From) || (f.Until != 0 && s.Time >= f.Until) {
				return false
			}
		}
		if frameFocus != nil && !p.stackHas(s.Stack, frameFocus, focusMemo) {
			return false
		}
		if frameIgnore != nil && p.stackHas(s.Stack, frameIgnore, ignoreMemo) {
			return false
		}
		if atCallSite != nil && !atCallSite(s.Stack) {
			return false
		}
		return true
	}
}

// callSiteMatcher returns whether a stack of p begins, from the root, with
// frames named as site lists them (nil for an empty site). It remembers
// what it found of each stack, so each is judged once.
func (p *Profile) callSiteMatcher(site []string) func(StackID) bool {
	if len(site) == 0 {
		return nil
	}
	// prefix is, by stack, its depth and whether its frames match site
	// as deep as both go.
	type prefix struct {
		depth int
		ok    bool
	}
	memo := map[StackID]prefix{}
	var of func(s StackID) prefix
	of = func(s StackID) prefix {
		if s == NoStack {
			return prefix{0, true}
		}
		if v, ok := memo[s]; ok {
			return v
		}
		n := p.stacks[s]
		v := of(n.parent)
		v.depth++
		v.ok = v.ok && (v.depth > len(site) || p.Frames[n.frame].Name == site[v.depth-1])
		memo[s] = v
		return v
	}
	return func(s StackID) bool {
		v := of(s)
		return v.ok && v.depth >= len(site)
	}
}

// isThreadName reports whether m is a matcher on the thread_name label.
func isThreadName(m Matcher) bool { return m.Name == LabelThreadName }

// threadNameMatches reports whether a thread named name satisfies the
// thread_name matchers of ms.
func threadNameMatches(ms []Matcher, name string) bool {
	return !slices.ContainsFunc(ms, func(m Matcher) bool { return isThreadName(m) && !m.Matches(name) })
}

// Threads returns, by thread id, whether a sample on that thread of p can
// pass f as far as its thread tells: f's Thread, and its thread_name
// matchers unless labelled reports that samples of p may carry a
// thread_name label (which a matcher reads before the thread's name); it
// is called only for f with such matchers. A sample whose entry is false
// never passes f, so a caller can pass over it before any other work. It
// returns nil when f does not select by thread.
func (f Filter) Threads(p *Profile, labelled func() bool) []bool {
	byName := slices.ContainsFunc(f.Labels, isThreadName) && !labelled()
	if f.Thread == nil && !byName {
		return nil
	}
	keep := make([]bool, len(p.Threads))
	for i, t := range p.Threads {
		keep[i] = (f.Thread == nil || f.Thread.MatchString(t.Name)) && (!byName || threadNameMatches(f.Labels, t.Name))
	}
	return keep
}

// labelSetHas reports whether the samples of label set id have label name
// (in the set or in p's labels).
func (p *Profile) labelSetHas(id LabelSetID, name string) bool {
	if _, ok := p.labelSets[id].Get(name); ok {
		return true
	}
	_, ok := p.Labels.Get(name)
	return ok
}

// labelSetMatches reports whether the samples of label set id satisfy ms;
// a name the set lacks is looked up in the profile's labels.
func (p *Profile) labelSetMatches(id LabelSetID, ms []Matcher) bool {
	own := p.labelSets[id]
	for _, m := range ms {
		v, found := own.Get(m.Name)
		if !found {
			v, _ = p.Labels.Get(m.Name)
		}
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

func (p *Profile) framesMatching(re *regexp.Regexp) []bool {
	if re == nil {
		return nil
	}
	m := make([]bool, len(p.Frames))
	for i, f := range p.Frames {
		m[i] = re.MatchString(f.Name)
	}
	return m
}

// stackHas reports whether stack s has a frame marked in frames.
func (p *Profile) stackHas(s StackID, frames []bool, memo map[StackID]bool) bool {
	if s == NoStack {
		return false
	}
	if v, ok := memo[s]; ok {
		return v
	}
	v := frames[p.stacks[s].frame] || p.stackHas(p.stacks[s].parent, frames, memo)
	memo[s] = v
	return v
}
