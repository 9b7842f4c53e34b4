package profile

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name string
		f    Filter
		want int64
	}{
		{"all", Filter{}, 1 + 2 + 4},
		{"focus", Filter{Focus: regexp.MustCompile(`^x$`)}, 4},
		{"ignore", Filter{Ignore: regexp.MustCompile(`^b$`)}, 4},
		{"family", Filter{Family: "alloc"}, 0},
		{"label", Filter{Labels: []Matcher{must(ParseMatcher("host=~h.*"))}}, 7},
		{"label miss", Filter{Labels: []Matcher{must(ParseMatcher("host!=h1"))}}, 0},
		{"state", Filter{States: []ThreadState{StateBlocked}}, 0},
		{"state unknown", Filter{States: []ThreadState{StateUnknown}}, 7},
		{"call site", Filter{CallSite: []string{"a", "b"}}, 1 + 2},
		{"call site, whole stack", Filter{CallSite: []string{"a", "x", "c"}}, 4},
		{"call site, root only", Filter{CallSite: []string{"a"}}, 7},
		{"call site not at the root", Filter{CallSite: []string{"b"}}, 0},
		{"call site deeper than the stacks", Filter{CallSite: []string{"a", "b", "c", "d"}}, 0},
		{"call site of no function", Filter{CallSite: []string{"a", "nosuch"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := build(t, Labels{{LabelHost, "h1"}}, "a;b;c 1", "a;b 2", "a;x;c 4")
			p.Filter(tt.f)
			if got := p.Total(0); got != tt.want {
				t.Errorf("total = %d, want %d", got, tt.want)
			}
		})
	}
}

// A thread_name matcher matches the name of a sample's thread where the
// sample's labels have no thread_name, and the label where they have one.
func TestFilterThreadName(t *testing.T) {
	p := build(t, Labels{{LabelHost, "h1"}}, "a 1", "b 2", "c 4", "d 8")
	worker := p.AddThread(Thread{Name: "Executor task launch worker for task 5.0 in stage 1.0 (TID 5)", ID: 11})
	dispatcher := p.AddThread(Thread{Name: "dispatcher-event-loop-1", ID: 12})
	labelled := p.AddLabels(Labels{{LabelThreadName, "pool-2-thread-1"}})
	p.Samples[0].Thread = worker
	p.Samples[1].Thread = dispatcher
	p.Samples[2].Thread, p.Samples[2].Labels = worker, labelled // the label names it
	// Sample 3 has no thread.
	for _, c := range []struct {
		matchers string
		want     int64
	}{
		{`thread_name=~"Executor task launch worker.*"`, 1},
		{`thread_name="pool-2-thread-1"`, 4},
		{`thread_name!="dispatcher-event-loop-1"`, 1 + 4 + 8},
		{`thread_name=""`, 8},
		{`thread_name=~"Executor.*|pool-2-thread-1"`, 1 + 4},
		{`thread_name=~".*", host="h2"`, 0},
	} {
		var ms []Matcher
		for _, m := range strings.Split(c.matchers, ", ") {
			ms = append(ms, must(ParseMatcher(m)))
		}
		cp := *p
		cp.Samples = slices.Clone(p.Samples)
		cp.Filter(Filter{Labels: ms})
		if got := cp.Total(0); got != c.want {
			t.Errorf("{%s}: %d, want %d", c.matchers, got, c.want)
		}
	}
}

// TestFilterThreads: the threads Filter.Threads rules out hold no sample
// the filter keeps, and with no thread_name label on the samples it decides
// thread_name matchers and the thread regexp as the filter does.
func TestFilterThreads(t *testing.T) {
	p := build(t, nil, "a 1", "b 2", "c 4", "d 8")
	worker := p.AddThread(Thread{Name: "Executor task launch worker for task 5.0 in stage 1.0 (TID 5)", ID: 11})
	dispatcher := p.AddThread(Thread{Name: "dispatcher-event-loop-1", ID: 12})
	p.Samples[0].Thread, p.Samples[1].Thread, p.Samples[2].Thread = worker, dispatcher, worker
	labelled := *p
	labelled.Samples = slices.Clone(p.Samples)
	labelled.OwnLabelSets() // p's label sets stay as they are
	labelled.Samples[2].Labels = labelled.AddLabels(Labels{{LabelThreadName, "pool-2-thread-1"}})
	for _, c := range []struct {
		name    string
		filter  Filter
		threads bool // whether Threads decides
	}{
		{"thread regexp", Filter{Thread: regexp.MustCompile("^Executor")}, true},
		{"thread_name", Filter{Labels: []Matcher{must(ParseMatcher(`thread_name=~"dispatcher.*"`))}}, true},
		{"thread_name !=", Filter{Labels: []Matcher{must(ParseMatcher(`thread_name!="dispatcher-event-loop-1"`))}}, true},
		{"no thread", Filter{Labels: []Matcher{must(ParseMatcher(`host="h1"`))}}, false},
	} {
		for _, q := range []struct {
			p        *Profile
			labelled bool
		}{{p, false}, {&labelled, true}} {
			threads := c.filter.Threads(q.p, func() bool { return q.labelled })
			if decides := threads != nil; decides != (c.threads && !(q.labelled && c.filter.Thread == nil)) {
				t.Errorf("%s, labelled %v: Threads decides %v", c.name, q.labelled, decides)
			}
			keep := c.filter.Selector(q.p)
			for i, smp := range q.p.Samples {
				kept := keep(&smp)
				if threads != nil && kept && !threads[smp.Thread] {
					t.Errorf("%s, labelled %v: sample %d kept, its thread ruled out", c.name, q.labelled, i)
				}
				if threads != nil && !q.labelled && kept != threads[smp.Thread] {
					t.Errorf("%s: sample %d kept %v, its thread %v", c.name, i, kept, threads[smp.Thread])
				}
			}
		}
	}
}

func must(m Matcher, err error) Matcher {
	if err != nil {
		panic(err)
	}
	return m
}
