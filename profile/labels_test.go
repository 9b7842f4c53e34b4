package profile

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestLabelsMatch(t *testing.T) {
	ls := Labels{{LabelExecutorID, "3"}, {"gc", "G1 Young Generation"}}
	m := func(s string) Matcher {
		mt, err := ParseMatcher(s)
		if err != nil {
			t.Fatal(err)
		}
		return mt
	}
	for _, c := range []struct {
		ms   []Matcher
		want bool
	}{
		{nil, true},
		{[]Matcher{m(`spark_executor_id="3"`)}, true},
		{[]Matcher{m(`spark_executor_id="3"`), m(`gc=~"G1.*"`)}, true},
		{[]Matcher{m(`spark_executor_id="4"`)}, false},
		{[]Matcher{m(`spark_stage_id="1"`)}, false}, // a label ls lacks is ""
		{[]Matcher{m(`spark_stage_id!="1"`)}, true},
	} {
		if got := ls.Match(c.ms); got != c.want {
			t.Errorf("Match(%v) = %v, want %v", c.ms, got, c.want)
		}
	}
}

// A regexp matcher of literal alternatives (a multi-select, the stage
// page's task ids) is matched by lookup, as the anchored regexp would
// match.
func TestMatcherAlternatives(t *testing.T) {
	values := []string{"", "1", "12", "123", "2", "a-b", "a", "b", "1|2", "x 1"}
	for _, c := range []struct {
		value   string
		literal bool
	}{
		{"1|12|a-b", true},
		{"1||2", true},
		{"x 1|2", true},
		{"1|1.*", false},
		{"(1|2)", false},
		{"a|b|[0-9]+", false},
		{`1\|2`, false},
		{"12", false},
	} {
		for _, op := range []MatchOp{MatchRegexp, MatchNotRegexp} {
			m, err := NewMatcher("task", op, c.value)
			if err != nil {
				t.Fatal(err)
			}
			if (m.set != nil) != c.literal {
				t.Errorf("%q: matched by lookup %v, want %v", c.value, m.set != nil, c.literal)
			}
			// Literals lists what a lookup matches, and only for =~.
			lits, ok := m.Literals()
			slices.Sort(lits)
			want := slices.Compact(slices.Sorted(slices.Values(strings.Split(c.value, "|"))))
			if wantOK := c.literal && op == MatchRegexp; ok != wantOK || ok && !slices.Equal(lits, want) {
				t.Errorf("%s%v%q: literals %q, %v; want %q, %v", m.Name, op, c.value, lits, ok, want, wantOK)
			}
			re := regexp.MustCompile("^(?:" + c.value + ")$")
			for _, v := range values {
				if got, want := m.Matches(v), re.MatchString(v) == (op == MatchRegexp); got != want {
					t.Errorf("%s%v%q matches %q: %v, want %v", m.Name, op, c.value, v, got, want)
				}
			}
		}
	}
}

// AppendLabels adds a set without looking it up: an equal set gets a new
// id, which reads as the old one does, and AddLabels still finds sets by
// value, in a built profile and in a decoded one (which has no index).
func TestAppendLabels(t *testing.T) {
	set := Labels{{LabelTaskID, "7"}, {LabelExecutorID, "1"}}
	built := New()
	first := built.AddLabels(set)
	data, err := built.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	decoded := new(Profile)
	if err := decoded.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*Profile{"built": built, "decoded": decoded} {
		again := p.AppendLabels(Labels{{LabelExecutorID, "1"}, {LabelTaskID, "7"}})
		if again == first || !slices.Equal(p.LabelSet(again), p.LabelSet(first)) {
			t.Errorf("%s: appended set %d %v, first %d %v; want a new id for equal labels", name, again, p.LabelSet(again), first, p.LabelSet(first))
		}
		if id := p.AddLabels(set); id != first && id != again {
			t.Errorf("%s: AddLabels of an existing set gave %d, want %d or %d", name, id, first, again)
		}
		other := p.AddLabels(Labels{{LabelTaskID, "8"}})
		if other == first || other == again || p.AddLabels(Labels{{LabelTaskID, "8"}}) != other {
			t.Errorf("%s: a new set %d is not found again by value", name, other)
		}
	}
}

func TestLabelsOnlyAndWithout(t *testing.T) {
	ls := Labels{{LabelExecutorID, "3"}, {LabelStageID, "1"}, {LabelTaskID, "7"}}.Normalize()
	if got, want := ls.Only(LabelStageID, LabelTaskID, "absent").String(), `{spark_stage_id="1", spark_task_id="7"}`; got != want {
		t.Errorf("Only = %s, want %s", got, want)
	}
	if got, want := ls.Without(LabelStageID, LabelTaskID).String(), `{spark_executor_id="3"}`; got != want {
		t.Errorf("Without = %s, want %s", got, want)
	}
}

// LabelAll gives every sample the labels: a sample's own label of the same
// name is dropped, its other labels kept.
func TestLabelAll(t *testing.T) {
	p := build(t, nil, "a 1", "b 2")
	own := p.AddLabels(Labels{{LabelServiceName, "embedded"}, {LabelThreadPool, "pool"}})
	p.Samples[0].Labels = own
	p.LabelAll(Labels{{LabelServiceName, "upload"}})
	for _, s := range p.Samples {
		if got := p.Label(s, LabelServiceName); got != "upload" {
			t.Errorf("sample %v: service_name %q, want the upload's", s, got)
		}
	}
	if got := p.Label(p.Samples[0], LabelThreadPool); got != "pool" {
		t.Errorf("thread_pool %q, want the sample's own", got)
	}
	if id := p.AddLabels(Labels{{LabelThreadPool, "pool"}}); id != own {
		t.Errorf("the changed set is not found again: %d, want %d", id, own)
	}
}
