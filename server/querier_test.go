package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/store"
)

// headers sets request headers on every call of a Connect client.
type headers map[string]string

func (h headers) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		for k, v := range h {
			req.Header().Set(k, v)
		}
		return next(ctx, req)
	}
}

func (h headers) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (h headers) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// TestQuerierAPI reads real recordings through Pyroscope's Connect query
// API with the generated client Grafana's Pyroscope data source uses, in
// protobuf (Grafana's encoding) and JSON: profile types, label names and
// values, the merged flame graph and series, against the offline totals.
func TestQuerierAPI(t *testing.T) {
	ts, _ := newTestServer(t, Config{AuthToken: "s3cret"})
	auth := headers{"Authorization": "Bearer s3cret", "X-Scope-OrgID": "grafana"}
	raw := corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	for _, exec := range []string{"1", "2"} {
		q := url.Values{"name": {"kafka{spark_executor_id=" + exec + "}"}, "format": {"jfr"}}
		if code := post(t, ts, q, "", raw, "Authorization", auth["Authorization"], "X-Scope-OrgID", auth["X-Scope-OrgID"]); code != 200 {
			t.Fatalf("upload: %d", code)
		}
	}
	offline, err := format.Decode(raw, "offline", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := func(typ profile.SampleType) int64 {
		id, _ := offline.TypeIndex(typ)
		return 2 * offline.Total(id) // two executors sent it
	}
	ctx := context.Background()
	now := time.Now().UnixMilli()

	for _, encoding := range []string{"protobuf", "json"} {
		t.Run(encoding, func(t *testing.T) {
			opts := []connect.ClientOption{connect.WithInterceptors(auth)}
			if encoding == "json" {
				opts = append(opts, connect.WithProtoJSON())
			}
			qc := querierCase{ctx: ctx, now: now, total: total, offline: offline, c: querierv1connect.NewQuerierServiceClient(http.DefaultClient, ts.URL, opts...)}
			qc.labels(t)
			qc.flameGraphs(t)
			qc.series(t)
			qc.pprof(t)
			qc.formats(t)
			qc.diffAndStats(t)
			qc.seriesList(t)
			qc.unimplemented(t)
		})
	}

	// Another tenant sees nothing; no token, no answer.
	other := querierv1connect.NewQuerierServiceClient(http.DefaultClient, ts.URL, connect.WithInterceptors(headers{"Authorization": auth["Authorization"], "X-Scope-OrgID": "other"}))
	types, err := other.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{End: now}))
	if err != nil || len(types.Msg.ProfileTypes) != 0 {
		t.Errorf("another tenant: %v, %v", types, err)
	}
	anon := querierv1connect.NewQuerierServiceClient(http.DefaultClient, ts.URL)
	_, err = anon.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{}))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeUnauthenticated {
		t.Errorf("without the token: %v, want unauthenticated", err)
	}
}

// querierCase is a client of the querier API over the uploads of
// TestQuerierAPI: two executors sent the same recording, whose total of a
// type total gives.
type querierCase struct {
	ctx     context.Context
	c       querierv1connect.QuerierServiceClient
	now     int64 // Unix ms
	total   func(profile.SampleType) int64
	offline *profile.Profile // the recording each executor sent
}

// labels checks the profile types, label names and label values.
func (qc querierCase) labels(t *testing.T) {
	types, err := qc.c.ProfileTypes(qc.ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: 0, End: qc.now}))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, pt := range types.Msg.ProfileTypes {
		ids = append(ids, pt.ID)
	}
	if !slices.Contains(ids, "process_cpu:cpu:nanoseconds:cpu:nanoseconds") || !slices.Contains(ids, "mutex:delay:nanoseconds:mutex:count") {
		t.Errorf("profile types %q", ids)
	}

	names, err := qc.c.LabelNames(qc.ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Matchers: []string{`{service_name="kafka"}`}, End: qc.now}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names.Msg.Names, "spark_executor_id") || !slices.Contains(names.Msg.Names, "__name__") {
		t.Errorf("label names %q", names.Msg.Names)
	}
	values, err := qc.c.LabelValues(qc.ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: "spark_executor_id", Matchers: []string{`{service_name="kafka"}`}, End: qc.now}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(values.Msg.Names, []string{"1", "2"}) {
		t.Errorf("executors %q, want 1 and 2", values.Msg.Names)
	}

}

