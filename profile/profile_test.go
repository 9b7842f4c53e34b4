package profile

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// build returns a profile with one cpu sample per folded line "a;b;c N".
func build(t *testing.T, labels Labels, lines ...string) *Profile {
	t.Helper()
	p := New()
	p.Labels = labels.Normalize()
	cpu := p.AddType(TypeCPU)
	for _, line := range lines {
		i := strings.LastIndexByte(line, ' ')
		var v int64
		for _, c := range line[i+1:] {
			v = v*10 + int64(c-'0')
		}
		var ids []FrameID
		for _, name := range strings.Split(line[:i], ";") {
			ids = append(ids, p.AddFrame(Frame{Name: name, Kind: KindJava}))
		}
		p.Add(Sample{Stack: p.AddStack(ids), Value: v, Type: cpu})
	}
	return p
}

func folded(tr *Tree) []string {
	var out []string
	var path []string
	var walk func(n *Node)
	walk = func(n *Node) {
		path = append(path, n.Name)
		if n.Self != 0 {
			out = append(out, strings.Join(path[1:], ";")+" "+itoa(n.Self))
		}
		for _, c := range n.Children {
			walk(c)
		}
		path = path[:len(path)-1]
	}
	walk(tr.Root)
	return out
}

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

func TestStackInterning(t *testing.T) {
	p := build(t, nil, "a;b;c 1", "a;b;c 2", "a;b 3", "a;x;c 4")
	// a, a;b, a;b;c, a;x, a;x;c plus the empty stack.
	if got, want := p.NumStacks(), 6; got != want {
		t.Errorf("NumStacks = %d, want %d", got, want)
	}
	if p.Samples[0].Stack != p.Samples[1].Stack {
		t.Errorf("equal stacks got different ids")
	}
	var names []string
	for _, f := range p.Stack(p.Samples[3].Stack, nil) {
		names = append(names, p.Frames[f].Name)
	}
	if got := strings.Join(names, ";"); got != "a;x;c" {
		t.Errorf("Stack = %q, want a;x;c", got)
	}
}

// Stacks added by AppendStack are found by later pushes, whether the index
// existed before them or not.
func TestAppendStack(t *testing.T) {
	for _, pushFirst := range []bool{false, true} {
		p := New()
		a, b := p.AddFrame(Frame{Name: "a"}), p.AddFrame(Frame{Name: "b"})
		var sa StackID
		if pushFirst {
			sa = p.Push(NoStack, a) // the index exists before the appends
		} else {
			sa = p.AppendStack(NoStack, a)
		}
		sab := p.AppendStack(sa, b)
		sabb := p.AppendStack(sab, b)
		for _, c := range []struct {
			parent StackID
			frame  FrameID
			want   StackID
		}{
			{NoStack, a, sa},
			{sa, b, sab},
			{sab, b, sabb},
			{NoStack, b, 4}, // new: the next id
			{sabb, a, 5},
			{NoStack, b, 4},
		} {
			if got := p.Push(c.parent, c.frame); got != c.want {
				t.Errorf("pushFirst %v: Push(%d, %d) = %d, want %d", pushFirst, c.parent, c.frame, got, c.want)
			}
		}
		if got := p.NumStacks(); got != 6 {
			t.Errorf("pushFirst %v: NumStacks = %d, want 6", pushFirst, got)
		}
	}
}

