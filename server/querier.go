package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	googlev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/pprof"
	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// querier answers Pyroscope's query API (querier.v1.QuerierService over the
// Connect protocol, protobuf or JSON), the API Grafana's Pyroscope data
// source calls: profile types, label names and values, the merged flame
// graph, pprof, diff and time series of a profile type ID and a label
// selector, the series and the profile stats. So Grafana, and Pyroscope's
// profilecli, read sparkprof as they read Pyroscope; the merged stacks come
// in every format of the API (flame graph, Pyroscope's tree, DOT, pprof).
// Methods sparkprof does not serve (span profiles, heatmaps) answer
// unimplemented.
type querier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	s *Server
}

// handleQuerier routes the Connect API under its service path.
func (s *Server) handleQuerier() (string, http.Handler) {
	return querierv1connect.NewQuerierServiceHandler(querier{s: s}, connect.WithReadMaxBytes(int(s.cfg.MaxBodyBytes)))
}

// queryRange turns a request's start and end (Unix ms, 0 open) into a
// store query's. A time before 1970 or past what Unix ns hold (2262), or a
// range that ends before it starts, is InvalidArgument, as the REST API's
// 400.
func queryRange(start, end int64) (store.Query, error) {
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	for _, t := range []struct {
		name string
		ms   int64
	}{{"start", start}, {"end", end}} {
		if t.ms < 0 || t.ms > maxMs {
			return store.Query{}, connect.NewError(connect.CodeInvalidArgument,
				fmt.Errorf("%s %d: want a Unix time in ms from 1970 to 2262 (at most %d), or 0 for an open range", t.name, t.ms, int64(maxMs)))
		}
	}
	if start != 0 && end != 0 && end < start {
		return store.Query{}, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("the range ends before it starts (end %s before start %s): swap them",
			time.UnixMilli(end).UTC().Format(time.RFC3339), time.UnixMilli(start).UTC().Format(time.RFC3339)))
	}
	return store.Query{From: start * int64(time.Millisecond), Until: end * int64(time.Millisecond)}, nil
}

// labelQuery selects what the label selectors of a label request match, in
// the range, one query per selector (see labelValues for what a selector
// narrows). An empty list, or "{}", matches all.
func labelQuery(selectors []string, start, end int64) ([]store.Query, error) {
	r, err := queryRange(start, end)
	if err != nil {
		return nil, err
	}
	var qs []store.Query
	for _, sel := range selectors {
		ms, _, err := query.ParseSelector(sel)
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		q := r
		q.Matchers = ms
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		qs = append(qs, r)
	}
	return qs, nil
}

func (q querier) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	r, err := queryRange(req.Msg.Start, req.Msg.End)
	if err != nil {
		return nil, err
	}
	types, err := q.s.query.StoredTypes(ctx, headerTenant(req.Header()), r)
	if err != nil {
		return nil, connectError(err)
	}
	res := &querierv1.ProfileTypesResponse{}
	for _, t := range types {
		id := pyroscope.TypeID(t)
		p := strings.Split(id, ":")
		res.ProfileTypes = append(res.ProfileTypes, &typesv1.ProfileType{
			ID: id, Name: p[0], SampleType: p[1], SampleUnit: p[2], PeriodType: p[3], PeriodUnit: p[4],
		})
	}
	slices.SortFunc(res.ProfileTypes, func(a, b *typesv1.ProfileType) int { return cmp.Compare(a.ID, b.ID) })
	return connect.NewResponse(res), nil
}

func (q querier) LabelNames(ctx context.Context, req *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	qs, err := labelQuery(req.Msg.Matchers, req.Msg.Start, req.Msg.End)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, sq := range qs {
		ns, err := q.s.query.LabelNames(ctx, headerTenant(req.Header()), sq)
		if err != nil {
			return nil, connectError(err)
		}
		names = append(names, ns...)
	}
	if len(names) > 0 {
		names = append(names, pyroscope.NameLabel, pyroscope.TypeLabel)
	}
	slices.Sort(names)
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: slices.Compact(names)}), nil
}

func (q querier) LabelValues(ctx context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	ten := headerTenant(req.Header())
	qs, err := labelQuery(req.Msg.Matchers, req.Msg.Start, req.Msg.End)
	if err != nil {
		return nil, err
	}
	var values []string
	for _, sq := range qs {
		switch name := req.Msg.Name; name {
		case pyroscope.NameLabel, pyroscope.TypeLabel:
			types, err := q.s.query.StoredTypes(ctx, ten, sq)
			if err != nil {
				return nil, connectError(err)
			}
			for _, t := range types {
				id := pyroscope.TypeID(t)
				if name == pyroscope.NameLabel {
					id, _, _ = strings.Cut(id, ":")
				}
				values = append(values, id)
			}
		default:
			vals, err := q.s.query.LabelValues(ctx, ten, name, sq)
			if err != nil {
				return nil, connectError(err)
			}
			for v := range vals[name] {
				values = append(values, v)
			}
		}
	}
	slices.Sort(values)
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: slices.Compact(values)}), nil
}

