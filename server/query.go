package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/format/folded"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/format/speedscope"
	"github.com/sparkprof/sparkprof/internal/duration"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// parseSelector parses `{name="v", other=~"re"}`, optionally prefixed with
// a Pyroscope profile type ID (`process_cpu:cpu:nanoseconds:cpu:nanoseconds{...}`,
// also as a __name__ or __profile_type__ matcher), which names a sample type, or with an app
// name as Pyroscope 0.x wrote queries (`app.cpu{...}`), whose suffix names
// one: typ (zero without one).
func parseSelector(sel string) (ms []profile.Matcher, typ profile.SampleType, err error) {
	sel = strings.TrimSpace(sel)
	if sel == "" {
		return nil, typ, nil
	}
	name, rest, ok := strings.Cut(sel, "{")
	if name = strings.TrimSpace(name); name != "" {
		m, t, err := queryName(name)
		if err != nil {
			return nil, typ, err
		}
		if m != nil {
			ms = append(ms, *m)
		}
		typ = t
	}
	if !ok {
		return ms, typ, nil
	}
	body, ok := strings.CutSuffix(strings.TrimSpace(rest), "}")
	if !ok {
		return nil, typ, fmt.Errorf("selector %q: no closing }", sel)
	}
	for _, part := range splitOutsideQuotes(body) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		m, err := profile.ParseMatcher(strings.TrimSpace(part))
		if err != nil {
			return nil, typ, fmt.Errorf("selector %q: %w", sel, err)
		}
		if m.Name == metricName || m.Name == profileTypeLabel {
			// Pyroscope's {__name__="process_cpu:cpu:nanoseconds:cpu:nanoseconds", ...},
			// or the same ID as __profile_type__, as Grafana's profiles app writes it
			if m.Op != profile.MatchEqual {
				return nil, typ, fmt.Errorf("selector %q: %s takes = only", sel, m.Name)
			}
			nm, t, err := queryName(m.Value)
			if err != nil {
				return nil, typ, err
			}
			if nm != nil {
				ms = append(ms, *nm)
			}
			typ = t
			continue
		}
		if std, ok := labelAliases[m.Name]; ok {
			m.Name = std
		}
		ms = append(ms, m)
	}
	return ms, typ, nil
}

