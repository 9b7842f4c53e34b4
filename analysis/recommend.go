package analysis

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/profile"
)

// Recommendation is a costly code pattern the profiles show, the way a
// code profiler's recommendations name one: what it costs of the app's or
// a stage's samples, where, and what to do instead.
type Recommendation struct {
	Pattern  string   `json:"pattern"`
	Title    string   `json:"title"`
	Severity Severity `json:"severity"`
	// StageID is the stage whose samples Share is of; absent, the app's.
	StageID *int   `json:"stageId,omitempty"`
	Message string `json:"message"`
	// Type is the sample type measured; Samples the pattern's and Total
	// the scope's, in its unit; Share their ratio. AppShare is the
	// pattern's share of the app's samples.
	Type     string  `json:"type"`
	Samples  int64   `json:"samples"`
	Total    int64   `json:"total"`
	Share    float64 `json:"share"`
	AppShare float64 `json:"appShare"`
	// Frames are the pattern's frames that cost the most, with the
	// application code that called them.
	Frames []PatternFrame `json:"frames"`
	// Focus is a regular expression of the pattern's frames: the flame
	// graph focused on it shows the pattern's stacks.
	Focus      string `json:"focus"`
	Suggestion string `json:"suggestion"`
}

// PatternFrame is a frame of a pattern and its share of the pattern's
// samples.
type PatternFrame struct {
	Frame  string  `json:"frame"`
	Caller string  `json:"caller,omitempty"` // the nearest frame of application code below it
	Share  float64 `json:"share"`
}

// appScope is the scope key of the whole app in a tally; notTask marks
// the samples of threads other than task threads, left out.
const (
	appScope = ""
	notTask  = "-"
)

// tally sums one sample type's samples: in all and in each pattern, by
// scope (the app, or a stage's id), and the frames of each pattern.
type tally struct {
	total  map[string]int64
	hits   []map[string]int64 // by pattern and scope: the samples' values
	counts []map[string]int64 // by pattern and scope: how many samples
	frames []map[[2]string]int64
}

func newTally() *tally {
	n := len(patterns)
	t := &tally{total: map[string]int64{}, hits: make([]map[string]int64, n), counts: make([]map[string]int64, n), frames: make([]map[[2]string]int64, n)}
	for i := range patterns {
		t.hits[i], t.counts[i], t.frames[i] = map[string]int64{}, map[string]int64{}, map[[2]string]int64{}
	}
	return t
}

// scan tallies the samples of profiles, by sample type name. Lock types
// tally the contention the lock pattern counts; "blocked" tallies the
// blocked threads' stack samples against the running and blocked ones.
type scan struct {
	tallies map[string]*tally
	// taskOnly: some samples are of executors' task threads, and only
	// those are tallied; the other threads are Spark's own or idle.
	taskOnly bool
}

// scanProfiles tallies the patterns' samples in profiles.
func scanProfiles(profiles []*profile.Profile) *scan {
	sc := &scan{tallies: map[string]*tally{}}
	for _, p := range profiles {
		for _, s := range p.Samples {
			if p.Label(s, profile.LabelThreadPool) == attribution.PoolTask {
				sc.taskOnly = true
				break
			}
		}
	}
	for _, p := range profiles {
		sc.profile(p)
	}
	return sc
}

func (sc *scan) tally(typ string) *tally {
	t := sc.tallies[typ]
	if t == nil {
		t = newTally()
		sc.tallies[typ] = t
	}
	return t
}

// profileMasks are, for a profile, which patterns each stack shows.
type profileMasks struct {
	p          *profile.Profile
	match, not []uint64 // by frame
	leafOK     []uint64 // by frame: the patterns whose leaf condition it meets
	notBy      []uint64 // by frame: the patterns whose match it drops when it is the caller
	runtime    []bool   // by frame: the JDK's or Scala's, which no pattern takes for a caller
	byCaller   uint64   // the patterns that judge their matches' callers
	stack      []uint64 // by stack: match &^ not over its frames; 0 until computed
	done       []bool
}