// selectRequest is the request of a profile type ID, a label selector and
// a stack trace selector (nil for none) over start–end (Unix ms).
func selectRequest(profileTypeID, selector string, stacks *typesv1.StackTraceSelector, start, end int64) (query.Request, error) {
	if profileTypeID == "" {
		return query.Request{}, connect.NewError(connect.CodeInvalidArgument, errors.New("profile_typeID: missing; say which profile type, e.g. "+pyroscope.CPUTypeID))
	}
	t, err := pyroscope.TypeOfID(profileTypeID)
	if err != nil {
		return query.Request{}, connect.NewError(connect.CodeInvalidArgument, err)
	}
	ms, _, err := query.ParseSelector(selector)
	if err != nil {
		return query.Request{}, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("label_selector: %w", err))
	}
	r, err := queryRange(start, end)
	if err != nil {
		return query.Request{}, err
	}
	req := query.NewRequest(ms, t.Name, r.From, r.Until)
	if req.Filter.CallSite, err = callSite(stacks); err != nil {
		return query.Request{}, err
	}
	return req, nil
}

// callSite returns the function names of a stack trace selector's call
// site, root first: the samples kept are those whose stacks begin with
// them. Go's PGO selector, which trims profiles for the Go compiler, is
// refused: sparkprof's profiles are not Go programs'.
func callSite(sel *typesv1.StackTraceSelector) ([]string, error) {
	if sel == nil {
		return nil, nil
	}
	if sel.GoPgo != nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("stack_trace_selector.go_pgo: not served; select stacks by call_site"))
	}
	var names []string
	for i, l := range sel.CallSite {
		if l.GetName() == "" {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("stack_trace_selector.call_site[%d]: no name; give each frame's function name, the root first", i))
		}
		names = append(names, l.GetName())
	}
	return names, nil
}

// merged merges what a profile type ID, a label selector and a stack
// trace selector select over start–end (Unix ms), stacks only. It returns the merged profile and the
// sample type picked.
func (q querier) merged(ctx context.Context, h http.Header, typeID, selector string, stacks *typesv1.StackTraceSelector, start, end int64) (*profile.Profile, profile.SampleType, error) {
	sr, err := selectRequest(typeID, selector, stacks, start, end)
	if err != nil {
		return nil, profile.SampleType{}, err
	}
	sr.Keep = query.KeepNone
	p, err := q.s.query.Merge(ctx, headerTenant(h), sr)
	if err != nil {
		return nil, profile.SampleType{}, connectError(err)
	}
	return p, query.SampleType(p, sr.Type), nil
}

// levels lays out a flamebearer's levels as the query API's.
func levels(fb *query.Flamebearer) []*querierv1.Level {
	out := make([]*querierv1.Level, len(fb.Levels))
	for i, l := range fb.Levels {
		out[i] = &querierv1.Level{Values: l}
	}
	return out
}

// nodeLimit is a request's max_nodes, Pyroscope's default without one.
func nodeLimit(maxNodes *int64) int {
	if maxNodes != nil && *maxNodes > 0 {
		return int(*maxNodes)
	}
	return defaultMaxNodes
}