// flameGraphs checks merged flame graphs of three types, and of one
// executor bounded in nodes.
func (qc querierCase) flameGraphs(t *testing.T) {
	for _, tt := range []struct {
		id  string
		typ profile.SampleType
	}{
		{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", profile.TypeCPU},
		{"memory:alloc_in_new_tlab_bytes:bytes:space:bytes", profile.TypeAllocBytes},
		{"mutex:contentions:count:mutex:count", profile.TypeLockCount},
	} {
		fg, err := qc.c.SelectMergeStacktraces(qc.ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
			ProfileTypeID: tt.id, LabelSelector: `{service_name="kafka"}`, Start: 0, End: qc.now,
		}))
		if err != nil {
			t.Fatal(err)
		}
		g := fg.Msg.Flamegraph
		if g.Total != qc.total(tt.typ) || len(g.Levels) < 3 || len(g.Names) < 10 {
			t.Errorf("%s: total %d, %d levels, %d names; want total %d", tt.id, g.Total, len(g.Levels), len(g.Names), qc.total(tt.typ))
		}
	}
	// One executor, and a bound on the nodes.
	var limit int64 = 50
	fg, err := qc.c.SelectMergeStacktraces(qc.ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="kafka", spark_executor_id="2"}`,
		End: qc.now, MaxNodes: &limit,
	}))
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	for _, l := range fg.Msg.Flamegraph.Levels[1:] {
		nodes += len(l.Values) / 4
	}
	if g := fg.Msg.Flamegraph; g.Total != qc.total(profile.TypeCPU)/2 || nodes > 2*int(limit) {
		t.Errorf("one executor, 50 nodes: total %d, %d nodes; want %d", g.Total, nodes, qc.total(profile.TypeCPU)/2)
	}

}

// series checks the series of each executor.
func (qc querierCase) series(t *testing.T) {
	series, err := qc.c.SelectSeries(qc.ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
		ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="kafka"}`,
		End: qc.now, Step: 1, GroupBy: []string{"spark_executor_id"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(series.Msg.Series) != 2 {
		t.Fatalf("%d series, want one per executor", len(series.Msg.Series))
	}
	for i, s := range series.Msg.Series {
		sum := 0.0
		for _, p := range s.Points {
			sum += p.Value
		}
		if len(s.Labels) != 1 || s.Labels[0].Value != []string{"1", "2"}[i] || int64(sum) != qc.total(profile.TypeCPU)/2 || len(s.Points) < 5 {
			t.Errorf("series %d: labels %v, %d points summing to %.0f; want executor %d, %d", i, s.Labels, len(s.Points), sum, i+1, qc.total(profile.TypeCPU)/2)
		}
	}

}

