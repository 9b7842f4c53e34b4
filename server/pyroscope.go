package server

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// Pyroscope names a profile type by an ID of five parts,
// name:sample_type:sample_unit:period_type:period_unit
// (process_cpu:cpu:nanoseconds:cpu:nanoseconds), and Pyroscope 1.x and
// Grafana write queries as that ID followed by a selector. These are the
// IDs sparkprof gives its sample types, those Pyroscope's own agents use
// for the same measure.
var profileTypeIDs = map[profile.SampleType]string{
	profile.TypeCPU:          "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
	profile.TypeItimer:       "process_cpu:itimer:count:cpu:nanoseconds",
	profile.TypeSamples:      "process_cpu:samples:count:cpu:nanoseconds",
	profile.TypeWall:         "wall:wall:nanoseconds:wall:nanoseconds",
	profile.TypeAllocObjects: "memory:alloc_objects:count:space:bytes",
	profile.TypeAllocBytes:   "memory:alloc_space:bytes:space:bytes",
	profile.TypeLiveObjects:  "memory:inuse_objects:count:space:bytes",
	profile.TypeLiveBytes:    "memory:inuse_space:bytes:space:bytes",
	profile.TypeLockCount:    "mutex:contentions:count:mutex:count",
	profile.TypeLockDelay:    "mutex:delay:nanoseconds:mutex:count",
}

// pyroscopeSampleTypes maps the sample types of Pyroscope's profile type
// IDs, by "sample_type:sample_unit", to sparkprof's where the names differ
// (others, like cpu:nanoseconds, are sparkprof's own). sparkprof keeps one
// allocation type and one lock type per JVM where Pyroscope splits them by
// event (inside or outside a TLAB, monitor or park), so the IDs of either
// part select the whole.
var pyroscopeSampleTypes = map[string]profile.SampleType{
	"alloc_space:bytes":                profile.TypeAllocBytes,
	"inuse_objects:count":              profile.TypeLiveObjects,
	"inuse_space:bytes":                profile.TypeLiveBytes,
	"alloc_in_new_tlab_objects:count":  profile.TypeAllocObjects,
	"alloc_outside_tlab_objects:count": profile.TypeAllocObjects,
	"alloc_sample_objects:count":       profile.TypeAllocObjects,
	"alloc_in_new_tlab_bytes:bytes":    profile.TypeAllocBytes,
	"alloc_outside_tlab_bytes:bytes":   profile.TypeAllocBytes,
	"alloc_sample_bytes:bytes":         profile.TypeAllocBytes,
	"live:count":                       profile.TypeLiveObjects,
	"contentions:count":                profile.TypeLockCount,
	"delay:nanoseconds":                profile.TypeLockDelay,
}

// profileTypeID returns the Pyroscope profile type ID of t; a type without
// a Pyroscope counterpart gets its name as the profile and sample type.
func profileTypeID(t profile.SampleType) string {
	if id, ok := profileTypeIDs[t]; ok {
		return id
	}
	return t.Name + ":" + t.Name + ":" + t.Unit + ":" + t.Name + ":" + t.Unit
}

// typeOfProfileTypeID returns the sample type a Pyroscope profile type ID
// selects.
func typeOfProfileTypeID(id string) (profile.SampleType, error) {
	parts := strings.Split(id, ":")
	if len(parts) != 5 || slices.Contains(parts, "") {
		return profile.SampleType{}, fmt.Errorf("profile type %q: want name:sample_type:sample_unit:period_type:period_unit, e.g. %s", id, profileTypeIDs[profile.TypeCPU])
	}
	sample := profile.SampleType{Name: parts[1], Unit: parts[2]}
	if t, ok := pyroscopeSampleTypes[sample.String()]; ok {
		return t, nil
	}
	return sample, nil
}

// queryName reads the name before a selector's braces (or in its
// __name__ matcher): a Pyroscope profile type ID selects a sample type; an
// application name, as Pyroscope 0.x wrote queries (app.cpu), selects the
// service and, by its suffix, a sample type.
func queryName(name string) (*profile.Matcher, profile.SampleType, error) {
	if strings.Contains(name, ":") {
		t, err := typeOfProfileTypeID(name)
		return nil, t, err
	}
	app, typ := cutTypeSuffix(name)
	m, err := profile.NewMatcher(profile.LabelServiceName, profile.MatchEqual, app)
	if err != nil {
		return nil, typ, err
	}
	return &m, typ, nil
}