// Many pushes, past several growths of the stack index and across a drop
// and rebuild, give each (parent, frame) pair one id, as a map of the pairs
// does.
func TestStackIndexAgainstMap(t *testing.T) {
	p := New()
	want := map[stackNode]StackID{}
	rng := uint64(1)
	next := func(n uint64) uint64 { // xorshift: repeatable, no seed to pass around
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return rng % n
	}
	for i := range 200_000 {
		if i == 120_000 {
			p.DropIndexes()
		}
		parent := StackID(next(uint64(p.NumStacks())))
		f := FrameID(next(300))
		got := p.Push(parent, f)
		n := stackNode{parent, f}
		if id, ok := want[n]; ok {
			if got != id {
				t.Fatalf("push %d: (%d, %d) = %d, was %d", i, parent, f, got, id)
			}
			continue
		}
		if int(got) != p.NumStacks()-1 {
			t.Fatalf("push %d: new (%d, %d) = %d, want the next id %d", i, parent, f, got, p.NumStacks()-1)
		}
		want[n] = got
	}
	if p.NumStacks() != len(want)+1 {
		t.Errorf("%d stacks, want %d", p.NumStacks(), len(want)+1)
	}
	for n, id := range want {
		if p.Parent(id) != n.parent || p.Leaf(id) != n.frame {
			t.Fatalf("stack %d = (%d, %d), want (%d, %d)", id, p.Parent(id), p.Leaf(id), n.parent, n.frame)
		}
	}
}

func TestSetType(t *testing.T) {
	p := build(t, nil, "a;b 3")
	p.SetType(0, TypeWall)
	if _, ok := p.TypeIndex(TypeCPU); ok {
		t.Errorf("the old type is still indexed")
	}
	if id, ok := p.TypeIndex(TypeWall); !ok || id != 0 || p.Types[0] != TypeWall || p.Total(0) != 3 {
		t.Errorf("TypeIndex(wall) = %d, %v; types %v", id, ok, p.Types)
	}
	p.AddType(TypeCPU)
	defer func() {
		if recover() == nil {
			t.Errorf("SetType to another of the profile's types did not panic")
		}
	}()
	p.SetType(0, TypeCPU)
}

// A profile that dropped its indexes interns as before when added to,
// and a profile growing into indexes another dropped starts empty.
func TestDropIndexes(t *testing.T) {
	p := build(t, nil, "a;b;c 1", "a;x 2")
	before := p.NumStacks()
	abc := p.Samples[0].Stack
	p.DropIndexes()
	a, b, c := p.AddFrame(Frame{Name: "a", Kind: KindJava}), p.AddFrame(Frame{Name: "b", Kind: KindJava}), p.AddFrame(Frame{Name: "c", Kind: KindJava})
	if got := p.AddStack([]FrameID{a, b, c}); got != abc || p.NumStacks() != before || len(p.Frames) != 4 {
		t.Errorf("after DropIndexes: a;b;c = %d (want %d), %d stacks (want %d), %d frames (want 4)", got, abc, p.NumStacks(), before, len(p.Frames))
	}
	if p.AddStack([]FrameID{a, c}) == abc || p.NumStacks() != before+1 {
		t.Errorf("a new stack was not added")
	}
	p.DropIndexes()
	q := New()
	q.Grow(10, 10)
	if id := q.AddFrame(Frame{Name: "c"}); id != 0 || len(q.Frames) != 1 {
		t.Errorf("a frame in a reused index: id %d, %d frames; want 0, 1", id, len(q.Frames))
	}
	if id := q.Push(NoStack, 0); id != 1 {
		t.Errorf("a stack in a reused index: id %d, want 1", id)
	}
}

func TestMergeLabels(t *testing.T) {
	a := build(t, Labels{{LabelAppID, "app1"}, {LabelExecutorID, "1"}}, "a;b 1")
	b := build(t, Labels{{LabelAppID, "app1"}, {LabelExecutorID, "2"}}, "a;b 2", "a;c 5")
	m := Merge(a, b)
	if got, want := m.Labels.String(), `{spark_app_id="app1"}`; got != want {
		t.Errorf("common labels = %s, want %s", got, want)
	}
	byExec := map[string]int64{}
	for _, s := range m.Samples {
		byExec[m.Label(s, LabelExecutorID)] += s.Value
	}
	if byExec["1"] != 1 || byExec["2"] != 7 {
		t.Errorf("values by executor = %v, want 1:1 2:7", byExec)
	}
	if a.Labels.String() != `{spark_app_id="app1", spark_executor_id="1"}` {
		t.Errorf("Merge modified its input: %s", a.Labels)
	}
}

