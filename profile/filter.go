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
		re, err := regexp.Compile("^(?:" + value + ")$")
		if err != nil {
			return Matcher{}, fmt.Errorf("label matcher %s: %w", name, err)
		}
		m.re = re
	}
	return m, nil
}

// Matches reports whether value satisfies the matcher.
func (m Matcher) Matches(value string) bool {
	switch m.Op {
	case MatchEqual:
		return value == m.Value
	case MatchNotEqual:
		return value != m.Value
	case MatchRegexp:
		return m.re.MatchString(value)
	default:
		return !m.re.MatchString(value)
	}
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
	// Labels must all match.
	Labels []Matcher
	// Thread must match the sample's thread name.
	Thread *regexp.Regexp
	// From and Until bound sample times (Unix ns, inclusive from,
	// exclusive until). Samples without a time are kept when the profile's
	// recording overlaps the window.
	From, Until int64
	// Focus keeps samples with a frame matching it; Ignore drops them.
	Focus, Ignore *regexp.Regexp
	// States keeps samples taken in one of these thread states.
	States []ThreadState
}

// Filter drops the samples f does not select, in place.
func (p *Profile) Filter(f Filter) {
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
	labelOK := p.labelSetsMatching(f.Labels)
	frameFocus := p.framesMatching(f.Focus)
	frameIgnore := p.framesMatching(f.Ignore)
	focusMemo := map[StackID]bool{}
	ignoreMemo := map[StackID]bool{}
	unknownTimeOK := (f.From == 0 || p.End == 0 || p.End >= f.From) &&
		(f.Until == 0 || p.Start == 0 || p.Start < f.Until)

	kept := p.Samples[:0]
	for _, s := range p.Samples {
		switch {
		case !keepType[s.Type]:
			continue
		case keepThread != nil && !keepThread[s.Thread]:
			continue
		case labelOK != nil && !labelOK[s.Labels]:
			continue
		case len(f.States) > 0 && !slices.Contains(f.States, s.State):
			continue
		}
		if f.From != 0 || f.Until != 0 {
			if s.Time == 0 {
				if !unknownTimeOK {
					continue
				}
			} else if (f.From != 0 && s.Time < f.From) || (f.Until != 0 && s.Time >= f.Until) {
				continue
			}
		}
		if frameFocus != nil && !p.stackHas(s.Stack, frameFocus, focusMemo) {
			continue
		}
		if frameIgnore != nil && p.stackHas(s.Stack, frameIgnore, ignoreMemo) {
			continue
		}
		kept = append(kept, s)
	}
	p.Samples = kept
}

// labelSetsMatching returns, per label set, whether its samples satisfy ms,
// or nil when ms is empty.
func (p *Profile) labelSetsMatching(ms []Matcher) []bool {
	if len(ms) == 0 {
		return nil
	}
	ok := make([]bool, len(p.labelSets))
	for i, own := range p.labelSets {
		ok[i] = true
		for _, m := range ms {
			v, found := own.Get(m.Name)
			if !found {
				v, _ = p.Labels.Get(m.Name)
			}
			if !m.Matches(v) {
				ok[i] = false
				break
			}
		}
	}
	return ok
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
