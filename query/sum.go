package query

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// MaxSteps bounds the points of a series; a smaller step is widened.
const MaxSteps = 5000

// AutoSteps is about how many points a series of Sums.Step zero has.
const AutoSteps = 300

// AllTime is a step that sums all times into one: the sums per group.
const AllTime = time.Duration(math.MaxInt64)

// Sums says what Sum sums: per step, and per value of the labels By
// ("state" names the thread state).
type Sums struct {
	// Step is the time step; zero picks a round one (50 ms, 5 s, 5 min)
	// that spreads the span over at most AutoSteps points, so that a
	// recording of ten seconds is drawn as well as one of a day.
	Step time.Duration
	By   []string
	// UntimedAtUpload puts samples without a time at their upload's
	// start, as a timeline draws them, instead of adding them up apart.
	UntimedAtUpload bool
	// From and Until, when set, bound the span the step is widened to
	// cover in MaxSteps points (a render's timeline spans its range);
	// otherwise the selected uploads' sample span within the request's
	// range.
	From, Until int64
	// StepEnds counts the steps from the request's start and stamps each
	// point at the end of its step, as Pyroscope's SelectSeries does: a
	// point at T sums [T−step, T). Otherwise the steps are whole
	// multiples of the step since the epoch, each point stamped at its
	// start.
	StepEnds bool
}

// Summed is what Sum summed.
type Summed struct {
	// Type is the sample type summed (see SampleType).
	Type profile.SampleType
	// Series holds a series per combination of the values of Sums.By, in
	// the order of those values.
	Series []StepSeries
	// Untimed is the value of samples without a time, unless
	// Sums.UntimedAtUpload.
	Untimed int64
	// Step is the step summed by: Sums.Step, widened to keep the span
	// under MaxSteps points.
	Step time.Duration
}

// StepSeries is one series of Sum: the values of its grouping labels, and
// [timeMs, value] per step that has samples, in time order.
type StepSeries struct {
	Labels []string
	Points [][2]int64
}

// Sum sums the samples req selects, of the type req asks for (SampleType),
// per step and per combination of the values of the labels o.By: summed as
// each upload is read, not merged into one profile first (an hour of 100
// executors is tens of millions of samples), from a block's timeline when
// it serves (seriesSource).
func (e *Engine) Sum(ctx context.Context, tenant string, req Request, o Sums) (Summed, error) {
	s := &summer{by: o.By, untimedAtUpload: o.UntimedAtUpload, typ: req.Type, sums: map[profile.SampleType]*typeSums{}}
	if o.StepEnds {
		s.origin, s.stepEnds = req.Filter.From, true // the start asked for, before a stage narrows it
	}
	req = narrowToStage(req, e.stageWindowOf(tenant))
	step, err := e.sumStep(tenant, req, o)
	if err != nil {
		return Summed{Step: step}, err
	}
	s.step = step
	if err := e.eachUpload(ctx, tenant, req, seriesSource(ctx, e.sums, o.By, step, s.origin), s.add); err != nil {
		return Summed{Step: step}, err
	}
	return s.result(), nil
}

// roundSteps are the steps autoStep picks from: round milliseconds,
// seconds, minutes and hours, as a clock's ticks.
var roundSteps = func() []time.Duration {
	var ds []time.Duration
	for _, ms := range []time.Duration{1, 2, 5, 10, 20, 50, 100, 200, 500} {
		ds = append(ds, ms*time.Millisecond)
	}
	for _, unit := range []time.Duration{time.Second, time.Minute} {
		for _, n := range []time.Duration{1, 2, 5, 10, 15, 30} {
			ds = append(ds, n*unit)
		}
	}
	for _, h := range []time.Duration{1, 2, 3, 6, 12, 24} {
		ds = append(ds, h*time.Hour)
	}
	return ds
}()

// autoStep returns the first round step (roundSteps) that spreads the
// span [lo, hi] (ns) over at most AutoSteps points: 50 ms for a recording
// of ten seconds, 5 min for a day; whole days past them.
func autoStep(lo, hi int64) time.Duration {
	if hi <= lo {
		return time.Second
	}
	want := (uint64(hi) - uint64(lo)) / AutoSteps
	for _, d := range roundSteps {
		if uint64(d) >= want {
			return d
		}
	}
	day := uint64(24 * time.Hour)
	return time.Duration(min((want+day-1)/day*day, math.MaxInt64/2/day*day))
}

// sumStep returns the step Sum sums by: o.Step, widened to cover the span
// in MaxSteps points.
func (e *Engine) sumStep(tenant string, req Request, o Sums) (time.Duration, error) {
	step := o.Step
	var lo, hi int64
	err := e.store.Select(tenant, req.Query, func(u *store.Upload) error {
		first, last := u.SampleSpan()
		if first != 0 && (lo == 0 || first < lo) {
			lo = first
		}
		hi = max(hi, last)
		return nil
	})
	if err != nil {
		return step, err
	}
	if req.Query.From != 0 {
		lo = max(lo, req.Query.From)
	}
	if req.Query.Until != 0 && hi >= req.Query.Until {
		hi = req.Query.Until - 1
	}
	if o.From != 0 {
		lo = o.From
	}
	if o.Until != 0 {
		hi = o.Until - 1
	}
	if step == 0 {
		step = autoStep(lo, hi)
	}
	// The span as unsigned: hi - lo overflows int64 for samples dated
	// centuries apart.
	if span := uint64(hi) - uint64(lo); hi > lo && step > 0 && span/uint64(step) > MaxSteps {
		step = time.Duration(min(span/MaxSteps+uint64(time.Second)-1, math.MaxInt64)).Truncate(time.Second)
	}
	return step, nil
}