// defaultMaxNodes bounds the flame graphs of Pyroscope's render endpoints
// unless the query says otherwise, as Pyroscope's own default does.
const defaultMaxNodes = 8192

// maxNodes reads a query's max-nodes (or maxNodes) parameter: the nodes a
// flame graph keeps (0: all), def when absent.
func maxNodes(r *http.Request, def int) (int, error) {
	q := r.URL.Query()
	v := q.Get("maxNodes")
	if v == "" {
		v = q.Get("max-nodes")
	}
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("maxNodes %q: want a number of flame graph nodes, 0 for all", v)
	}
	return n, nil
}

// handlePyroscopeRender answers as Pyroscope's /pyroscope/render does: the
// flame graph with Pyroscope's units (at most maxNodes nodes, 8,192 by
// default), and a timeline of the selection's values per step; with
// groupBy, one timeline per value of that label.
func (s *Server) handlePyroscopeRender(w http.ResponseWriter, r *http.Request) {
	req, err := parseRequest(r, "query")
	if err != nil {
		httpError(w, http.StatusBadRequest, "query: %v", err)
		return
	}
	limit, err := maxNodes(r, defaultMaxNodes)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	groupBy := r.URL.Query().Get("groupBy")
	var by []string
	if groupBy != "" {
		by = []string{groupBy}
	}
	from, until := req.query.From, req.query.Until
	// The flame graph from the stacks (blocks' rollups where they serve),
	// the timeline from sums as the uploads are read (blocks' timelines):
	// neither merges the selection with its times.
	req.labels = noLabels
	p, req, ok := s.selected(w, r, req)
	if !ok {
		return
	}
	t := sampleType(p, req.typ)
	units, rate := renderUnits(t)
	tree := profile.NewTree(p, t)
	tree.Trim(limit)
	req.typ = t.String()
	// The timeline spans the range (its open ends the samples').
	_, series, _, step, err := s.sumSelected(r.Context(), tenant(r), req, stepSums{step: timelineStep(from, until), by: by, untimedAtUpload: true, from: from, until: until})
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	tl, groups := newTimeline(series, from, until, step, groupBy != "")
	ans := map[string]any{
		"version":     1,
		"flamebearer": newFlamebearer(tree),
		"metadata":    map[string]any{"format": "single", "units": units, "sampleRate": rate, "name": t.Name},
		"timeline":    tl,
	}
	if groupBy != "" {
		ans["groups"] = groups
	}
	writeJSON(w, ans)
}

// renderUnits returns the units and sample rate Pyroscope's render answer
// gives a sample type, which its UI knows how to show: "samples" are time
// at the rate, so CPU and wall nanoseconds are samples at 10⁹ a second; lock
// types take the units of Pyroscope's uploads (pyroscopeUnits).
func renderUnits(t profile.SampleType) (string, int) {
	switch {
	case t.Unit == "nanoseconds" && t != profile.TypeLockDelay:
		return "samples", 1_000_000_000
	case t.Name == "alloc_objects", t.Name == "live_objects", t.Name == "samples":
		return "objects", 100
	}
	for units, ut := range pyroscopeUnits {
		if ut == t && units != "objects" {
			return units, 100
		}
	}
	return t.Unit, 100
}

// timelineStep is the step of a render answer's timeline: 1,500 points
// over the range, as Pyroscope draws it, and no less than 10 s.
func timelineStep(from, until int64) time.Duration {
	step := 10 * time.Second
	if from != 0 {
		if until == 0 {
			until = time.Now().UnixNano()
		}
		step = max(step, (time.Duration(until-from) / 1500).Truncate(time.Second))
	}
	return step
}

// timeline is Pyroscope's timeline: values per step from StartTime
// (Unix seconds), zero where there were none.
type timeline struct {
	StartTime     int64   `json:"startTime"`
	Samples       []int64 `json:"samples"`
	DurationDelta int64   `json:"durationDelta"`
}