func TestMergeAggregate(t *testing.T) {
	m := NewMerger(MergeOptions{Aggregate: true})
	for i := 0; i < 100; i++ {
		m.Add(build(t, Labels{{LabelExecutorID, "1"}}, "a;b 1", "a;c 2"))
	}
	p := m.Profile()
	if len(p.Samples) != 2 {
		t.Fatalf("aggregated samples = %d, want 2", len(p.Samples))
	}
	if got := p.Total(0); got != 300 {
		t.Errorf("total = %d, want 300", got)
	}
	// Samples aggregated while they had no labels of their own take the
	// executor label when a second executor arrives, and keep aggregating.
	m = NewMerger(MergeOptions{Aggregate: true})
	for _, e := range []string{"1", "2", "1", "2", "1"} {
		m.Add(build(t, Labels{{LabelExecutorID, e}}, "a;b 1", "a;c 2", "a;b 4"))
	}
	p = m.Profile()
	if len(p.Samples) != 4 || p.Total(0) != 35 {
		t.Fatalf("two executors: %d samples, total %d; want 4, 35", len(p.Samples), p.Total(0))
	}
	for _, s := range p.Samples {
		e, _ := p.SampleLabels(s).Get(LabelExecutorID)
		leaf := p.Frames[p.Leaf(s.Stack)].Name
		if want := map[string]int64{"1": 3, "2": 2}[e] * map[string]int64{"b": 5, "c": 2}[leaf]; s.Value != want {
			t.Errorf("executor %q, leaf %s: %d, want %d", e, leaf, s.Value, want)
		}
	}
}

// Relabel drops task labels from the samples' and the profiles' label
// sets, and the samples of tasks whose other labels agree combine.
func TestMergeRelabel(t *testing.T) {
	task := func(exec, task string, folded ...string) *Profile {
		return build(t, Labels{{LabelExecutorID, exec}, {LabelTaskID, task}}, folded...)
	}
	m := NewMerger(MergeOptions{Aggregate: true, Relabel: func(ls Labels) Labels { return ls.Without(LabelTaskID) }})
	m.Add(task("1", "10", "a;b 1", "a;c 2"))
	m.Add(task("1", "11", "a;b 4"))
	m.Add(task("2", "12", "a;b 8"))
	p := m.Profile()
	got := map[string]int64{}
	for _, s := range p.Samples {
		ls := p.SampleLabels(s)
		if _, ok := ls.Get(LabelTaskID); ok {
			t.Errorf("sample keeps its task: %s", ls)
		}
		e, _ := ls.Get(LabelExecutorID)
		got[e+" "+p.Frames[p.Leaf(s.Stack)].Name] += s.Value
	}
	if want := map[string]int64{"1 b": 5, "1 c": 2, "2 b": 8}; !maps.Equal(got, want) || len(p.Samples) != len(want) {
		t.Errorf("%d samples %v, want one each of %v", len(p.Samples), got, want)
	}
}

// With WithinAdd, samples combine within each added profile, across its
// times' buckets as without it, and a key two profiles share stays two
// samples; the totals are the same either way.
func TestMergeWithinAdd(t *testing.T) {
	timed := func(e string) *Profile {
		p := build(t, Labels{{LabelExecutorID, e}}, "a;b 1", "a;c 2", "a;b 4", "a;b 8")
		for i, at := range []int64{1500, 1700, 1900, 2100} { // b's first two share second 1
			p.Samples[i].Time = at * 1e6
		}
		return p
	}
	tests := []struct {
		name      string
		withinAdd bool
		execs     []string
		want      int
	}{
		{"one executor, shared keys combine", false, []string{"1", "1"}, 3},
		{"one executor, within each add", true, []string{"1", "1"}, 6},
		{"two executors", false, []string{"1", "2"}, 6},
		{"two executors, within each add", true, []string{"1", "2"}, 6},
		{"executors pushed down", true, []string{"1", "1", "2"}, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger(MergeOptions{Aggregate: true, Resolution: 1e9, WithinAdd: tt.withinAdd})
			for _, e := range tt.execs {
				m.Add(timed(e))
			}
			p := m.Profile()
			if len(p.Samples) != tt.want || p.Total(0) != 15*int64(len(tt.execs)) {
				t.Errorf("%d samples, total %d; want %d, %d", len(p.Samples), p.Total(0), tt.want, 15*len(tt.execs))
			}
		})
	}
}