// SelectMergeStacktraces answers the merged stacks in each format
// Pyroscope's API offers: a flame graph (the default), Pyroscope's tree
// bytes, a Graphviz DOT call graph, or the profile as pprof.
func (q querier) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	m := req.Msg
	p, t, err := q.merged(ctx, req.Header(), m.ProfileTypeID, m.LabelSelector, m.StackTraceSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	res := &querierv1.SelectMergeStacktracesResponse{}
	switch m.Format {
	case querierv1.ProfileFormat_PROFILE_FORMAT_UNSPECIFIED, querierv1.ProfileFormat_PROFILE_FORMAT_FLAMEGRAPH:
		tree, _ := profile.NewTrimmedTree(p, t, nodeLimit(m.MaxNodes))
		fb := query.NewFlamebearer(tree)
		res.Flamegraph = &querierv1.FlameGraph{Names: fb.Names, Levels: levels(fb), Total: fb.NumTicks, MaxSelf: fb.MaxSelf}
	case querierv1.ProfileFormat_PROFILE_FORMAT_TREE:
		tree, _ := profile.NewTrimmedTree(p, t, nodeLimit(m.MaxNodes))
		res.Tree = treeBytes(tree)
	case querierv1.ProfileFormat_PROFILE_FORMAT_DOT:
		// Pyroscope's default: a graph of 100 functions.
		nodes := 100
		if m.MaxNodes != nil && *m.MaxNodes > 0 {
			nodes = int(*m.MaxNodes)
		}
		var b strings.Builder
		if query.HasType(p, t) {
			if err := pprof.EncodeDOT(&b, p, t, nodes); err != nil {
				return nil, connectError(err)
			}
		}
		res.Dot = b.String()
	case querierv1.ProfileFormat_PROFILE_FORMAT_PPROF:
		gp, err := pprofMessage(trimmed(p, t, m.MaxNodes), t)
		if err != nil {
			return nil, err
		}
		res.Pprof = &querierv1.PprofProfile{Profile: gp}
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("format %s: want one of PROFILE_FORMAT_FLAMEGRAPH, _TREE, _DOT or _PPROF", m.Format))
	}
	return connect.NewResponse(res), nil
}

// treeBytes writes tree as Pyroscope's tree bytes, the TREE format: each
// node, every one followed by its whole subtree, as the length of its
// name, the name and its self value, then its number of children, the
// numbers as unsigned varints. The first node is an unnamed root over the
// tree's top frames. An empty tree is no bytes.
func treeBytes(tree *profile.Tree) []byte {
	if len(tree.Root.Children) == 0 {
		return nil
	}
	var b []byte
	var put func(n *profile.Node, name string, self int64)
	put = func(n *profile.Node, name string, self int64) {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(self))
		b = binary.AppendUvarint(b, uint64(len(n.Children)))
		for _, c := range n.Children {
			put(c, c.Name, c.Self)
		}
	}
	put(tree.Root, "", 0)
	return b
}

// trimmed returns p, or with maxNodes set the samples of type t of p
// trimmed to the maxNodes largest nodes of its call tree, each parent's
// smaller callees folded into one frame named "other", totals unchanged:
// the pprof of Pyroscope's max_nodes.
func trimmed(p *profile.Profile, t profile.SampleType, maxNodes *int64) *profile.Profile {
	if maxNodes == nil || *maxNodes <= 0 || !query.HasType(p, t) {
		return p
	}
	tree, _ := profile.NewTrimmedTree(p, t, int(*maxNodes))
	out := tree.Profile()
	out.Start, out.End = p.Start, p.End
	return out
}

// pprofMessage returns the samples of type t of p as a pprof profile
// message: one of that type and no samples when p has none.
func pprofMessage(p *profile.Profile, t profile.SampleType) (*googlev1.Profile, error) {
	if !query.HasType(p, t) {
		return &googlev1.Profile{StringTable: []string{"", t.Name, t.Unit}, SampleType: []*googlev1.ValueType{{Type: 1, Unit: 2}},
			PeriodType: &googlev1.ValueType{Type: 1, Unit: 2}, DefaultSampleType: 1}, nil
	}
	var buf bytes.Buffer
	if err := pprof.Encode(&buf, p, pprof.EncodeOptions{Types: []profile.SampleType{t}}); err != nil {
		return nil, connectError(err)
	}
	raw, err := format.Decompress(buf.Bytes(), "merged profile", 0)
	if err != nil {
		return nil, connectError(err)
	}
	out := &googlev1.Profile{}
	if err := proto.Unmarshal(raw, out); err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("merged profile: %w", err))
	}
	return out, nil
}

