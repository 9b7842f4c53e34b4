package server

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
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
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// querier answers Pyroscope's query API (querier.v1.QuerierService over the
// Connect protocol, protobuf or JSON), the API Grafana's Pyroscope data
// source calls: profile types, label names and values, the merged flame
// graph, pprof, diff and time series of a profile type ID and a label
// selector, the series and the profile stats. So Grafana, and Pyroscope's
// profilecli, read sparkprof as they read Pyroscope. Methods and formats
// sparkprof does not serve (span profiles, heatmaps, Pyroscope's tree and
// DOT formats) answer unimplemented.
type querier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	s *Server
}

// handleQuerier routes the Connect API under its service path.
func (s *Server) handleQuerier() (string, http.Handler) {
	return querierv1connect.NewQuerierServiceHandler(querier{s: s}, connect.WithReadMaxBytes(int(s.cfg.MaxBodyBytes)))
}

// queryRange turns a request's start and end (Unix ms, 0 open) into a
// store query's.
func queryRange(start, end int64) store.Query {
	return store.Query{From: start * int64(time.Millisecond), Until: end * int64(time.Millisecond)}
}

// labelQuery selects what the label selectors of a label request match, in
// the range, one query per selector (see labelValues for what a selector
// narrows). An empty list, or "{}", matches all.
func labelQuery(selectors []string, start, end int64) ([]store.Query, error) {
	var qs []store.Query
	for _, sel := range selectors {
		ms, _, err := parseSelector(sel)
		if err != nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		q := queryRange(start, end)
		q.Matchers = ms
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		qs = append(qs, queryRange(start, end))
	}
	return qs, nil
}

func (q querier) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	types, err := q.s.storedTypes(ctx, headerTenant(req.Header()), queryRange(req.Msg.Start, req.Msg.End))
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	res := &querierv1.ProfileTypesResponse{}
	for _, t := range types {
		id := profileTypeID(t)
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
		ns, err := q.s.labelNames(ctx, headerTenant(req.Header()), sq)
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		names = append(names, ns...)
	}
	if len(names) > 0 {
		names = append(names, metricName, profileTypeLabel)
	}
	slices.Sort(names)
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: slices.Compact(names)}), nil
}

// profileTypeLabel is the label Pyroscope gives a profile's type ID;
// __name__ holds its first part (process_cpu, memory, ...).
const profileTypeLabel = "__profile_type__"

func (q querier) LabelValues(ctx context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	ten := headerTenant(req.Header())
	qs, err := labelQuery(req.Msg.Matchers, req.Msg.Start, req.Msg.End)
	if err != nil {
		return nil, err
	}
	var values []string
	for _, sq := range qs {
		switch name := req.Msg.Name; name {
		case metricName, profileTypeLabel:
			types, err := q.s.storedTypes(ctx, ten, sq)
			if err != nil {
				return nil, connect.NewError(connect.CodeInternal, err)
			}
			for _, t := range types {
				id := profileTypeID(t)
				if name == metricName {
					id, _, _ = strings.Cut(id, ":")
				}
				values = append(values, id)
			}
		default:
			vals, err := q.s.labelValues(ctx, ten, name, sq)
			if err != nil {
				return nil, connect.NewError(connect.CodeInternal, err)
			}
			for v := range vals[name] {
				values = append(values, v)
			}
		}
	}
	slices.Sort(values)
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: slices.Compact(values)}), nil
}

// selectRequest is the request of a profile type ID and a label selector
// over start–end (Unix ms).
func selectRequest(profileTypeID, selector string, start, end int64) (request, error) {
	if profileTypeID == "" {
		return request{}, connect.NewError(connect.CodeInvalidArgument, errors.New("profile_typeID: missing; say which profile type, e.g. "+profileTypeIDs[profile.TypeCPU]))
	}
	t, err := typeOfProfileTypeID(profileTypeID)
	if err != nil {
		return request{}, connect.NewError(connect.CodeInvalidArgument, err)
	}
	ms, _, err := parseSelector(selector)
	if err != nil {
		return request{}, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("label_selector: %w", err))
	}
	r := queryRange(start, end)
	return newRequest(ms, t.Name, r.From, r.Until), nil
}

// merged merges what a profile type ID and a label selector select over
// start–end (Unix ms), stacks only. It returns the merged profile and the
// sample type picked.
func (q querier) merged(ctx context.Context, h http.Header, typeID, selector string, start, end int64) (*profile.Profile, profile.SampleType, error) {
	sr, err := selectRequest(typeID, selector, start, end)
	if err != nil {
		return nil, profile.SampleType{}, err
	}
	sr.labels = noLabels
	p, err := q.s.merge(ctx, headerTenant(h), sr)
	if err != nil {
		return nil, profile.SampleType{}, connect.NewError(connect.CodeInternal, err)
	}
	return p, sampleType(p, sr.typ), nil
}

// levels lays out a flamebearer's levels as the query API's.
func levels(fb *Flamebearer) []*querierv1.Level {
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

func (q querier) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	m := req.Msg
	if f := m.Format; f != querierv1.ProfileFormat_PROFILE_FORMAT_UNSPECIFIED && f != querierv1.ProfileFormat_PROFILE_FORMAT_FLAMEGRAPH {
		return nil, connect.NewError(connect.CodeUnimplemented, fmt.Errorf("format %s: sparkprof answers flame graphs only (PROFILE_FORMAT_FLAMEGRAPH)", f))
	}
	p, t, err := q.merged(ctx, req.Header(), m.ProfileTypeID, m.LabelSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	tree := profile.NewTree(p, t)
	tree.Trim(nodeLimit(m.MaxNodes))
	fb := newFlamebearer(tree)
	fg := &querierv1.FlameGraph{Names: fb.Names, Levels: levels(fb), Total: fb.NumTicks, MaxSelf: fb.MaxSelf}
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: fg}), nil
}