// sumFixture is a profile of stacks a;b and a;c, types cpu and wall,
// threads t1 and t2, and a function making a label set of a stage and a
// task, for the SumOver tests to give samples.
func sumFixture(t *testing.T) (p *Profile, b, c StackID, cpu, wall TypeID, t1, t2 ThreadID, stage func(st, task string) LabelSetID) {
	p = build(t, nil, "a;b 1", "a;c 2")
	b, c = p.Samples[0].Stack, p.Samples[1].Stack
	cpu = p.Samples[0].Type
	wall = p.AddType(TypeWall)
	stage = func(st, task string) LabelSetID {
		return p.AddLabels(Labels{{LabelStageID, st}, {LabelTaskID, task}})
	}
	t1, t2 = p.AddThread(Thread{ID: 1, Name: "t1"}), p.AddThread(Thread{ID: 2, Name: "t2"})
	return p, b, c, cpu, wall, t1, t2, stage
}

// SumOverTime sums samples over time and threads per stack, label set
// (after relabelling, which may join sets), type and state; a stack seen
// under several types and states keeps one sum for each.
func TestSumOverTime(t *testing.T) {
	p, b, c, cpu, wall, t1, t2, stage := sumFixture(t)
	p.Samples = []Sample{
		{Value: 1, Time: 1e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("1", "10")},
		{Value: 2, Time: 2e9, Stack: b, Type: cpu, Thread: t2, Labels: stage("1", "11")}, // joins the first
		{Value: 4, Time: 2e9, Stack: b, Type: wall, Thread: t2, Labels: stage("1", "11")},
		{Value: 8, Time: 3e9, Stack: b, Type: wall, State: StateSleeping, Thread: t1, Labels: stage("1", "10")},
		{Value: 16, Time: 3e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("2", "12")},
		{Value: 32, Time: 4e9, Stack: c, Type: cpu, Thread: t1, Labels: stage("1", "10")},
		{Value: 64, Time: 5e9, Stack: b, Type: cpu, Thread: t2, Labels: stage("1", "13")}, // joins the first
	}
	got := map[string]int64{}
	r := p.SumOverTime(func(ls Labels) Labels { return ls.Without(LabelTaskID) })
	for _, s := range r.Samples {
		if s.Time != 0 || s.Thread != NoThread {
			t.Errorf("sample %+v keeps its time or thread", s)
		}
		k := fmt.Sprintf("%s %s/%d %s", r.Frames[r.Leaf(s.Stack)].Name, r.Types[s.Type].Name, s.State, r.SampleLabels(s))
		if _, dup := got[k]; dup {
			t.Errorf("two sums of %s", k)
		}
		got[k] = s.Value
	}
	want := map[string]int64{
		`b cpu/0 {spark_stage_id="1"}`:                               67,
		`b wall/0 {spark_stage_id="1"}`:                              4,
		fmt.Sprintf(`b wall/%d {spark_stage_id="1"}`, StateSleeping): 8,
		`b cpu/0 {spark_stage_id="2"}`:                               16,
		`c cpu/0 {spark_stage_id="1"}`:                               32,
	}
	if !maps.Equal(got, want) {
		t.Errorf("sums %v, want %v", got, want)
	}
}