func newMasks(p *profile.Profile) *profileMasks {
	n := len(p.Frames)
	m := &profileMasks{p: p, match: make([]uint64, n), not: make([]uint64, n), leafOK: make([]uint64, n),
		notBy: make([]uint64, n), runtime: make([]bool, n), stack: make([]uint64, p.NumStacks()), done: make([]bool, p.NumStacks())}
	for i, pt := range patterns {
		if pt.notBy != nil {
			m.byCaller |= 1 << i
		}
	}
	for f, fr := range p.Frames {
		if strings.HasSuffix(fr.Name, ".<clinit>") {
			m.not[f] = ^uint64(0) // a class's initialiser runs once a JVM, not once a record
		}
		m.runtime[f] = isRuntime(fr.Name)
		for i, pt := range patterns {
			bit := uint64(1) << i
			if pt.notBy != nil && pt.notBy.MatchString(fr.Name) {
				m.notBy[f] |= bit
			}
			if pt.frames.MatchString(fr.Name) {
				m.match[f] |= bit
			}
			if pt.not != nil && pt.not.MatchString(fr.Name) {
				m.not[f] |= bit
			}
			if pt.leaf == nil || pt.leaf.MatchString(fr.Name) {
				m.leafOK[f] |= bit
			}
		}
	}
	return m
}

// of returns the patterns stack s shows.
func (m *profileMasks) of(s profile.StackID) uint64 {
	if s == profile.NoStack || int(s) >= len(m.done) {
		return 0
	}
	if m.done[s] {
		return m.stack[s]
	}
	// pending are the matches of patterns that judge their caller, until
	// the walk to the root meets it.
	var match, not, pending uint64
	for x := s; x != profile.NoStack; x = m.p.Parent(x) {
		f := m.p.Leaf(x)
		if pending != 0 && !m.runtime[f] {
			match |= pending &^ m.notBy[f]
			pending = 0
		}
		match |= m.match[f] &^ m.byCaller
		pending |= m.match[f] & m.byCaller
		not |= m.not[f]
	}
	match |= pending
	m.stack[s], m.done[s] = (match&^not)&m.leafOK[m.p.Leaf(s)], true
	return m.stack[s]
}

// profile tallies one profile's samples.
func (sc *scan) profile(p *profile.Profile) {
	m := newMasks(p)
	stages := map[profile.LabelSetID]string{}
	where := map[[2]int]PatternFrame{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		typ := p.Types[s.Type]
		name := typ.Name
		running := s.State == profile.StateRunnable || s.State == profile.StateUnknown
		switch typ.Family() {
		case "cpu", "alloc":
		case "lock":
		case profile.TypeWall.Name, profile.TypeSamples.Name:
			if s.State == profile.StateBlocked {
				name = "blocked"
			} else if !running {
				continue
			}
		default:
			continue
		}
		stage, ok := stages[s.Labels]
		if !ok {
			stage = p.Label(s, profile.LabelStageID)
			if sc.taskOnly && p.Label(s, profile.LabelThreadPool) != attribution.PoolTask {
				stage = notTask
			}
			stages[s.Labels] = stage
		}
		if stage == notTask {
			continue
		}
		bits := m.of(s.Stack)
		t := sc.tally(name)
		if typ.Family() != "lock" {
			t.total[appScope] += s.Value
			if stage != "" {
				t.total[stage] += s.Value
			}
			if name != "blocked" && (typ.Name == profile.TypeWall.Name || typ.Name == profile.TypeSamples.Name) {
				b := sc.tally("blocked")
				b.total[appScope] += s.Value
				if stage != "" {
					b.total[stage] += s.Value
				}
			}
		}
		// A sample of a count type may stand for many (a merged profile
		// sums equal stacks into one): its value is how many.
		n := int64(1)
		if typ.Unit == "count" {
			n = s.Value
		}
		for i, pt := range patterns {
			lock := pt.view == viewLock
			if bits&(1<<i) == 0 || lock != (typ.Family() == "lock" || name == "blocked") {
				continue
			}
			t.hits[i][appScope] += s.Value
			t.counts[i][appScope] += n
			if stage != "" {
				t.hits[i][stage] += s.Value
				t.counts[i][stage] += n
			}
			k := [2]int{int(s.Stack), i}
			w, ok := where[k]
			if !ok {
				buf = p.Stack(s.Stack, buf[:0])
				w = frameOf(p, buf, pt)
				where[k] = w
			}
			t.frames[i][[2]string{w.Frame, w.Caller}] += s.Value
		}
	}
}