func splitOutsideQuotes(s string) []string {
	var out []string
	inQuote := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// request is a parsed query: which uploads, which samples, which type.
type request struct {
	query  store.Query
	filter profile.Filter
	typ    string
	// labels says which sample labels, and whether threads, the merge
	// keeps.
	labels labelsKept
}

// labelsKept says which of the samples' labels a merge keeps, and whether
// it keeps their threads.
type labelsKept int

const (
	// allLabels keeps every label and thread.
	allLabels labelsKept = iota
	// coarseLabels keeps the labels a block's rollup keeps (all but
	// store.RollupDropped, which have a value per task or thread), and no
	// threads.
	coarseLabels
	// noLabels keeps no labels or threads: a flame graph needs only
	// stacks, types and states.
	noLabels
	// pageLabels keeps what the /flame page filters by: the thread pool,
	// the stage and the thread's name.
	pageLabels
)

// threads reports whether a merge keeping k keeps threads.
func (k labelsKept) threads() bool { return k == allLabels || k == pageLabels }

// newRequest selects the samples of type typ ("" for the default) that
// the matchers ms select over from–until (Unix ns, 0 open).
func newRequest(ms []profile.Matcher, typ string, from, until int64) request {
	req := request{query: store.Query{Matchers: ms, SampleMatchers: storedMatchers(ms), From: from, Until: until}, typ: typ}
	req.filter.Labels = ms
	req.filter.From, req.filter.Until = from, until
	return req
}

func parseRequest(r *http.Request, selParam string) (request, error) {
	q := r.URL.Query()
	ms, suffixType, err := parseSelector(q.Get(selParam))
	if err != nil {
		return request{}, err
	}
	side := ""
	if selParam == "base" || selParam == "next" {
		side = selParam // a diff side's own range: baseFrom, nextUntil
	}
	from, until, err := parseRange(q, side)
	if err != nil {
		return request{}, err
	}
	typ := q.Get("type")
	if typ == "" {
		typ = suffixType.Name // Pyroscope's queries: app.alloc_space{...}
	}
	req := newRequest(ms, typ, from, until)
	if st := q.Get("state"); st != "" {
		for _, name := range strings.Split(st, ",") {
			state := profile.ParseThreadState(name)
			if state == profile.StateUnknown {
				return request{}, fmt.Errorf("state %q: want RUNNABLE, BLOCKED, WAITING, TIMED_WAITING, SLEEPING or NATIVE", name)
			}
			req.filter.States = append(req.filter.States, state)
		}
	}
	return req, nil
}

// parseRange parses a query's optional from and until, or, when given,
// side's own (side "base": baseFrom and baseUntil).
func parseRange(q url.Values, side string) (from, until int64, err error) {
	parse := func(name string) (int64, error) {
		if side != "" {
			if own := side + strings.ToUpper(name[:1]) + name[1:]; q.Has(own) {
				name = own
			}
		}
		t, err := parseTimeParam(q.Get(name))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return t, nil
	}
	if from, err = parse("from"); err != nil {
		return 0, 0, err
	}
	if until, err = parse("until"); err != nil {
		return 0, 0, err
	}
	if from != 0 && until != 0 && until < from {
		return 0, 0, fmt.Errorf("the range ends before it starts (%s before %s): swap them", time.Unix(0, until).UTC().Format(time.RFC3339), time.Unix(0, from).UTC().Format(time.RFC3339))
	}
	return from, until, nil
}

// parseTimeParam accepts Unix times in s/ms/µs/ns and Pyroscope's relative
// "now-1h" and "now-7d" forms.
func parseTimeParam(s string) (int64, error) {
	if s == "" || s == "now" {
		if s == "now" {
			return time.Now().UnixNano(), nil
		}
		return 0, nil
	}
	if rel, ok := strings.CutPrefix(s, "now-"); ok {
		d, err := duration.Parse(rel)
		if err != nil {
			return 0, err
		}
		return time.Now().Add(-d).UnixNano(), nil
	}
	return parseTime(s)
}

// merge returns the selected samples of the request's uploads as one
// profile, and the sample type picked.
func (s *Server) merge(ctx context.Context, ten string, req request) (*profile.Profile, error) {
	opts := profile.MergeOptions{Aggregate: true, DropLabels: req.labels == noLabels, DropThreads: !req.labels.threads(), ThreadNames: req.labels == pageLabels}
	switch req.labels {
	case coarseLabels:
		opts.Relabel = func(ls profile.Labels) profile.Labels { return ls.Without(store.RollupDropped...) }
	case pageLabels:
		opts.Relabel = func(ls profile.Labels) profile.Labels {
			return ls.Only(profile.LabelThreadPool, profile.LabelStageID, profile.LabelThreadName)
		}
	}
	m := profile.NewMerger(opts)
	req = narrowToStage(req, s.stageWindowOf(ten))
	err := s.eachUpload(ctx, ten, req, source, func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error {
		m.AddFunc(p, keep)
		// A merge that keeps labels grows with tasks, threads and
		// executors; a flame graph's only with the stacks the store holds.
		if n := len(m.Profile().Samples); req.labels != noLabels && n > s.cfg.MaxQuerySamples {
			return &tooManySamplesError{max: s.cfg.MaxQuerySamples, labels: req.labels}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m.Profile(), nil
}

// sideLabel labels the samples of one side of a split merge.
const sideLabel = "__side__"

// splitMerge merges the samples req selects as a flame graph does (stacks,
// types and states), those inSide selects into in and the others into
// out, reading each upload once for both: the two sides of slow-vs-rest
// are the tasks of one stage, in the same time slices.
func (s *Server) splitMerge(ctx context.Context, ten string, req request, inSide profile.Matcher) (in, out *profile.Profile, err error) {
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, DropThreads: true, Relabel: func(ls profile.Labels) profile.Labels {
		return ls.Only(sideLabel)
	}})
	sideOf := profile.Filter{Labels: []profile.Matcher{inSide}}
	err = s.eachUpload(ctx, ten, req, source, func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error {
		isIn := sideOf.Selector(p)
		p.OwnLabelSets() // p shares its tables with the stored profile
		sides := [2]profile.LabelSetID{p.AppendLabels(profile.Labels{{Name: sideLabel, Value: "out"}}), p.AppendLabels(profile.Labels{{Name: sideLabel, Value: "in"}})}
		m.AddFunc(p, func(smp *profile.Sample) bool {
			if !keep(smp) {
				return false
			}
			if isIn(smp) {
				smp.Labels = sides[1]
			} else {
				smp.Labels = sides[0]
			}
			return true
		})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	merged := m.Profile()
	side := func(v string) *profile.Profile {
		p := *merged
		p.Samples = nil
		for _, smp := range merged.Samples {
			if merged.Label(smp, sideLabel) == v {
				p.Samples = append(p.Samples, smp)
			}
		}
		return &p
	}
	return side("in"), side("out"), nil
}

// tooManySamplesError is a merge that grew past Config.MaxQuerySamples.
type tooManySamplesError struct {
	max    int
	labels labelsKept
}

func (e *tooManySamplesError) Error() string {
	msg := fmt.Sprintf("the selection merges into more than %d samples (serve --max-query-samples); narrow its time range or selector", e.max)
	if e.labels == allLabels {
		msg += ", or keep fewer labels (a pprof export without labels=all keeps those without a value per task or thread)"
	}
	return msg
}

// stageWindowOf returns the function that gives the time the tasks of a
// stage of one of the tenant's apps can have samples in (apps.stageWindow).
func (s *Server) stageWindowOf(ten string) func(app string, stage int) (from, until int64, ok bool) {
	return func(app string, stage int) (int64, int64, bool) { return s.apps.stageWindow(ten, app, stage) }
}

// tasksOf returns the function that gives the tasks by id of one of the
// tenant's apps, nil when its task model is not known.
func (s *Server) tasksOf(ten string) func(app string) map[int64]*spark.Task {
	return func(app string) map[int64]*spark.Task { return s.apps.tasks(ten, app) }
}

// sourceFunc returns the profile of upload u that answers req, or nil for
// its samples; tasksOf returns an app's tasks by id, nil when its task
// model is not known.
type sourceFunc func(u *store.Upload, req request, tasksOf func(string) map[int64]*spark.Task) (*profile.Profile, error)

// eachUpload calls add with each upload req selects, the profile of it
// that answers req (src) as a copy carrying the upload's labels, and the
// filter of that profile's samples, which first joins a sample to its
// task (changing its labels) and then reports whether req selects it. The
// stored profile is not modified. An error from add ends the walk, and
// eachUpload returns it. The profiles are read ahead of add (readAhead).
func (s *Server) eachUpload(ctx context.Context, ten string, req request, src sourceFunc, add func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error) error {
	tasksOf := s.tasksOf(ten)
	reads, stop := s.readAhead(ctx, ten, req, func(u *store.Upload) (*profile.Profile, error) { return src(u, req, tasksOf) })
	defer stop()
	for r := range reads {
		if r.err != nil {
			return r.err
		}
		// Upload labels go onto the profile; the filter then sees them
		// for every sample.
		cp := *r.p
		cp.Labels = cp.Labels.Merge(r.u.Labels)
		join := taskJoiner(&cp, tasksOf)
		keep := req.filter.Selector(&cp)
		// A selection by thread passes over the other threads' samples
		// first: a thread's flame graph of a block reads all its samples.
		// The upload's label values tell whether a thread_name label, which
		// a matcher reads first, can be on them.
		threads := req.filter.Threads(&cp, func() bool {
			vals := r.u.LabelValues()
			_, labelled := vals[profile.LabelThreadName]
			return vals == nil || labelled
		})
		if err := add(r.u, &cp, func(s *profile.Sample) bool {
			if threads != nil && !threads[s.Thread] {
				return false
			}
			join(s)
			return keep(s)
		}); err != nil {
			return err
		}
	}
	return nil
}

// uploadRead is a profile readAhead read, of upload u, or the error that
// ended its reading.
type uploadRead struct {
	u   *store.Upload
	p   *profile.Profile
	err error
}

// readAhead reads, on a goroutine of its own, the profile of each upload
// req selects that answers the query (src), or when src returns nil the
// upload's samples, a block cut into time slices a slice at a time, and
// hands them over on the channel it returns, in the store's order; an
// error is the last thing handed over. The reading overlaps the work on
// what it handed over before, on another core, and is never more than one
// profile ahead of it: a query over many large blocks holds no more than
// two slices' samples beyond the cache. It stops when the client goes away
// (ctx) or stop is called, which waits for it; a panic in it is an error,
// since net/http's recovery does not reach its goroutine.
func (s *Server) readAhead(ctx context.Context, ten string, req request, src func(*store.Upload) (*profile.Profile, error)) (reads <-chan uploadRead, stop func()) {
	next := make(chan uploadRead)
	done := make(chan struct{})
	// send hands r over, or reports errStopped once stop is called.
	send := func(r uploadRead) error {
		select {
		case next <- r:
			return nil
		case <-done:
			return errStopped
		}
	}
	read := func(u *store.Upload) error {
		p, err := src(u)
		switch {
		case err != nil:
			return err
		case p != nil:
			return send(uploadRead{u: u, p: p})
		}
		parts := u.Slices()
		if parts == nil {
			parts = []*store.Upload{u}
		}
		for _, part := range parts {
			p, err := part.Load()
			if err != nil {
				return err
			}
			if err := send(uploadRead{u: u, p: p}); err != nil {
				return err
			}
		}
		return nil
	}
	go func() {
		defer close(next)
		defer func() {
			if v := recover(); v != nil {
				s.log.Error("reading uploads failed", "panic", v, "stack", string(debug.Stack()))
				send(uploadRead{err: fmt.Errorf("reading uploads failed: %v", v)})
			}
		}()
		err := s.cfg.Store.Select(ten, req.query, func(u *store.Upload) error {
			if err := ctx.Err(); err != nil {
				return err // the client went away: read no more blocks
			}
			return read(u)
		})
		if err != nil && err != errStopped {
			send(uploadRead{err: err})
		}
	}()
	return next, func() {
		close(done)
		for range next { // until the reader has stopped
		}
	}
}

// errStopped ends a walk of uploads whose reader has gone.
var errStopped = errors.New("stopped")

// source returns the profile of u that answers req: a compacted block's
// rollup when it serves, else nil: its samples (eachUpload reads them).
func source(u *store.Upload, req request, tasksOf func(string) map[int64]*spark.Task) (*profile.Profile, error) {
	if rollupMayServe(u, req) {
		r, err := u.LoadRollup()
		if err != nil {
			return nil, err
		}
		if rollupServes(r, req, tasksOf) {
			return r, nil
		}
	}
	return nil, nil
}

// seriesSource returns the sourceFunc of a time series per value of the
// labels by and step: an upload's timeline when it serves, its samples
// (nil) otherwise. A timeline that keeps times coarser than its samples' (an
// upload in the head) serves only a step and range its resolution divides.
func seriesSource(by []string, step time.Duration) sourceFunc {
	return func(u *store.Upload, req request, tasksOf func(string) map[int64]*spark.Task) (*profile.Profile, error) {
		f := req.filter
		dropped := func(name string) bool { return slices.Contains(store.RollupDropped, name) }
		res := u.TimelineResolution()
		aligned := res == 0 || ((step == allTime || int64(step)%res == 0) && f.From%res == 0 && f.Until%res == 0)
		needsSamples := f.Thread != nil || f.Focus != nil || f.Ignore != nil || slices.ContainsFunc(by, dropped) ||
			slices.ContainsFunc(f.Labels, func(m profile.Matcher) bool { return dropped(m.Name) })
		if aligned && !needsSamples {
			tl, err := u.LoadTimeline()
			if err != nil {
				return nil, err
			}
			if tl != nil && timelineServes(tl, req, by, tasksOf) {
				return tl, nil
			}
		}
		return nil, nil
	}
}

// timelineServes reports whether timeline tl answers a series of req per
// value of the labels by as its samples would: not when req matches, or
// by names, a stage label and the join to task windows may change stages
// (stagesJoined).
func timelineServes(tl *profile.Profile, req request, by []string, tasksOf func(string) map[int64]*spark.Task) bool {
	return !(slices.ContainsFunc(by, isStageLabel) || matchesStage(req)) || !stagesJoined(tl, tasksOf)
}

// rollupMayServe reports whether the rollup of u (a compacted block, or an
// upload in the head) can answer req as its samples would: a flame graph
// or a merge keeping only the labels the rollup keeps (no threads or
// times), over a range covering its samples, with no thread filter and no
// matcher on a label the rollup dropped.
func rollupMayServe(u *store.Upload, req request) bool {
	f := req.filter
	if !u.HasRollup() || req.labels.threads() || f.Thread != nil {
		return false
	}
	// Samples without a time are kept when the profile overlaps the
	// range, which a range covering every sample time implies.
	lo, hi := u.SampleSpan()
	if (f.From != 0 && (lo == 0 || f.From > lo)) || (f.Until != 0 && f.Until <= hi) {
		return false
	}
	for _, m := range f.Labels {
		if slices.Contains(store.RollupDropped, m.Name) {
			return false
		}
	}
	return true
}

// rollupServes reports whether rollup r, which rollupMayServe admitted,
// answers req: a matcher on a stage label, or stage labels kept, need the
// block's apps to have no task model, since joining samples to task
// windows changes their stage labels.
func rollupServes(r *profile.Profile, req request, tasksOf func(string) map[int64]*spark.Task) bool {
	return !(matchesStage(req) || req.labels == coarseLabels) || !stagesJoined(r, tasksOf)
}

// isStageLabel reports whether name is a stage label, which the join to
// task windows may change.
func isStageLabel(name string) bool {
	return name == profile.LabelStageID || name == profile.LabelStageAttempt
}

// matchesStage reports whether req has a matcher on a stage label.
func matchesStage(req request) bool {
	return slices.ContainsFunc(req.filter.Labels, func(m profile.Matcher) bool { return isStageLabel(m.Name) })
}

// stagesJoined reports whether an app of p has a task model, so that
// joining p's samples to task windows may change their stage labels.
func stagesJoined(p *profile.Profile, tasksOf func(string) map[int64]*spark.Task) bool {
	return slices.ContainsFunc(labelValuesOf(p, profile.LabelAppID), func(app string) bool { return tasksOf(app) != nil })
}

// labelValuesOf lists the values label name takes in p.
func labelValuesOf(p *profile.Profile, name string) []string {
	var out []string
	if v, ok := p.Labels.Get(name); ok {
		out = append(out, v)
	}
	for i := range p.NumLabelSets() {
		if v, ok := p.LabelSet(profile.LabelSetID(i)).Get(name); ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// stacks is parsedSelection for flame graphs: the merged profile keeps
// only stacks, types and thread states, which bounds it by the unique
// stacks however many threads and tasks the selection spans.
func (s *Server) stacks(w http.ResponseWriter, r *http.Request, selParam string) (*profile.Profile, request, bool) {
	return s.parsedSelection(w, r, selParam, noLabels)
}

// parsedSelection parses the selector in query parameter selParam and
// merges what it selects, keeping the labels kept says. On failure it has
// answered the request.
func (s *Server) parsedSelection(w http.ResponseWriter, r *http.Request, selParam string, kept labelsKept) (*profile.Profile, request, bool) {
	req, err := parseRequest(r, selParam)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%s: %v", selParam, err)
		return nil, req, false
	}
	req.labels = kept
	return s.selected(w, r, req)
}

// selected merges what req selects. On failure it has answered the request.
func (s *Server) selected(w http.ResponseWriter, r *http.Request, req request) (*profile.Profile, request, bool) {
	p, err := s.merge(r.Context(), tenant(r), req)
	if err != nil {
		mergeFailed(w, err)
		return nil, req, false
	}
	return p, req, true
}

// mergeFailed answers a request whose merge failed with err: 422 for a
// selection past Config.MaxQuerySamples, else 500.
func mergeFailed(w http.ResponseWriter, err error) {
	var tooMany *tooManySamplesError
	if errors.As(err, &tooMany) {
		httpError(w, http.StatusUnprocessableEntity, "%v", err)
		return
	}
	httpError(w, http.StatusInternalServerError, "%v", err)
}

func (s *Server) tree(w http.ResponseWriter, r *http.Request, selParam string) (*profile.Tree, *profile.Profile, bool) {
	p, req, ok := s.stacks(w, r, selParam)
	if !ok {
		return nil, nil, false
	}
	return profile.NewTree(p, sampleType(p, req.typ)), p, true
}

// sampleType picks the sample type a query asked for; without one, CPU
// time if the selection has it, else its first type with samples.
func sampleType(p *profile.Profile, want string) profile.SampleType {
	return pickType(p.Types, presentTypes(p), want)
}

// pickType is sampleType for a selection of the types given, of which
// those present have samples.
func pickType(types, present []profile.SampleType, want string) profile.SampleType {
	if want != "" {
		if t, ok := profile.FindType(types, want); ok {
			return t
		}
		return profile.SampleType{Name: want}
	}
	ts := present
	for _, t := range ts {
		if t.Family() == "cpu" {
			return t
		}
	}
	if len(ts) > 0 {
		return ts[0]
	}
	return profile.SampleType{Name: "cpu"}
}

// hasType reports whether p has the sample type t.
func hasType(p *profile.Profile, t profile.SampleType) bool {
	_, ok := p.TypeIndex(t)
	return ok
}

// presentTypes lists the sample types of p that have samples.
func presentTypes(p *profile.Profile) []profile.SampleType {
	has := make([]bool, len(p.Types))
	for _, s := range p.Samples {
		has[s.Type] = true
	}
	var out []profile.SampleType
	for i, t := range p.Types {
		if has[i] {
			out = append(out, t)
		}
	}
	return out
}

// renderResponse is the answer of /api/v1/render.
type renderResponse struct {
	Flamebearer *Flamebearer         `json:"flamebearer"`
	Type        string               `json:"type"`
	Unit        string               `json:"unit"`
	Types       []profile.SampleType `json:"types"`
	Samples     int                  `json:"samples"`
	// Folded counts the frames maxNodes folded into "other" frames.
	Folded int `json:"folded"`
}

func (s *Server) handleRender(w http.ResponseWriter, r *http.Request) {
	limit, err := maxNodes(r, 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	t, p, ok := s.tree(w, r, "query")
	if !ok {
		return
	}
	folded := t.Trim(limit)
	writeJSON(w, renderResponse{Flamebearer: newFlamebearer(t), Type: t.Type.Name, Unit: t.Type.Unit, Types: presentTypes(p), Samples: len(p.Samples), Folded: folded})
}

func (s *Server) handleTop(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n := 100
	if v := q.Get("n"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			httpError(w, http.StatusBadRequest, "n %q: want the number of functions to list, 0 for all", v)
			return
		}
	}
	order := q.Get("sort")
	if order != "" && order != "self" && order != "total" {
		httpError(w, http.StatusBadRequest, "sort %q: want self or total", order)
		return
	}
	t, _, ok := s.tree(w, r, "query")
	if !ok {
		return
	}
	rows := t.Top(0)
	if order == "total" {
		profile.SortByTotal(rows)
	}
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	writeJSON(w, map[string]any{"type": t.Type, "total": t.Total(), "functions": rows})
}

// handleExport answers the selection in the format asked. Only pprof
// holds labels: by default those that have no value per task or thread
// (app, executor, host, stage...), which the blocks' rollups keep, so that
// a whole app exports as fast as its flame graph; with labels=all, every
// label and thread. The other formats hold stacks alone.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	to := r.URL.Query().Get("format")
	switch to {
	case "svg", "pprof", "speedscope", "folded", "":
	default:
		httpError(w, http.StatusBadRequest, "format %q: want pprof, speedscope, folded or svg", to)
		return
	}
	kept := noLabels
	switch v := r.URL.Query().Get("labels"); {
	case v != "" && v != "all":
		httpError(w, http.StatusBadRequest, "labels %q: want all (every label and thread; pprof only), or leave it out for the labels without a value per task or thread", v)
		return
	case to != "pprof":
	case v == "all":
		kept = allLabels
	default:
		kept = coarseLabels
	}
	p, req, ok := s.parsedSelection(w, r, "query", kept)
	if !ok {
		return
	}
	t := sampleType(p, req.typ)
	if !hasType(p, t) {
		httpError(w, http.StatusNotFound, "no %s samples selected", t.Name)
		return
	}
	var err error
	switch to {
	case "svg":
		w.Header().Set("Content-Type", "image/svg+xml")
		err = flamegraph.SVG(w, profile.NewTree(p, t), flamegraph.Options{Title: r.URL.Query().Get("query")})
	case "pprof":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="profile.pb.gz"`)
		err = pprof.Encode(w, p, pprof.EncodeOptions{Types: []profile.SampleType{t}})
	case "speedscope":
		w.Header().Set("Content-Type", "application/json")
		err = speedscope.Encode(w, p, speedscope.EncodeOptions{Types: []profile.SampleType{t}})
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		err = folded.Encode(w, p, folded.EncodeOptions{Type: t})
	}
	if err != nil {
		s.log.Warn("export failed", "err", err)
	}
}

// labelValues collects the values of label name ("" for every label) over
// the tenant's uploads and samples that q selects. A compacted block
// answers from the values its meta lists; its samples are read only for a
// label with too many values to list. With matchers, the values of one
// label are those among the samples the matchers select; label names are
// those of the uploads they select.
func (s *Server) labelValues(ctx context.Context, ten string, name string, q store.Query) (map[string]map[string]bool, error) {
	vals := map[string]map[string]bool{}
	add := func(n string, vs ...string) {
		if vals[n] == nil {
			vals[n] = map[string]bool{}
		}
		for _, v := range vs {
			vals[n][v] = true
		}
	}
	err := s.cfg.Store.Select(ten, q, func(u *store.Upload) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A time slice reads its block's label sets: the slice's bounds
		// leave out values of other slices.
		addSet := func(ls profile.Labels) {
			for _, l := range ls {
				if (name == "" || l.Name == name) && withinBounds(u, l) {
					add(l.Name, l.Value)
				}
			}
		}
		if name != "" && len(q.Matchers) > 0 {
			return selectedValues(u, name, q.Matchers, addSet)
		}
		addSet(u.Labels)
		if values := u.LabelValues(); values != nil {
			listed := true
			for n, vs := range values {
				if name == "" || n == name {
					add(n, vs...)
					listed = listed && (vs != nil || name == "")
				}
			}
			if listed {
				return nil
			}
		}
		p, err := u.LoadLabelSets()
		if err != nil {
			return err
		}
		addSet(p.Labels)
		eachLabelSet(p, nil, addSet)
		return nil
	})
	return vals, err
}

// withinBounds reports whether label l can be on a sample of u as its
// bounds of integer values tell (store.Upload.Bounds).
func withinBounds(u *store.Upload, l profile.Label) bool {
	b, ok := u.Bounds[l.Name]
	if !ok {
		return true
	}
	v, err := strconv.ParseInt(l.Value, 10, 64)
	return err != nil || v >= b[0] && v <= b[1]
}

// selectedValues passes to add the label sets of u's samples that all of
// ms match (a label a set lacks matches as ""), each with u's upload
// labels: the values of label name among the samples a selector selects.
// A block's rollup answers (labelSource) unless the label or a matcher's
// is one the rollup drops (task, partition, thread name); then its samples
// do.
func selectedValues(u *store.Upload, name string, ms []profile.Matcher, add func(profile.Labels)) error {
	source := labelSource
	if slices.Contains(store.RollupDropped, name) || slices.ContainsFunc(ms, func(m profile.Matcher) bool {
		return slices.Contains(store.RollupDropped, m.Name)
	}) {
		source = (*store.Upload).LoadLabelSets
	}
	p, err := source(u)
	if err != nil || p == nil {
		return err
	}
	eachLabelSet(p, u.Labels.Merge(p.Labels), func(ls profile.Labels) {
		if !slices.ContainsFunc(ms, func(m profile.Matcher) bool { v, _ := ls.Get(m.Name); return !m.Matches(v) }) {
			add(ls)
		}
	})
	return nil
}

// eachLabelSet calls fn once with each distinct label set of p's samples,
// merged into base; a profile of label sets without samples (a sliced
// block's tables, Upload.LoadLabelSets) with each of its non-empty sets.
func eachLabelSet(p *profile.Profile, base profile.Labels, fn func(profile.Labels)) {
	call := func(ls profile.Labels) {
		if len(base) > 0 {
			fn(base.Merge(ls))
		} else {
			fn(ls)
		}
	}
	if len(p.Samples) == 0 {
		for i := 1; i < p.NumLabelSets(); i++ {
			call(p.LabelSet(profile.LabelSetID(i)))
		}
		return
	}
	seen := make([]bool, p.NumLabelSets())
	for _, smp := range p.Samples {
		if !seen[smp.Labels] {
			seen[smp.Labels] = true
			call(p.LabelSet(smp.Labels))
		}
	}
}

// labelRange parses the optional from and until of a label query. On
// failure it has answered the request.
func labelRange(w http.ResponseWriter, r *http.Request) (store.Query, bool) {
	from, until, err := parseRange(r.URL.Query(), "")
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return store.Query{}, false
	}
	ms, _, err := parseSelector(r.URL.Query().Get("query"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "query: %v", err)
		return store.Query{}, false
	}
	return store.Query{Matchers: ms, SampleMatchers: storedMatchers(ms), From: from, Until: until}, true
}

// handleLabels answers the label names; Pyroscope's path (pyroscope) lists
// __name__, which names the profile type, first when there is data.
func (s *Server) handleLabels(pyroscope bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q, ok := labelRange(w, r)
		if !ok {
			return
		}
		names, err := s.labelNames(r.Context(), tenant(r), q)
		if err != nil {
			httpError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		if pyroscope && len(names) > 0 {
			names = append([]string{metricName}, names...)
		}
		writeJSON(w, names)
	}
}

// labelNames lists, sorted, the label names of the tenant's uploads and
// samples in q's range.
func (s *Server) labelNames(ctx context.Context, ten string, q store.Query) ([]string, error) {
	vals, err := s.labelValues(ctx, ten, "", q)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (s *Server) handleLabelValues(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		name = r.URL.Query().Get("label")
	}
	if name == "" {
		httpError(w, http.StatusBadRequest, "name: missing; say which label's values to list (name=spark_stage_id)")
		return
	}
	q, ok := labelRange(w, r)
	if !ok {
		return
	}
	vals, err := s.labelValues(r.Context(), tenant(r), name, q)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	out := []string{}
	for v := range vals[name] {
		out = append(out, v)
	}
	sort.Strings(out)
	writeJSON(w, out)
}

// handleDiff answers a diff of two selections (base and next query
// parameters, same type): Pyroscope's diff flamebearer with the baseline
// normalised to the new total.
func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request) {
	if !hasSides(w, r, "base", "next") {
		return
	}
	s.diff(w, r, nil)
}

// hasSides reports whether the request names both sides of a diff in the
// parameters base and next (as the caller spells them); if not, it has
// answered 400. An empty selector ({}) selects everything, but a missing
// side is more likely a mistake than a diff against all the data.
func hasSides(w http.ResponseWriter, r *http.Request, base, next string) bool {
	q := r.URL.Query()
	for _, side := range []string{base, next} {
		if q.Get(side) == "" {
			httpError(w, http.StatusBadRequest, "%s: missing; a diff needs both %s and %s (a selector such as {spark_app_id=\"app-1\"}; {} selects everything)", side, base, next)
			return false
		}
	}
	return true
}

// diff answers the diff of the selections base and next, with the fields
// of extra added.
func (s *Server) diff(w http.ResponseWriter, r *http.Request, extra map[string]any) {
	limit, err := maxNodes(r, 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	base, _, ok := s.stacks(w, r, "base")
	if !ok {
		return
	}
	next, nextReq, ok := s.stacks(w, r, "next")
	if !ok {
		return
	}
	writeDiff(w, base, next, nextReq.typ, limit, extra)
}

// writeDiff answers the diff of base and next in the type typ asks for
// (sampleType), with the frames past limit folded and the fields of extra
// added.
func writeDiff(w http.ResponseWriter, base, next *profile.Profile, typ string, limit int, extra map[string]any) {
	t := sampleType(next, typ)
	if !hasType(next, t) {
		t = sampleType(base, typ)
	}
	if !hasType(next, t) && !hasType(base, t) {
		httpError(w, http.StatusNotFound, "no %s samples in either selection", t.Name)
		return
	}
	tree := profile.Diff(base, next, t)
	folded := tree.Trim(limit)
	ans := map[string]any{
		"version":     1,
		"flamebearer": newDiffFlamebearer(tree),
		"metadata":    map[string]any{"format": "double", "name": t.Name, "unit": t.Unit},
		"leftTicks":   tree.Root.BaseTotal,
		"rightTicks":  tree.Root.Total,
		"folded":      folded,
	}
	maps.Copy(ans, extra)
	writeJSON(w, ans)
}

// breakdownRow is one group of a breakdown: its keys in the order asked
// and the summed value.
type breakdownRow struct {
	Keys  []string `json:"keys"`
	Value int64    `json:"value"`
}

// handleBreakdown sums the selected samples of one type by thread state
// and labels: ?by=state,spark_stage_id,spark_executor_id. It answers where
// time went without a flame graph, e.g. wall time per stage split into
// RUNNABLE, BLOCKED, WAITING and NATIVE (the latency view).
func (s *Server) handleBreakdown(w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r, "query")
	if err != nil {
		httpError(w, http.StatusBadRequest, "query: %v", err)
		return
	}
	by := strings.Split(r.URL.Query().Get("by"), ",")
	if len(by) == 0 || by[0] == "" || len(by) > 4 {
		httpError(w, http.StatusBadRequest, "by: name 1 to 4 labels or state, comma-separated")
		return
	}
	t, series, _, _, err := s.sumSelected(r.Context(), tenant(r), req, stepSums{step: allTime, by: by, untimedAtUpload: true})
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	rows := make([]*breakdownRow, 0, len(series))
	var total int64
	for _, ss := range series {
		row := &breakdownRow{Keys: ss.labels}
		for _, pt := range ss.points {
			row.Value += pt[1]
		}
		total += row.Value
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Value != rows[j].Value {
			return rows[i].Value > rows[j].Value
		}
		return strings.Join(rows[i].Keys, "\x00") < strings.Join(rows[j].Keys, "\x00")
	})
	writeJSON(w, map[string]any{"type": t, "by": by, "total": total, "rows": rows})
}

// seriesAnswer is the answer of /api/v1/series.
type seriesAnswer struct {
	Type    profile.SampleType `json:"type"`
	StepMs  int64              `json:"stepMs"`
	By      string             `json:"by,omitempty"`
	Series  []valueSeries      `json:"series"`
	Untimed int64              `json:"untimed"` // value of samples without a time
}

// valueSeries is one series of summed sample values: [timeMs, value] per
// step that has samples.
type valueSeries struct {
	Key    string     `json:"key,omitempty"`
	Points [][2]int64 `json:"points"`
}

// maxSteps bounds the points of a series; a smaller step is widened.
const maxSteps = 5000

// stepSeries is one series of sumPerStep: the values of its grouping
// labels, and [timeMs, value] per step that has samples, in time order.
type stepSeries struct {
	labels []string
	points [][2]int64
}

// handleSeries sums the selected samples of one type per time step (?step=,
// default 10s), optionally one series per value of a label (?by=).
func (s *Server) handleSeries(w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r, "query")
	if err != nil {
		httpError(w, http.StatusBadRequest, "query: %v", err)
		return
	}
	step := 10 * time.Second
	if v := r.URL.Query().Get("step"); v != "" {
		d, err := duration.Parse(v)
		if err != nil || d <= 0 {
			httpError(w, http.StatusBadRequest, "step %q: want a duration such as 10s or 1m", v)
			return
		}
		step = d
	}
	by := r.URL.Query().Get("by")
	var byLabels []string
	if by != "" {
		byLabels = []string{by}
	}
	t, series, untimed, step, err := s.sumSelected(r.Context(), tenant(r), req, stepSums{step: step, by: byLabels})
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	ans := seriesAnswer{Type: t, By: by, StepMs: step.Milliseconds(), Untimed: untimed}
	for _, ss := range series {
		vs := valueSeries{Points: ss.points}
		if by != "" {
			vs.Key = ss.labels[0]
		}
		ans.Series = append(ans.Series, vs)
	}
	writeJSON(w, ans)
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

// allTime is a step that sums all times into one: the sums per group.
const allTime = time.Duration(math.MaxInt64)

// stepSums says what sumSelected sums: per step, and per value of the
// labels by ("state" names the thread state).
type stepSums struct {
	step time.Duration
	by   []string
	// untimedAtUpload puts samples without a time at their upload's start,
	// as a timeline draws them, instead of adding them up apart.
	untimedAtUpload bool
	// from and until, when set, bound the span the step is widened to
	// cover in maxSteps points (a render's timeline spans its range);
	// otherwise the selected uploads' sample span within req's range.
	from, until int64
}

// sumSelected sums the samples req selects, of the type req asks for
// (sampleType), per step (widened to keep the span under maxSteps points)
// and per combination of the values of the labels o.by, ordered by those
// values: summed as each upload is read, not merged into one profile
// first (an hour of 100 executors is tens of millions of samples), from a
// block's timeline when it serves (seriesSource). Samples without a time
// add up in untimed unless o.untimedAtUpload.
func (s *Server) sumSelected(ctx context.Context, ten string, req request, o stepSums) (t profile.SampleType, series []stepSeries, untimed int64, widened time.Duration, err error) {
	step, by, untimedAtUpload := o.step, o.by, o.untimedAtUpload
	req = narrowToStage(req, s.stageWindowOf(ten))
	var lo, hi int64
	err = s.cfg.Store.Select(ten, req.query, func(u *store.Upload) error {
		first, last := u.SampleSpan()
		if first != 0 && (lo == 0 || first < lo) {
			lo = first
		}
		hi = max(hi, last)
		return nil
	})
	if err != nil {
		return t, nil, 0, step, err
	}
	if req.query.From != 0 {
		lo = max(lo, req.query.From)
	}
	if req.query.Until != 0 && hi >= req.query.Until {
		hi = req.query.Until - 1
	}
	if o.from != 0 {
		lo = o.from
	}
	if o.until != 0 {
		hi = o.until - 1
	}
	if span := time.Duration(hi - lo); span/step > maxSteps {
		step = (span/maxSteps + time.Second - 1).Truncate(time.Second)
	}
	// The sums of one sample type: per series (the values of by, joined)
	// and step.
	type group struct {
		labels []string
		sums   map[int64]int64
	}
	type typeSums struct {
		groups  map[string]*group
		untimed int64
	}
	sums := map[profile.SampleType]*typeSums{}
	var order []profile.SampleType // as they first have a selected sample
	err = s.eachUpload(ctx, ten, req, seriesSource(by, step), func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error {
		byType := make([]*typeSums, len(p.Types))
		// A type the request does not name is never picked: its samples
		// are not summed.
		skip := make([]bool, len(p.Types))
		if req.typ != "" {
			for i, t := range p.Types {
				_, named := profile.FindType([]profile.SampleType{t}, req.typ)
				skip[i] = !named
			}
		}
		// A sample's type, label set and state decide its group, and its
		// thread when by names thread_name (groupValue): looked up once.
		type key struct {
			typ    profile.TypeID
			set    profile.LabelSetID
			state  profile.ThreadState
			thread profile.ThreadID
		}
		byThread := slices.Contains(by, profile.LabelThreadName)
		groupOf := map[key]*group{}
		for i := range p.Samples {
			smp := p.Samples[i] // keep may relabel it
			if skip[smp.Type] || !keep(&smp) {
				continue
			}
			ts := byType[smp.Type]
			if ts == nil {
				t := p.Types[smp.Type]
				if ts = sums[t]; ts == nil {
					ts = &typeSums{groups: map[string]*group{}}
					sums[t] = ts
					order = append(order, t)
				}
				byType[smp.Type] = ts
			}
			if smp.Time == 0 {
				if !untimedAtUpload {
					ts.untimed += smp.Value
					continue
				}
				smp.Time = u.From
			}
			k := key{smp.Type, smp.Labels, smp.State, 0}
			if byThread {
				k.thread = smp.Thread
			}
			g := groupOf[k]
			if g == nil {
				labels := make([]string, len(by))
				for i, name := range by {
					labels[i] = groupValue(p, smp, name)
				}
				name := strings.Join(labels, "\x00")
				if g = ts.groups[name]; g == nil {
					g = &group{labels: labels, sums: map[int64]int64{}}
					ts.groups[name] = g
				}
				groupOf[k] = g
			}
			g.sums[smp.Time/int64(step)*int64(step)] += smp.Value
		}
		return nil
	})
	if err != nil {
		return t, nil, 0, step, err
	}
	t = pickType(order, order, req.typ)
	ts := sums[t]
	if ts == nil {
		return t, nil, 0, step, nil
	}
	for _, name := range slices.Sorted(maps.Keys(ts.groups)) {
		g := ts.groups[name]
		ss := stepSeries{labels: g.labels, points: make([][2]int64, 0, len(g.sums))}
		for at, sum := range g.sums {
			ss.points = append(ss.points, [2]int64{at / 1e6, sum})
		}
		slices.SortFunc(ss.points, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		series = append(series, ss)
	}
	return t, series, ts.untimed, step, nil
}