// SumOverTimeByThread sums as SumOverTime does, but per thread as well:
// only samples of one thread join.
func TestSumOverTimeByThread(t *testing.T) {
	p, b, c, cpu, wall, t1, t2, stage := sumFixture(t)
	p.Samples = []Sample{
		{Value: 1, Time: 1e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("1", "10")},
		{Value: 2, Time: 2e9, Stack: b, Type: cpu, Thread: t2, Labels: stage("1", "11")}, // another thread
		{Value: 4, Time: 2e9, Stack: b, Type: wall, Thread: t2, Labels: stage("1", "11")},
		{Value: 8, Time: 3e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("1", "12")}, // joins the first
		{Value: 16, Time: 3e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("2", "12")},
		{Value: 32, Time: 4e9, Stack: c, Type: cpu, Thread: t1, Labels: stage("1", "10")},
		{Value: 64, Time: 5e9, Stack: b, Type: cpu, Thread: t2, Labels: stage("1", "13")}, // joins the second
	}
	got := map[string]int64{}
	r := p.SumOverTimeByThread(func(ls Labels) Labels { return ls.Without(LabelTaskID) })
	for _, s := range r.Samples {
		if s.Time != 0 {
			t.Errorf("sample %+v keeps its time", s)
		}
		k := fmt.Sprintf("%s %s %s %s", r.Frames[r.Leaf(s.Stack)].Name, r.Threads[s.Thread].Name, r.Types[s.Type].Name, r.SampleLabels(s))
		if _, dup := got[k]; dup {
			t.Errorf("two sums of %s", k)
		}
		got[k] = s.Value
	}
	want := map[string]int64{
		`b t1 cpu {spark_stage_id="1"}`:  9,
		`b t2 cpu {spark_stage_id="1"}`:  66,
		`b t2 wall {spark_stage_id="1"}`: 4,
		`b t1 cpu {spark_stage_id="2"}`:  16,
		`c t1 cpu {spark_stage_id="1"}`:  32,
	}
	if !maps.Equal(got, want) {
		t.Errorf("sums %v, want %v", got, want)
	}
}

// SumOverStacks sums samples over stacks and threads per time (to the
// second asked for), label set (after relabelling), type and state.
func TestSumOverStacks(t *testing.T) {
	p, b, c, cpu, wall, t1, t2, stage := sumFixture(t)
	p.Samples = []Sample{
		{Value: 1, Time: 1e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("1", "10")},
		{Value: 2, Time: 1e9, Stack: c, Type: cpu, Thread: t2, Labels: stage("1", "11")}, // joins the first
		{Value: 4, Time: 1e9, Stack: b, Type: wall, Thread: t2, Labels: stage("1", "11")},
		{Value: 8, Time: 1e9, Stack: b, Type: wall, State: StateSleeping, Thread: t1, Labels: stage("1", "10")},
		{Value: 16, Time: 2e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("1", "12")},
		{Value: 32, Time: 2e9, Stack: c, Type: cpu, Thread: t1, Labels: stage("2", "10")},
		{Value: 64, Time: 0, Stack: b, Type: cpu, Thread: t2, Labels: stage("1", "13")},
		{Value: 128, Time: 2.5e9, Stack: b, Type: cpu, Thread: t2, Labels: stage("2", "14")}, // to the second
		{Value: 256, Time: 1.5e9, Stack: c, Type: cpu, Thread: t1, Labels: stage("1", "15")}, // back to the first second
	}
	r := p.SumOverStacks(func(ls Labels) Labels { return ls.Without(LabelTaskID) }, 1e9)
	got := stackSums(t, r, r.Samples)
	want := map[string]int64{
		`1 cpu/0 {spark_stage_id="1"}`:                               259,
		`1 wall/0 {spark_stage_id="1"}`:                              4,
		fmt.Sprintf(`1 wall/%d {spark_stage_id="1"}`, StateSleeping): 8,
		`2 cpu/0 {spark_stage_id="1"}`:                               16,
		`2 cpu/0 {spark_stage_id="2"}`:                               160,
		`0 cpu/0 {spark_stage_id="1"}`:                               64,
	}
	if !maps.Equal(got, want) {
		t.Errorf("sums %v, want %v", got, want)
	}
}