// frameOf returns the frame of stack (root first) that shows pattern pt,
// the one nearest the root, and the application frame that called it; for
// a pattern of every frame (lock contention), the application frame
// nearest the leaf.
func frameOf(p *profile.Profile, stack []profile.FrameID, pt pattern) PatternFrame {
	if pt.frames.String() == "." {
		for i := len(stack) - 1; i >= 0; i-- {
			if name := p.Frames[stack[i]].Name; !isLibrary(name) {
				return PatternFrame{Frame: name}
			}
		}
		if len(stack) == 0 {
			return PatternFrame{}
		}
		return PatternFrame{Frame: p.Frames[stack[len(stack)-1]].Name}
	}
	var caller string
	for _, f := range stack {
		name := p.Frames[f].Name
		if pt.frames.MatchString(name) {
			return PatternFrame{Frame: name, Caller: caller}
		}
		if !isLibrary(name) {
			caller = name
		}
	}
	return PatternFrame{}
}

// viewTypes are the sample types a view reads; a pattern is measured in
// the one it costs most of.
var viewTypes = map[view][]string{
	viewCPU:   {profile.TypeCPU.Name, profile.TypeItimer.Name, profile.TypeWall.Name, profile.TypeSamples.Name},
	viewWall:  {profile.TypeWall.Name, profile.TypeSamples.Name, profile.TypeCPU.Name, profile.TypeItimer.Name},
	viewAlloc: {profile.TypeAllocBytes.Name, profile.TypeAllocObjects.Name},
	viewLock:  {profile.TypeLockDelay.Name, "blocked"},
	viewCPUAlloc: {profile.TypeCPU.Name, profile.TypeItimer.Name, profile.TypeWall.Name, profile.TypeSamples.Name,
		profile.TypeAllocBytes.Name, profile.TypeAllocObjects.Name},
}

// measure returns the tallies pattern i can be measured in, with their
// types' names and the totals its shares are of: for lock delay, the delay
// and CPU time together.
func (sc *scan) measure(i int) []measured {
	var out []measured
	for _, name := range viewTypes[patterns[i].view] {
		t := sc.tallies[name]
		if t == nil || t.hits[i][appScope] == 0 {
			continue
		}
		if name == profile.TypeLockDelay.Name {
			cpu := sc.tallies[profile.TypeCPU.Name]
			if cpu == nil {
				continue
			}
			out = append(out, measured{t, name, func(scope string) int64 { return t.hits[i][scope] + cpu.total[scope] }})
			continue
		}
		out = append(out, measured{t, name, func(scope string) int64 { return t.total[scope] }})
	}
	return out
}

// measured is a sample type a pattern is measured in.
type measured struct {
	t     *tally
	typ   string
	total func(scope string) int64
}