func (q querier) SelectSeries(ctx context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	m := req.Msg
	step := time.Duration(m.Step * float64(time.Second))
	if step < time.Second {
		step = 10 * time.Second
	}
	sr, err := selectRequest(m.ProfileTypeID, m.LabelSelector, m.StackTraceSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	// Samples without a time count at their upload's start, as
	// Pyroscope's timeline puts them; each point is stamped at the end of
	// its step, as Pyroscope stamps them, so that a client summing the
	// points within the range (profilecli's query top) counts them all.
	sum, err := q.s.query.Sum(ctx, headerTenant(req.Header()), sr, query.Sums{Step: step, By: m.GroupBy, UntimedAtUpload: true, StepEnds: true})
	if err != nil {
		return nil, connectError(err)
	}
	res := &querierv1.SelectSeriesResponse{}
	totals := map[*typesv1.Series]int64{}
	for _, ss := range sum.Series {
		out := &typesv1.Series{}
		for i, name := range m.GroupBy {
			if v := ss.Labels[i]; v != "" {
				out.Labels = append(out.Labels, &typesv1.LabelPair{Name: name, Value: v})
			}
		}
		for _, pt := range ss.Points {
			out.Points = append(out.Points, &typesv1.Point{Timestamp: pt[0], Value: float64(pt[1])})
			totals[out] += pt[1]
		}
		res.Series = append(res.Series, out)
	}
	if m.Limit != nil && *m.Limit > 0 && int64(len(res.Series)) > *m.Limit {
		// The largest series, as Pyroscope keeps them.
		slices.SortStableFunc(res.Series, func(a, b *typesv1.Series) int { return cmp.Compare(totals[b], totals[a]) })
		res.Series = res.Series[:*m.Limit]
	}
	return connect.NewResponse(res), nil
}

// SelectMergeProfile answers the merged profile as pprof, as
// SelectMergeStacktraces does with PROFILE_FORMAT_PPROF: what profilecli's
// query profile fetches, with its stack trace selector and max nodes.
func (q querier) SelectMergeProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeProfileRequest]) (*connect.Response[googlev1.Profile], error) {
	m := req.Msg
	p, t, err := q.merged(ctx, req.Header(), m.ProfileTypeID, m.LabelSelector, m.StackTraceSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	gp, err := pprofMessage(trimmed(p, t, m.MaxNodes), t)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(gp), nil
}

func (q querier) Diff(ctx context.Context, req *connect.Request[querierv1.DiffRequest]) (*connect.Response[querierv1.DiffResponse], error) {
	left, right := req.Msg.Left, req.Msg.Right
	if left == nil || right == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("left and right: both sides are needed"))
	}
	lt, err := pyroscope.TypeOfID(left.ProfileTypeID)
	if rt, rerr := pyroscope.TypeOfID(right.ProfileTypeID); err == nil && rerr == nil && lt != rt {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("profile types differ: %s and %s", left.ProfileTypeID, right.ProfileTypeID))
	}
	base, bt, err := q.merged(ctx, req.Header(), left.ProfileTypeID, left.LabelSelector, left.StackTraceSelector, left.Start, left.End)
	if err != nil {
		return nil, err
	}
	next, t, err := q.merged(ctx, req.Header(), right.ProfileTypeID, right.LabelSelector, right.StackTraceSelector, right.Start, right.End)
	if err != nil {
		return nil, err
	}
	if !query.HasType(next, t) {
		t = bt
	}
	tree := profile.Diff(base, next, t)
	tree.Trim(nodeLimit(left.MaxNodes))
	fb := query.NewDiffFlamebearer(tree)
	fg := &querierv1.FlameGraphDiff{Names: fb.Names, Levels: levels(fb), Total: fb.NumTicks, MaxSelf: fb.MaxSelf, LeftTicks: tree.Root.BaseTotal, RightTicks: tree.Root.Total}
	return connect.NewResponse(&querierv1.DiffResponse{Flamegraph: fg}), nil
}

func (q querier) GetProfileStats(ctx context.Context, req *connect.Request[typesv1.GetProfileStatsRequest]) (*connect.Response[typesv1.GetProfileStatsResponse], error) {
	oldest, newest, any, err := q.s.query.Stats(headerTenant(req.Header()))
	if err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&typesv1.GetProfileStatsResponse{DataIngested: any, OldestProfileTime: oldest, NewestProfileTime: newest}), nil
}

// Series lists the label sets of the selected data, each with its profile
// type (__profile_type__, and __name__ its first part), restricted to the
// label names asked for. Without names, the labels that vary per task or
// thread are left out, as a block's rollup leaves them.
func (q querier) Series(ctx context.Context, req *connect.Request[querierv1.SeriesRequest]) (*connect.Response[querierv1.SeriesResponse], error) {
	qs, err := labelQuery(req.Msg.Matchers, req.Msg.Start, req.Msg.End)
	if err != nil {
		return nil, err
	}
	keep := func(name string) bool {
		if len(req.Msg.LabelNames) > 0 {
			return slices.Contains(req.Msg.LabelNames, name)
		}
		return !slices.Contains(store.RollupDropped, name)
	}
	sets, err := q.s.query.LabelSets(ctx, headerTenant(req.Header()), qs, keep)
	if err != nil {
		return nil, connectError(err)
	}
	res := &querierv1.SeriesResponse{}
	for _, ls := range sets {
		set := &typesv1.Labels{}
		for _, l := range ls {
			set.Labels = append(set.Labels, &typesv1.LabelPair{Name: l.Name, Value: l.Value})
		}
		res.LabelsSet = append(res.LabelsSet, set)
	}
	return connect.NewResponse(res), nil
}