// stackSums returns sums over stacks in r's label sets by their time (in
// seconds), type, state and labels, failing t if a key has two sums or a
// sum keeps a stack or thread.
func stackSums(t *testing.T, r *Profile, sums []Sample) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, s := range sums {
		if s.Stack != NoStack || s.Thread != NoThread {
			t.Errorf("sample %+v keeps its stack or thread", s)
		}
		k := fmt.Sprintf("%d %s/%d %s", s.Time/1e9, r.Types[s.Type].Name, s.State, r.SampleLabels(s))
		if _, dup := got[k]; dup {
			t.Errorf("two sums of %s", k)
		}
		got[k] = s.Value
	}
	return got
}

// The map SumOverTimeMap returns sums parts of the samples into the
// rollup's label sets without adding any: the parts' sums add up to the
// rollup's, and the sums over stacks in them, placed in WithoutStacks of
// the rollup, are SumOverStacks's.
func TestSumSamplesWithMap(t *testing.T) {
	p, b, c, cpu, wall, t1, t2, stage := sumFixture(t)
	p.Samples = []Sample{
		{Value: 1, Time: 1e9, Stack: b, Type: cpu, Thread: t1, Labels: stage("1", "10")},
		{Value: 2, Time: 2e9, Stack: b, Type: cpu, Thread: t2, Labels: stage("1", "11")},
		{Value: 4, Time: 2e9, Stack: c, Type: wall, Thread: t2, Labels: stage("2", "11")},
		{Value: 8, Time: 3e9, Stack: b, Type: cpu, State: StateSleeping, Thread: t1, Labels: stage("1", "10")},
		{Value: 16, Time: 3e9, Stack: c, Type: cpu, Thread: t1, Labels: stage("2", "12")},
	}
	drop := func(ls Labels) Labels { return ls.Without(LabelTaskID) }
	roll, m := p.SumOverTimeMap(drop)
	sets := roll.NumLabelSets()
	key := func(s Sample) string {
		return fmt.Sprintf("%d %d/%d %s", s.Stack, s.Type, s.State, roll.SampleLabels(s))
	}
	want, got := map[string]int64{}, map[string]int64{}
	for _, s := range roll.Samples {
		want[key(s)] += s.Value
	}
	for _, part := range [][]Sample{p.Samples[:2], p.Samples[2:]} {
		for _, s := range p.SumSamplesOverTime(part, m) {
			got[key(s)] += s.Value
		}
	}
	if !maps.Equal(got, want) || roll.NumLabelSets() != sets {
		t.Errorf("parts' sums %v (%d label sets), want %v (%d)", got, roll.NumLabelSets(), want, sets)
	}
	tl := roll.WithoutStacks()
	if tl.NumLabelSets() != sets || len(tl.Frames) != 0 || len(tl.Samples) != 0 {
		t.Fatalf("WithoutStacks: %d label sets, %d frames, %d samples; want %d, 0, 0", tl.NumLabelSets(), len(tl.Frames), len(tl.Samples), sets)
	}
	gotTimes := stackSums(t, tl, p.SumSamplesOverStacks(p.Samples, m, 1e9))
	s := p.SumOverStacks(drop, 1e9)
	if wantTimes := stackSums(t, s, s.Samples); !maps.Equal(gotTimes, wantTimes) {
		t.Errorf("sums over stacks in the rollup's sets %v, want %v", gotTimes, wantTimes)
	}
	tl.AddLabels(Labels{{"x", "y"}})
	if roll.NumLabelSets() != sets {
		t.Errorf("a set added to WithoutStacks's profile went into the rollup's")
	}
}