// newTimeline lays out series, sums per step (sumSelected), over [from,
// until), or, when the range is open, over their points' times. With
// grouped, it also lays out each series, keyed by its label's value, "*"
// for samples without it.
func newTimeline(series []stepSeries, from, until int64, step time.Duration, grouped bool) (timeline, map[string]timeline) {
	lo, hi := from, until-1
	for _, ss := range series {
		if from == 0 && (lo == 0 || ss.points[0][0]*1e6 < lo) {
			lo = ss.points[0][0] * 1e6
		}
		if until == 0 {
			hi = max(hi, ss.points[len(ss.points)-1][0]*1e6)
		}
	}
	groups := map[string]timeline{}
	if lo == 0 || hi < lo {
		return timeline{DurationDelta: int64(step / time.Second), Samples: []int64{}}, groups
	}
	first := lo - lo%int64(step)
	steps := (hi-first)/int64(step) + 1
	tl := timeline{StartTime: first / 1e9, DurationDelta: int64(step / time.Second), Samples: make([]int64, steps)}
	for _, ss := range series {
		g := timeline{StartTime: tl.StartTime, DurationDelta: tl.DurationDelta, Samples: make([]int64, steps)}
		for _, pt := range ss.points {
			if at := pt[0] * 1e6; at >= first && at <= hi {
				g.Samples[(at-first)/int64(step)] += pt[1]
				tl.Samples[(at-first)/int64(step)] += pt[1]
			}
		}
		if grouped {
			groups[cmp.Or(ss.labels[0], "*")] = g
		}
	}
	return tl, groups
}

// handlePyroscopeDiff answers Pyroscope's render-diff: leftQuery over
// leftFrom–leftUntil against rightQuery over rightFrom–rightUntil (each
// side's range defaulting to from–until), as /api/v1/diff with base and
// next, bounded to 8,192 nodes unless maxNodes says otherwise.
func (s *Server) handlePyroscopeDiff(w http.ResponseWriter, r *http.Request) {
	if !hasSides(w, r, "leftQuery", "rightQuery") {
		return
	}
	q := r.URL.Query()
	for to, from := range map[string]string{
		"base": "leftQuery", "baseFrom": "leftFrom", "baseUntil": "leftUntil",
		"next": "rightQuery", "nextFrom": "rightFrom", "nextUntil": "rightUntil",
	} {
		if v := q.Get(from); v != "" {
			q.Set(to, v)
		}
	}
	if q.Get("maxNodes") == "" && q.Get("max-nodes") == "" {
		q.Set("maxNodes", strconv.Itoa(defaultMaxNodes))
	}
	r.URL.RawQuery = q.Encode()
	s.handleDiff(w, r)
}

// handlePyroscopeLabelValues answers Pyroscope's label-values: for the
// label __name__, the profile type IDs of the data (those Pyroscope 1.x
// and Grafana put before a selector); for others, /api/v1/label-values.
func (s *Server) handlePyroscopeLabelValues(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("label") != metricName {
		s.handleLabelValues(w, r)
		return
	}
	q, ok := labelRange(w, r)
	if !ok {
		return
	}
	types, err := s.storedTypes(r.Context(), tenant(r), q)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	ids := []string{}
	for _, t := range types {
		ids = append(ids, profileTypeID(t))
	}
	sort.Strings(ids)
	writeJSON(w, ids)
}

// labelSource returns the profile of u that holds its sample types and
// label sets: a compacted block's rollup (read from disk or the cache), an
// upload's profile.
func labelSource(u *store.Upload) (*profile.Profile, error) {
	if u.Compacted() {
		return u.LoadRollup()
	}
	return u.Profile, nil
}

// metricName is the label Pyroscope's selectors name the profile type by.
const metricName = "__name__"

// storedTypes lists the sample types with samples in the tenant's uploads
// of q's range.
func (s *Server) storedTypes(ctx context.Context, ten string, q store.Query) ([]profile.SampleType, error) {
	var types []profile.SampleType
	err := s.cfg.Store.Select(ten, q, func(u *store.Upload) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := labelSource(u)
		if err != nil || p == nil {
			return err
		}
		for _, t := range presentTypes(p) {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		return nil
	})
	return types, err
}