func (q querier) SelectSeries(ctx context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	m := req.Msg
	step := time.Duration(m.Step * float64(time.Second))
	if step < time.Second {
		step = 10 * time.Second
	}
	sr, err := selectRequest(m.ProfileTypeID, m.LabelSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	// Samples without a time count at their upload's start, as
	// Pyroscope's timeline puts them.
	_, series, _, _, err := q.s.sumSelected(ctx, headerTenant(req.Header()), sr, stepSums{step: step, by: m.GroupBy, untimedAtUpload: true})
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	res := &querierv1.SelectSeriesResponse{}
	totals := map[*typesv1.Series]int64{}
	for _, ss := range series {
		out := &typesv1.Series{}
		for i, name := range m.GroupBy {
			if v := ss.labels[i]; v != "" {
				out.Labels = append(out.Labels, &typesv1.LabelPair{Name: name, Value: v})
			}
		}
		for _, pt := range ss.points {
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

func (q querier) SelectMergeProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeProfileRequest]) (*connect.Response[googlev1.Profile], error) {
	m := req.Msg
	p, t, err := q.merged(ctx, req.Header(), m.ProfileTypeID, m.LabelSelector, m.Start, m.End)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := pprof.Encode(&buf, p, pprof.EncodeOptions{Types: []profile.SampleType{t}}); err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	raw, err := format.Decompress(buf.Bytes(), "merged profile", 0)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	out := &googlev1.Profile{}
	if err := proto.Unmarshal(raw, out); err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("merged profile: %w", err))
	}
	return connect.NewResponse(out), nil
}

func (q querier) Diff(ctx context.Context, req *connect.Request[querierv1.DiffRequest]) (*connect.Response[querierv1.DiffResponse], error) {
	left, right := req.Msg.Left, req.Msg.Right
	if left == nil || right == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("left and right: both sides are needed"))
	}
	lt, err := typeOfProfileTypeID(left.ProfileTypeID)
	if rt, rerr := typeOfProfileTypeID(right.ProfileTypeID); err == nil && rerr == nil && lt != rt {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("profile types differ: %s and %s", left.ProfileTypeID, right.ProfileTypeID))
	}
	base, bt, err := q.merged(ctx, req.Header(), left.ProfileTypeID, left.LabelSelector, left.Start, left.End)
	if err != nil {
		return nil, err
	}
	next, t, err := q.merged(ctx, req.Header(), right.ProfileTypeID, right.LabelSelector, right.Start, right.End)
	if err != nil {
		return nil, err
	}
	if !hasType(next, t) {
		t = bt
	}
	tree := profile.Diff(base, next, t)
	tree.Trim(nodeLimit(left.MaxNodes))
	fb := newDiffFlamebearer(tree)
	fg := &querierv1.FlameGraphDiff{Names: fb.Names, Levels: levels(fb), Total: fb.NumTicks, MaxSelf: fb.MaxSelf, LeftTicks: tree.Root.BaseTotal, RightTicks: tree.Root.Total}
	return connect.NewResponse(&querierv1.DiffResponse{Flamegraph: fg}), nil
}

func (q querier) GetProfileStats(ctx context.Context, req *connect.Request[typesv1.GetProfileStatsRequest]) (*connect.Response[typesv1.GetProfileStatsResponse], error) {
	res := &typesv1.GetProfileStatsResponse{}
	err := q.s.cfg.Store.Select(headerTenant(req.Header()), store.Query{}, func(u *store.Upload) error {
		from, until := u.From/int64(time.Millisecond), u.Until/int64(time.Millisecond)
		if !res.DataIngested || from < res.OldestProfileTime {
			res.OldestProfileTime = from
		}
		res.NewestProfileTime = max(res.NewestProfileTime, until)
		res.DataIngested = true
		return nil
	})
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(res), nil
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
	seen := map[string]bool{}
	res := &querierv1.SeriesResponse{}
	add := func(ls profile.Labels, t profile.SampleType) {
		id := profileTypeID(t)
		name, _, _ := strings.Cut(id, ":")
		ls = ls.Merge(profile.Labels{{Name: metricName, Value: name}, {Name: profileTypeLabel, Value: id}})
		var set typesv1.Labels
		var key strings.Builder
		for _, l := range ls {
			if keep(l.Name) {
				set.Labels = append(set.Labels, &typesv1.LabelPair{Name: l.Name, Value: l.Value})
				fmt.Fprintf(&key, "%s=%q,", l.Name, l.Value)
			}
		}
		if !seen[key.String()] {
			seen[key.String()] = true
			res.LabelsSet = append(res.LabelsSet, &set)
		}
	}
	for _, sq := range qs {
		err := q.s.cfg.Store.Select(headerTenant(req.Header()), sq, func(u *store.Upload) error {
			p, err := labelSource(u)
			if err != nil || p == nil {
				return err
			}
			base := p.Labels.Merge(u.Labels)
			type setType struct {
				set profile.LabelSetID
				typ profile.TypeID
			}
			done := map[setType]bool{}
			for _, smp := range p.Samples {
				if k := (setType{smp.Labels, smp.Type}); !done[k] {
					done[k] = true
					add(base.Merge(p.LabelSet(smp.Labels)), p.Types[smp.Type])
				}
			}
			return nil
		})
		if err != nil {
			return nil, connect.NewError(connect.CodeInternal, err)
		}
	}
	return connect.NewResponse(res), nil
}
