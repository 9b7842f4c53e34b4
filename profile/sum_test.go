package profile

import (
	"math"
	"testing"
)

func TestAddValues(t *testing.T) {
	tests := []struct{ a, b, want int64 }{
		{1, 2, 3},
		{-5, 3, -2},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, -1, math.MaxInt64 - 1},
		{math.MinInt64, math.MaxInt64, -1},
	}
	for _, tt := range tests {
		if got := AddValues(tt.a, tt.b); got != tt.want {
			t.Errorf("AddValues(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// Values whose sums pass the largest int64 (a profile that says so, or
// many added together) sum to it: a flame graph's total, a merge's sample
// and a profile's total never turn negative.
func TestSumsSaturate(t *testing.T) {
	p := New()
	p.AddType(TypeSamples)
	main := p.Push(NoStack, p.AddFrame(Frame{Name: "main"}))
	a, b := p.Push(main, p.AddFrame(Frame{Name: "a"})), p.Push(main, p.AddFrame(Frame{Name: "b"}))
	p.Add(Sample{Stack: a, Value: math.MaxInt64})
	p.Add(Sample{Stack: a, Value: 1})
	p.Add(Sample{Stack: b, Value: math.MaxInt64})
	if got := p.Total(0); got != math.MaxInt64 {
		t.Errorf("total %d", got)
	}
	tree := NewTree(p, TypeSamples)
	if got := tree.Root.Total; got != math.MaxInt64 {
		t.Errorf("the tree's total %d", got)
	}
	for _, n := range tree.Root.Children[0].Children {
		if n.Total != math.MaxInt64 {
			t.Errorf("%s: total %d", n.Name, n.Total)
		}
	}
	m := NewMerger(MergeOptions{Aggregate: true})
	m.Add(p)
	m.Add(p)
	for name, q := range map[string]*Profile{"merged": m.Profile(), "summed over time": p.SumOverTime(func(ls Labels) Labels { return ls })} {
		if len(q.Samples) != 2 {
			t.Errorf("%s: %d samples, want one a stack", name, len(q.Samples))
		}
		for _, s := range q.Samples {
			if s.Value != math.MaxInt64 {
				t.Errorf("%s: sample %+v", name, s)
			}
		}
	}
}