// grow keeps a slice's elements and makes room for n more, exactly when
// the slice has none to spare and by a quarter at least after, so that
// growing step by step stays linear.
func TestGrow(t *testing.T) {
	tests := []struct {
		len, cap, n     int
		wantCap, minCap int
	}{
		{0, 0, 10, 10, 10},
		{3, 10, 7, 10, 10},    // room enough: unchanged
		{3, 10, 8, 0, 12},     // a quarter more than 10
		{100, 100, 1, 0, 125}, // a quarter more than 100
		{100, 100, 500, 600, 600},
	}
	for _, tt := range tests {
		s := make([]int, tt.len, tt.cap)
		for i := range s {
			s[i] = i + 1
		}
		g := grow(s, tt.n)
		if len(g) != tt.len || cap(g)-len(g) < tt.n || cap(g) < tt.minCap || (tt.wantCap != 0 && cap(g) != tt.wantCap) {
			t.Errorf("grow(len %d cap %d, %d): len %d cap %d", tt.len, tt.cap, tt.n, len(g), cap(g))
		}
		for i := range g {
			if g[i] != i+1 {
				t.Fatalf("grow(len %d cap %d, %d) lost element %d", tt.len, tt.cap, tt.n, i)
			}
		}
	}
}

// Two aggregation keys whose hashes collide stay two samples: the second
// key is found through the fallback map, also after samples are relabelled.
func TestMergeAggregateHashCollision(t *testing.T) {
	m := NewMerger(MergeOptions{Aggregate: true, Resolution: 1})
	a := Sample{Time: 1, Value: 1, Thread: 1}
	b := Sample{Time: 2, Value: 10, Thread: 1}
	m.addSample(a)
	m.samplesAt(b.Time).byHash.Put(keyOf(&b).hash(), 0) // b's hash now finds a's sample
	for _, s := range []Sample{b, a, b} {
		m.addSample(s)
	}
	got := map[int64]int64{}
	for _, s := range m.out.Samples {
		got[s.Time] += s.Value
	}
	if len(m.out.Samples) != 2 || got[1] != 2 || got[2] != 20 {
		t.Fatalf("samples %v, want time 1: 2, time 2: 20", m.out.Samples)
	}
	m.pushDown(Labels{{LabelExecutorID, "1"}})
	a.Labels, b.Labels = m.out.Samples[0].Labels, m.out.Samples[1].Labels
	for _, s := range []Sample{b, a, b} {
		m.addSample(s)
	}
	clear(got)
	for _, s := range m.out.Samples {
		got[s.Time] += s.Value
	}
	if len(m.out.Samples) != 2 || got[1] != 3 || got[2] != 40 {
		t.Fatalf("relabelled: samples %v, want time 1: 3, time 2: 40", m.out.Samples)
	}
}

func TestTreeAndTop(t *testing.T) {
	p := build(t, nil, "a;b;c 1", "a;b;c 2", "a;b 3", "a;a;c 4")
	tr := NewTree(p, TypeCPU)
	if got, want := strings.Join(folded(tr), "|"), "a;a;c 4|a;b 3|a;b;c 3"; got != want {
		t.Errorf("tree = %s, want %s", got, want)
	}
	top := tr.Top(2)
	if top[0].Name != "c" || top[0].Self != 7 || top[0].Total != 7 {
		t.Errorf("top[0] = %+v, want c self 7 total 7", top[0])
	}
	// a recurses on one path: its total counts that path once.
	for _, s := range tr.Top(0) {
		if s.Name == "a" && s.Total != 10 {
			t.Errorf("total of recursive a = %d, want 10", s.Total)
		}
	}
}

func TestDiff(t *testing.T) {
	base := build(t, nil, "a;b 10", "a;c 10")
	next := build(t, nil, "a;b 30", "a;c 10")
	d := Diff(base, next, TypeCPU)
	if !d.HasBase || d.Root.Total != 40 || d.Root.BaseTotal != 20 || d.BaseScale() != 2 {
		t.Fatalf("diff root = %+v scale %v", d.Root, d.BaseScale())
	}
	// c kept its absolute value but halved its share.
	c := d.Root.Children[0].Children[1]
	if c.Name != "c" || float64(c.Total)-float64(c.BaseTotal)*d.BaseScale() != -10 {
		t.Errorf("normalised change of c = %v, want -10", float64(c.Total)-float64(c.BaseTotal)*d.BaseScale())
	}
}