// recommend returns the recommendations of the patterns profiles show,
// most costly first: a pattern is recommended on when it costs at least
// th.PatternShare of the app's samples, or of a stage's, in at least
// th.PatternMinSamples samples (their count when the type is not one).
func recommend(profiles []*profile.Profile, th Thresholds) []Recommendation {
	sc := scanProfiles(profiles)
	out := []Recommendation{}
	for i, pt := range patterns {
		// Of the types the pattern shows in (a JVM's CPU samples miss the
		// time in native methods, which its wall samples hold), the one
		// where it costs most.
		var best *Recommendation
		for _, m := range sc.measure(i) {
			if r, ok := m.recommendation(pt, i, sc.taskOnly, th); ok && (best == nil || r.Share > best.Share) {
				best = &r
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	slices.SortStableFunc(out, func(a, b Recommendation) int {
		return cmp.Or(cmp.Compare(b.Severity.rank(), a.Severity.rank()), cmp.Compare(b.Share, a.Share))
	})
	return out
}

// recommendation returns pattern i's recommendation in this type, for
// the app when it costs enough of the app's samples, else for the stage
// where it costs most.
func (m measured) recommendation(pt pattern, i int, taskOnly bool, th Thresholds) (Recommendation, bool) {
	t, total := m.t, m.total
	scope, best := appScope, 0.0
	appShare := share(t.hits[i][appScope], total(appScope))
	if appShare >= th.PatternShare && enough(t, i, appScope, th) {
		best = appShare
	} else {
		for stage, hits := range t.hits[i] {
			if s := share(hits, total(stage)); stage != appScope && s >= th.PatternShare && s > best && enough(t, i, stage, th) {
				scope, best = stage, s
			}
		}
	}
	if best == 0 {
		return Recommendation{}, false
	}
	return newRecommendation(pt, t, i, m.typ, scope, total(scope), appShare, best, taskOnly, th), true
}

// enough reports whether pattern i's samples in scope are enough to judge
// by: th.PatternMinSamples of them, however the type weighs them.
func enough(t *tally, i int, scope string, th Thresholds) bool {
	return t.hits[i][scope] > 0 && t.counts[i][scope] >= th.PatternMinSamples
}

// newRecommendation writes pattern pt's recommendation for scope.
func newRecommendation(pt pattern, t *tally, i int, typ, scope string, total int64, appShare, s float64, taskOnly bool, th Thresholds) Recommendation {
	r := Recommendation{Pattern: pt.id, Title: pt.title, Severity: Info, Type: typ, Samples: t.hits[i][scope], Total: total,
		Share: round2(s), AppShare: round2(appShare), Suggestion: pt.suggestion, Frames: []PatternFrame{}}
	if s >= 4*th.PatternShare {
		r.Severity = Warning
	}
	where := "the app's"
	if taskOnly {
		where = "the task threads'"
	}
	if scope != appScope {
		id, _ := strconv.Atoi(scope)
		r.StageID = intp(id)
		where = "stage " + scope + "'s"
	}
	type fc struct {
		k [2]string
		v int64
	}
	var fs []fc
	for k, v := range t.frames[i] {
		fs = append(fs, fc{k, v})
	}
	slices.SortFunc(fs, func(a, b fc) int {
		return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.k[0], b.k[0]), cmp.Compare(a.k[1], b.k[1]))
	})
	seen := map[string]bool{}
	var focus []string
	for _, f := range firstN(fs, 3) {
		r.Frames = append(r.Frames, PatternFrame{Frame: f.k[0], Caller: f.k[1], Share: round2(share(f.v, t.hits[i][appScope]))})
		if !seen[f.k[0]] {
			seen[f.k[0]] = true
			focus = append(focus, regexp.QuoteMeta(f.k[0]))
		}
	}
	r.Focus = strings.Join(focus, "|")
	r.Message = fmt.Sprintf("%s: %.0f%% of %s %s", pt.title, 100*s, where, typeWords(typ))
	if len(r.Frames) > 0 {
		r.Message += ", in " + r.Frames[0].Frame
		if c := r.Frames[0].Caller; c != "" {
			r.Message += " called from " + c
		}
	}
	return r
}

// typeWords names what a sample type's samples measure.
func typeWords(typ string) string {
	switch typ {
	case profile.TypeCPU.Name, profile.TypeItimer.Name:
		return "CPU time"
	case profile.TypeWall.Name:
		return "wall-clock time while running"
	case profile.TypeSamples.Name:
		return "stack samples while running"
	case profile.TypeAllocBytes.Name:
		return "allocated bytes"
	case profile.TypeAllocObjects.Name:
		return "allocations"
	case profile.TypeLockDelay.Name:
		return "CPU and lock-wait time"
	case "blocked":
		return "stack samples while running or blocked"
	}
	return typ + " samples"
}

// Recommend returns the recommendations of in's profiles, most costly
// first: the code patterns they show and, when the app's JVMs spent much
// time in GC, the code that allocated most.
func Recommend(in Input, th Thresholds) []Recommendation {
	if len(in.Profiles) == 0 {
		return []Recommendation{}
	}
	out := recommend(in.Profiles, th)
	if share, ok := gcShare(in, th); ok {
		if r, ok := allocHotspots(in.Profiles, share, th); ok {
			out = append(out, r)
		}
	}
	return out
}

// gcShare returns the share of the executors' time in GC, from the tasks'
// GC times (taskLoad), else from JVM records, and whether it stands out:
// at least th.GCShare, or from records th.GCRate young collections a
// second.
func gcShare(in Input, th Thresholds) (float64, bool) {
	if in.App != nil {
		if l := newTaskLoad(in.App.Tasks); len(l.conc) > 0 {
			gc, busy := l.executorGC(in.App.Tasks)
			s := share(gc, busy)
			return s, s >= th.GCShare && gc >= th.GCMinMs
		}
	}
	for _, g := range jvmGCs(in.Profiles) {
		if g.GCMs >= th.GCMinMs && (g.Share >= th.GCShare || g.YoungPerSecond >= th.GCRate) {
			return g.Share, true
		}
	}
	return 0, false
}

// allocHotspots names the code that allocated most, by the allocation
// samples of profiles: the application frame nearest each sample's leaf
// (else its leaf), when the first of them allocated at least
// th.PatternShare of the bytes.
func allocHotspots(profiles []*profile.Profile, gc float64, th Thresholds) (Recommendation, bool) {
	byFrame := map[string]int64{}
	var total, n int64
	typ := ""
	for _, want := range viewTypes[viewAlloc] {
		for _, p := range profiles {
			ti, ok := p.TypeIndex(profile.SampleType{Name: want, Unit: unitOf(want)})
			if !ok {
				continue
			}
			var buf []profile.FrameID
			names := map[profile.StackID]string{}
			for _, s := range p.Samples {
				if s.Type != ti || s.Stack == profile.NoStack {
					continue
				}
				name, ok := names[s.Stack]
				if !ok {
					buf = p.Stack(s.Stack, buf[:0])
					name = frameOf(p, buf, pattern{frames: anyFrame}).Frame
					names[s.Stack] = name
				}
				byFrame[name] += s.Value
				total += s.Value
				n++
			}
		}
		if total > 0 {
			typ = want
			break
		}
	}
	if total == 0 || n < th.PatternMinSamples {
		return Recommendation{}, false
	}
	type fv struct {
		f string
		v int64
	}
	var fs []fv
	for f, v := range byFrame {
		fs = append(fs, fv{f, v})
	}
	slices.SortFunc(fs, func(a, b fv) int { return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.f, b.f)) })
	top := share(fs[0].v, total)
	if top < th.PatternShare {
		return Recommendation{}, false
	}
	r := Recommendation{Pattern: "alloc-hotspots", Title: "GC from allocation hot spots", Severity: Warning, Type: typ,
		Samples: fs[0].v, Total: total, Share: round2(top), AppShare: round2(top), Frames: []PatternFrame{},
		Suggestion: "the JVMs collect often because this code allocates most: reuse buffers and objects across records, avoid boxing and intermediate copies, or give the executors more memory"}
	var focus []string
	for _, f := range firstN(fs, 3) {
		r.Frames = append(r.Frames, PatternFrame{Frame: f.f, Share: round2(share(f.v, total))})
		focus = append(focus, regexp.QuoteMeta(f.f))
	}
	r.Focus = strings.Join(focus, "|")
	r.Message = fmt.Sprintf("GC from allocation hot spots: the executors spent %.0f%% of their time in GC, and %.0f%% of the %s are in %s", 100*gc, 100*top, typeWords(typ), fs[0].f)
	return r, true
}

// anyFrame is the pattern of every frame: frameOf returns the application
// frame nearest the leaf.
var anyFrame = regexp.MustCompile(`.`)

// unitOf returns the unit of the sample types viewTypes name.
func unitOf(name string) string {
	for _, t := range []profile.SampleType{profile.TypeAllocBytes, profile.TypeAllocObjects} {
		if t.Name == name {
			return t.Unit
		}
	}
	return ""
}