// group is the sums of one series: per step.
type group struct {
	labels []string
	sums   map[int64]int64
}

// typeSums are the sums of one sample type: per series (the values of by,
// joined) and step.
type typeSums struct {
	groups  map[string]*group
	untimed int64
}

// summer sums the samples of uploads as they are read.
type summer struct {
	by              []string
	step            time.Duration
	origin          int64 // the steps count from it (Unix ns)
	stepEnds        bool  // points are stamped at their step's end
	untimedAtUpload bool
	typ             string // the type asked for, "" for the default
	sums            map[profile.SampleType]*typeSums
	order           []profile.SampleType // as they first have a selected sample
	// groupOf maps the sumKeys of the upload being added to their group;
	// cleared, not remade, for each upload.
	groupOf map[sumKey]*group
}

// sumKey is what decides a sample's group: its type, label set and state,
// and its thread when by names thread_name (groupValue).
type sumKey struct {
	typ    profile.TypeID
	set    profile.LabelSetID
	state  profile.ThreadState
	thread profile.ThreadID
}

// add sums the samples of profile p of upload u that keep selects.
func (s *summer) add(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error {
	byType := make([]*typeSums, len(p.Types))
	// A type the request does not name is never picked: its samples are
	// not summed.
	skip := make([]bool, len(p.Types))
	if s.typ != "" {
		for i, t := range p.Types {
			_, named := profile.FindType([]profile.SampleType{t}, s.typ)
			skip[i] = !named
		}
	}
	byThread := slices.Contains(s.by, profile.LabelThreadName)
	if s.groupOf == nil {
		s.groupOf = map[sumKey]*group{}
	}
	groupOf := s.groupOf // looked up once per key
	clear(groupOf)
	for i := range p.Samples {
		smp := p.Samples[i] // keep may relabel it
		if skip[smp.Type] || !keep(&smp) {
			continue
		}
		ts := byType[smp.Type]
		if ts == nil {
			ts = s.typeSums(p.Types[smp.Type])
			byType[smp.Type] = ts
		}
		if smp.Time == 0 {
			if !s.untimedAtUpload {
				ts.untimed += smp.Value
				continue
			}
			smp.Time = u.From
		}
		k := sumKey{smp.Type, smp.Labels, smp.State, 0}
		if byThread {
			k.thread = smp.Thread
		}
		g := groupOf[k]
		if g == nil {
			g = ts.group(p, smp, s.by)
			groupOf[k] = g
		}
		g.sums[s.stamp(smp.Time)] += smp.Value
	}
	return nil
}

// stamp returns the time (Unix ns) of the point that sums a sample at t:
// the start of its step, or with stepEnds its end.
func (s *summer) stamp(t int64) int64 {
	if s.step == AllTime {
		return 0
	}
	step := int64(s.step)
	d := t - s.origin
	k := d / step
	if d < 0 && d%step != 0 {
		k-- // the step before the origin, not the one after it
	}
	at := s.origin + k*step
	if s.stepEnds {
		at += step
	}
	return at
}

// typeSums returns the sums of type t, adding them at its first sample.
func (s *summer) typeSums(t profile.SampleType) *typeSums {
	ts := s.sums[t]
	if ts == nil {
		ts = &typeSums{groups: map[string]*group{}}
		s.sums[t] = ts
		s.order = append(s.order, t)
	}
	return ts
}

// group returns the group of sample smp of p by the values of the labels
// by, adding it if needed.
func (ts *typeSums) group(p *profile.Profile, smp profile.Sample, by []string) *group {
	labels := make([]string, len(by))
	for i, name := range by {
		labels[i] = groupValue(p, smp, name)
	}
	name := strings.Join(labels, "\x00")
	g := ts.groups[name]
	if g == nil {
		g = &group{labels: labels, sums: map[int64]int64{}}
		ts.groups[name] = g
	}
	return g
}

// result returns the sums of the type picked.
func (s *summer) result() Summed {
	t := pickType(s.order, s.order, s.typ)
	out := Summed{Type: t, Step: s.step}
	ts := s.sums[t]
	if ts == nil {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(ts.groups)) {
		g := ts.groups[name]
		ss := StepSeries{Labels: g.labels, Points: make([][2]int64, 0, len(g.sums))}
		for at, sum := range g.sums {
			ss.Points = append(ss.Points, [2]int64{at / 1e6, sum})
		}
		slices.SortFunc(ss.Points, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		out.Series = append(out.Series, ss)
	}
	out.Untimed = ts.untimed
	return out
}

// groupValue returns the value of label name of sample smp of p, or its
// thread state for the name "state"; for thread_name, where the sample
// has no such label, the name of its thread.
func groupValue(p *profile.Profile, smp profile.Sample, name string) string {
	if name == "state" {
		return smp.State.String()
	}
	v := p.Label(smp, name)
	if v == "" && name == profile.LabelThreadName && int(smp.Thread) < len(p.Threads) {
		return p.Threads[smp.Thread].Name // as a thread_name matcher reads it
	}
	return v
}