// The first Add of a profile with no more samples than stacks takes its
// frames and stacks: whole when the kept samples are on every stack, else
// those they are on (a filter's, or a time slice's of a block, whose
// tables hold stacks of other slices). The merged profile is the same as the interned one,
// holds no stack twice and none without a sample on or above it, and the
// inputs do not change, through the Adds that follow too.
func TestMergeTakesFirstStacks(t *testing.T) {
	first := []string{"a;b;c 1", "a;b;d 2", "a;e 4", "f;g 8"}
	second := []string{"a;b;c 16", "a;x 32", "f;g;h 64"}
	many := []string{"a;b;c 1", "a;b;c 2", "a;b;c 3", "a;b;c 4"} // more samples than stacks
	dropE := func(p *Profile) func(*Sample) bool {
		return func(s *Sample) bool { return p.Frames[p.Leaf(s.Stack)].Name != "e" }
	}
	tests := []struct {
		name   string
		inputs [][]string
		filter bool // the first input drops its samples of leaf e
		slice  bool // the first input has a stack no sample is on, a;q;r
		want   []string
	}{
		{"one profile", [][]string{first}, false, false, []string{"a;b;c 1", "a;b;d 2", "a;e 4", "f;g 8"}},
		{"one profile filtered", [][]string{first}, true, false, []string{"a;b;c 1", "a;b;d 2", "f;g 8"}},
		{"a slice of a block", [][]string{first}, false, true, []string{"a;b;c 1", "a;b;d 2", "a;e 4", "f;g 8"}},
		{"taken, then another", [][]string{first, second}, false, false, []string{"a;b;c 17", "a;b;d 2", "a;e 4", "a;x 32", "f;g 8", "f;g;h 64"}},
		{"filtered, then another", [][]string{first, second}, true, false, []string{"a;b;c 17", "a;b;d 2", "a;x 32", "f;g 8", "f;g;h 64"}},
		{"a slice, then another", [][]string{first, second}, false, true, []string{"a;b;c 17", "a;b;d 2", "a;e 4", "a;x 32", "f;g 8", "f;g;h 64"}},
		{"interned first, then another", [][]string{many, first}, false, false, []string{"a;b;c 11", "a;b;d 2", "a;e 4", "f;g 8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMerger(MergeOptions{Aggregate: true})
			var inputs []*Profile
			var before []string
			for i, lines := range tt.inputs {
				p := build(t, nil, lines...)
				if i == 0 && tt.slice {
					a := p.AddFrame(Frame{Name: "a", Kind: KindJava})
					p.AddStack([]FrameID{a, p.AddFrame(Frame{Name: "q", Kind: KindJava}), p.AddFrame(Frame{Name: "r", Kind: KindJava})})
				}
				inputs = append(inputs, p)
				before = append(before, fmt.Sprint(p.Frames, p.stacks))
				if i == 0 && tt.filter {
					m.AddFunc(p, dropE(p))
				} else {
					m.Add(p)
				}
			}
			out := m.Profile()
			if got := folded(NewTree(out, TypeCPU)); !slices.Equal(got, tt.want) {
				t.Errorf("merged %q, want %q", got, tt.want)
			}
			used := make([]bool, len(out.stacks))
			for _, s := range out.Samples {
				for st := s.Stack; st != NoStack; st = out.Parent(st) {
					used[st] = true
				}
			}
			seen := map[stackNode]bool{}
			for i, n := range out.stacks[1:] {
				if seen[n] || !used[i+1] {
					t.Errorf("stack %d (%v): twice %t, unused %t", i+1, n, seen[n], !used[i+1])
				}
				seen[n] = true
			}
			for i, p := range inputs {
				if got := fmt.Sprint(p.Frames, p.stacks); got != before[i] {
					t.Errorf("input %d changed: %s, was %s", i, got, before[i])
				}
			}
		})
	}
}