// pprof checks the merged profile, as profilecli's merge fetches it.
func (qc querierCase) pprof(t *testing.T) {
	//lint:ignore SA1019 deprecated for PROFILE_FORMAT_PPROF, but clients (profilecli query merge) still call it
	merged, err := qc.c.SelectMergeProfile(qc.ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{
		ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="kafka"}`, End: qc.now,
	}))
	if err != nil {
		t.Fatal(err)
	}
	var pprofTotal int64
	for _, smp := range merged.Msg.Sample {
		pprofTotal += smp.Value[0]
	}
	if st := merged.Msg.SampleType; len(st) != 1 || merged.Msg.StringTable[st[0].Type] != "cpu" || pprofTotal != qc.total(profile.TypeCPU) || len(merged.Msg.Function) < 10 {
		t.Errorf("pprof: types %v, total %d, %d functions; want cpu, %d", st, pprofTotal, len(merged.Msg.Function), qc.total(profile.TypeCPU))
	}

}

// diffAndStats checks a diff of the two executors and the profile stats.
func (qc querierCase) diffAndStats(t *testing.T) {
	// One executor against the other: the same recording.
	side := func(exec string) *querierv1.SelectMergeStacktracesRequest {
		return &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: "mutex:delay:nanoseconds:mutex:count", LabelSelector: `{spark_executor_id="` + exec + `"}`, End: qc.now}
	}
	diff, err := qc.c.Diff(qc.ctx, connect.NewRequest(&querierv1.DiffRequest{Left: side("1"), Right: side("2")}))
	if err != nil {
		t.Fatal(err)
	}
	if d, half := diff.Msg.Flamegraph, qc.total(profile.TypeLockDelay)/2; d.LeftTicks != half || d.RightTicks != half || d.Total != 2*half || len(d.Levels[1].Values)%7 != 0 {
		t.Errorf("diff: left %d, right %d, total %d; want %d each", d.LeftTicks, d.RightTicks, d.Total, half)
	}

	stats, err := qc.c.GetProfileStats(qc.ctx, connect.NewRequest(&typesv1.GetProfileStatsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if s := stats.Msg; !s.DataIngested || s.OldestProfileTime <= 0 || s.NewestProfileTime < s.OldestProfileTime {
		t.Errorf("profile stats %v", s)
	}

}

// seriesList checks the services and their profile types, as Grafana's
// profiles app lists them.
func (qc querierCase) seriesList(t *testing.T) {
	// The services and their profile types, as Grafana's profiles
	// app lists them.
	list, err := qc.c.Series(qc.ctx, connect.NewRequest(&querierv1.SeriesRequest{LabelNames: []string{"service_name", "__profile_type__"}, End: qc.now}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ls := range list.Msg.LabelsSet {
		var parts []string
		for _, l := range ls.Labels {
			parts = append(parts, l.Name+"="+l.Value)
		}
		got = append(got, strings.Join(parts, ","))
	}
	slices.Sort(got)
	want := []string{
		"__profile_type__=memory:alloc_objects:count:space:bytes,service_name=kafka",
		"__profile_type__=memory:alloc_space:bytes:space:bytes,service_name=kafka",
		"__profile_type__=mutex:contentions:count:mutex:count,service_name=kafka",
		"__profile_type__=mutex:delay:nanoseconds:mutex:count,service_name=kafka",
		"__profile_type__=process_cpu:cpu:nanoseconds:cpu:nanoseconds,service_name=kafka",
	}
	if !slices.Equal(got, want) {
		t.Errorf("series %q, want %q", got, want)
	}

}

// unimplemented checks the answers to what sparkprof does not serve.
func (qc querierCase) unimplemented(t *testing.T) {
	_, err := qc.c.SelectMergeStacktraces(qc.ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: "cpu", End: qc.now}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("a bad profile type: %v, want invalid_argument", err)
	}
	_, err = qc.c.SelectMergeStacktraces(qc.ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", End: qc.now, Format: 99,
	}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("a format the API does not have: %v, want invalid_argument", err)
	}
	//lint:ignore SA1019 deprecated for span_selector, but clients still call it
	_, err = qc.c.SelectMergeSpanProfile(qc.ctx, connect.NewRequest(&querierv1.SelectMergeSpanProfileRequest{}))
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Errorf("span profiles: %v, want unimplemented", err)
	}
}

// A query whose client went away stops reading uploads.
func TestMergeCanceled(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	if code := post(t, ts, url.Values{"name": {"svc{}"}}, "", []byte("main;work 3\n")); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	srv := ts.Config.Handler.(*Server)
	p, err := srv.query.Merge(context.Background(), "", query.NewRequest(nil, "", 0, 0))
	if err != nil || len(p.Samples) != 1 {
		t.Fatalf("merge: %v, %v", p, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := srv.query.Merge(ctx, "", query.NewRequest(nil, "", 0, 0)); !errors.Is(err, context.Canceled) {
		t.Errorf("a canceled query: %v, want context.Canceled", err)
	}
	if _, err := srv.query.LabelValues(ctx, "", "", store.Query{}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled label values: %v, want context.Canceled", err)
	}
}
