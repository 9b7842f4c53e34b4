package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	pprofile "github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"
)

// The tests of this file send a running `sparkprof serve` the requests
// Pyroscope's profilecli sends for its commands (upload, query profile,
// query series, query top, query label-values-cardinality, ready), through
// the generated Connect clients of github.com/grafana/pyroscope/api that
// profilecli itself is built on, and check the answers against what
// Pyroscope's API documents. profilecli itself lives in Pyroscope's main
// module, which the Go module proxy does not serve (it is under the AGPL),
// so it cannot be built here as SeaweedFS's weed is.

// profilecliCPU is the profile type profilecli's query commands ask for by
// default.
const profilecliCPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// uploadedStacks are the stacks, root first, and CPU nanoseconds of the
// pprof profilecliUpload sends.
var uploadedStacks = []struct {
	stack []string
	value int64
}{
	{[]string{"main", "work", "hot"}, 70e6},
	{[]string{"main", "work", "cold"}, 20e6},
	{[]string{"main", "idle"}, 10e6},
}

// uploadedTotal is the CPU time of the uploaded pprof.
const uploadedTotal = 100e6

// embeddedPprof is a CPU pprof taken at t whose samples carry their own
// service_name label, as a pprof written by a labelling profiler does.
func embeddedPprof(t *testing.T, at time.Time) []byte {
	t.Helper()
	p := &pprofile.Profile{
		SampleType:    []*pprofile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &pprofile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10e6,
		TimeNanos:     at.UnixNano(),
		DurationNanos: int64(10 * time.Second),
	}
	fns := map[string]*pprofile.Location{}
	loc := func(name string) *pprofile.Location {
		if l := fns[name]; l != nil {
			return l
		}
		fn := &pprofile.Function{ID: uint64(len(fns) + 1), Name: name}
		l := &pprofile.Location{ID: fn.ID, Line: []pprofile.Line{{Function: fn}}}
		p.Function = append(p.Function, fn)
		p.Location = append(p.Location, l)
		fns[name] = l
		return l
	}
	for _, s := range uploadedStacks {
		smp := &pprofile.Sample{Value: []int64{s.value}, Label: map[string][]string{"service_name": {"embedded"}}}
		for i := len(s.stack) - 1; i >= 0; i-- { // leaf first
			smp.Location = append(smp.Location, loc(s.stack[i]))
		}
		p.Sample = append(p.Sample, smp)
	}
	var b strings.Builder
	if err := p.WriteUncompressed(&b); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// profilecliCase is a server with the pprof uploaded as profilecli's
// upload sends it, and profilecli's clients of it.
type profilecliCase struct {
	ctx        context.Context
	base       string
	query      querierv1connect.QuerierServiceClient
	start, end int64 // the range profilecli's queries ask for (Unix ms): the last hour
}

// TestProfilecliCommands runs each profilecli command's requests against
// a running server: the answers are those Pyroscope's API documents.
func TestProfilecliCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	base := serveUntilEnd(t, t.TempDir())
	now := time.Now()
	pc := profilecliCase{
		ctx: context.Background(), base: base,
		query: querierv1connect.NewQuerierServiceClient(http.DefaultClient, base),
		start: now.Add(-time.Hour).UnixMilli(), end: now.Add(time.Second).UnixMilli(),
	}
	pc.upload(t, embeddedPprof(t, now.Add(-30*time.Second)))
	t.Run("QueryProfile", pc.queryProfile)
	t.Run("StacktraceSelector", pc.stacktraceSelector)
	t.Run("MaxNodes", pc.maxNodes)
	t.Run("QuerySeries", pc.querySeries)
	t.Run("QueryTop", pc.queryTop)
	t.Run("LabelCardinality", pc.labelCardinality)
	t.Run("Ready", pc.ready)
}

// serveUntilEnd runs `sparkprof serve --data data extra...` until the test ends
// and returns its base URL once it is ready.
func serveUntilEnd(t *testing.T, data string, extra ...string) string {
	t.Helper()
	cmd, base := startServe(t, buildBinary(t), data, extra...)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	waitReady(t, base)
	return base
}

// upload sends the pprof as `profilecli upload --extra-labels
// service_name=cli-app` does: one series of the extra labels, the profile
// name profilecli detects (__name__) and the raw pprof.
func (pc profilecliCase) upload(t *testing.T, raw []byte) {
	c := pushv1connect.NewPusherServiceClient(http.DefaultClient, pc.base)
	_, err := c.Push(pc.ctx, connect.NewRequest(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
		Labels:  []*typesv1.LabelPair{{Name: "__name__", Value: "process_cpu"}, {Name: "service_name", Value: "cli-app"}},
		Samples: []*pushv1.RawSample{{ID: "0b6a2f1e-9d0c-4f7e-8a55-2d7c3f1b9e01", RawProfile: raw}},
	}}}))
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
}

// profile fetches the merged pprof as `profilecli query profile` does,
// with the stack trace selector and max nodes given (none when empty or
// 0), and parses it.
func (pc profilecliCase) profile(t *testing.T, selector string, site []string, maxNodes int64) *pprofile.Profile {
	t.Helper()
	req := &querierv1.SelectMergeProfileRequest{ProfileTypeID: profilecliCPU, LabelSelector: selector, Start: pc.start, End: pc.end}
	if maxNodes > 0 {
		req.MaxNodes = &maxNodes
	}
	if len(site) > 0 {
		req.StackTraceSelector = &typesv1.StackTraceSelector{}
		for _, name := range site {
			req.StackTraceSelector.CallSite = append(req.StackTraceSelector.CallSite, &typesv1.Location{Name: name})
		}
	}
	//lint:ignore SA1019 profilecli's query profile calls it
	res, err := pc.query.SelectMergeProfile(pc.ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatalf("query profile %s %v: %v", selector, site, err)
	}
	raw, err := proto.Marshal(res.Msg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pprofile.ParseData(raw)
	if err != nil {
		t.Fatalf("query profile: the answer is not pprof: %v", err)
	}
	return p
}

// pprofStacks returns the pprof's stacks (root first, joined by ";") and their
// values.
func pprofStacks(p *pprofile.Profile) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		var names []string
		for i := len(s.Location) - 1; i >= 0; i-- {
			for j := len(s.Location[i].Line) - 1; j >= 0; j-- {
				names = append(names, s.Location[i].Line[j].Function.Name)
			}
		}
		out[strings.Join(names, ";")] += s.Value[0]
	}
	return out
}

// stacksTotal sums a stacks map.
func stacksTotal(ss map[string]int64) int64 {
	var n int64
	for _, v := range ss {
		n += v
	}
	return n
}

// queryProfile checks that the upload is queried by the upload's
// service_name, which takes precedence over its samples' own, as in
// Pyroscope, and not by the samples'.
func (pc profilecliCase) queryProfile(t *testing.T) {
	got := pprofStacks(pc.profile(t, `{service_name="cli-app"}`, nil, 0))
	want := map[string]int64{}
	for _, s := range uploadedStacks {
		want[strings.Join(s.stack, ";")] = s.value
	}
	if len(got) != len(want) || stacksTotal(got) != uploadedTotal {
		t.Errorf(`{service_name="cli-app"}: %v; want the upload's stacks %v`, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("stack %s: %d, want %d", k, got[k], v)
		}
	}
	if n := stacksTotal(pprofStacks(pc.profile(t, `{service_name="embedded"}`, nil, 0))); n != 0 {
		t.Errorf(`{service_name="embedded"}: %d ns; want none: the upload's label takes precedence over the samples'`, n)
	}
}

// stacktraceSelector checks that --stacktrace-selector keeps the stacks
// that begin, from the root, with the call site given, and only those.
func (pc profilecliCase) stacktraceSelector(t *testing.T) {
	for _, c := range []struct {
		site []string
		want map[string]int64
	}{
		{[]string{"main", "work"}, map[string]int64{"main;work;hot": 70e6, "main;work;cold": 20e6}},
		{[]string{"main", "work", "hot"}, map[string]int64{"main;work;hot": 70e6}},
		{[]string{"main"}, map[string]int64{"main;work;hot": 70e6, "main;work;cold": 20e6, "main;idle": 10e6}},
		{[]string{"work"}, map[string]int64{}},                   // not at the root
		{[]string{"main", "nosuchfunction"}, map[string]int64{}}, // no such call site
		{[]string{"main", "idle", "deeper"}, map[string]int64{}}, // deeper than any stack
	} {
		got := pprofStacks(pc.profile(t, "{}", c.site, 0))
		if len(got) != len(c.want) {
			t.Errorf("call site %v: %v; want %v", c.site, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("call site %v: stack %s is %d; want %d", c.site, k, got[k], v)
			}
		}
	}
}

// maxNodes checks that --max-nodes bounds the pprof to the nodes of
// largest total, the others folded into "other", totals unchanged.
func (pc profilecliCase) maxNodes(t *testing.T) {
	for _, c := range []struct {
		nodes int64
		want  map[string]int64
	}{
		// main (100 ms) and work (90 ms) are the two largest nodes.
		{2, map[string]int64{"main;work;other": 90e6, "main;other": 10e6}},
		{3, map[string]int64{"main;work;hot": 70e6, "main;work;other": 20e6, "main;other": 10e6}},
		{5, map[string]int64{"main;work;hot": 70e6, "main;work;cold": 20e6, "main;idle": 10e6}},
	} {
		p := pc.profile(t, "{}", nil, c.nodes)
		got := pprofStacks(p)
		if len(got) != len(c.want) || stacksTotal(got) != uploadedTotal {
			t.Errorf("max nodes %d: %v; want %v", c.nodes, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("max nodes %d: stack %s is %d; want %d", c.nodes, k, got[k], v)
			}
		}
		var fns []string
		for _, fn := range p.Function {
			if fn.Name != "other" {
				fns = append(fns, fn.Name)
			}
		}
		if int64(len(fns)) > c.nodes {
			t.Errorf("max nodes %d: functions %v", c.nodes, fns)
		}
	}
}

// querySeries checks `profilecli query series`: the label sets of the
// upload, by the upload's service_name.
func (pc profilecliCase) querySeries(t *testing.T) {
	res, err := pc.query.Series(pc.ctx, connect.NewRequest(&querierv1.SeriesRequest{Start: pc.start, End: pc.end, Matchers: []string{"{}"}}))
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, set := range res.Msg.LabelsSet {
		var typ string
		for _, l := range set.Labels {
			switch l.Name {
			case "service_name":
				services = append(services, l.Value)
			case "__profile_type__":
				typ = l.Value
			}
		}
		if typ != profilecliCPU {
			t.Errorf("label set %v: __profile_type__ %q, want %s", set.Labels, typ, profilecliCPU)
		}
	}
	if !slices.Equal(services, []string{"cli-app"}) {
		t.Errorf("service names of the series %v; want [cli-app]", services)
	}
}

// queryTop checks `profilecli query top`: one step over the whole range,
// whose points are stamped at the end of their step as Pyroscope stamps
// them, within the range, adding up to the upload's CPU time.
func (pc profilecliCase) queryTop(t *testing.T) {
	res, err := pc.query.SelectSeries(pc.ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
		ProfileTypeID: profilecliCPU, LabelSelector: "{}", Start: pc.start, End: pc.end,
		Step: float64(pc.end-pc.start) / 1000, GroupBy: []string{"service_name"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Msg.Series) != 1 {
		t.Fatalf("%d series; want one, of service cli-app: %v", len(res.Msg.Series), res.Msg.Series)
	}
	s := res.Msg.Series[0]
	if len(s.Labels) != 1 || s.Labels[0].Value != "cli-app" {
		t.Errorf("series labels %v; want service_name=cli-app", s.Labels)
	}
	var inRange float64
	for _, p := range s.Points {
		if p.Timestamp <= pc.start || p.Timestamp > pc.end {
			t.Errorf("point at %d, outside the range (%d, %d]: a point is stamped at its step's end", p.Timestamp, pc.start, pc.end)
			continue
		}
		inRange += p.Value
	}
	if len(s.Points) != 1 || s.Points[0].Timestamp != pc.end || inRange != uploadedTotal {
		t.Errorf("points %v; want one at the range's end (%d) of %d ns", s.Points, pc.end, int64(uploadedTotal))
	}
}

// labelCardinality checks `profilecli query label-values-cardinality`:
// the label names of the selection, and each one's values.
func (pc profilecliCase) labelCardinality(t *testing.T) {
	names, err := pc.query.LabelNames(pc.ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: pc.start, End: pc.end, Matchers: []string{"{}"}}))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]string{}
	for _, name := range names.Msg.Names {
		res, err := pc.query.LabelValues(pc.ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: name, Start: pc.start, End: pc.end, Matchers: []string{"{}"}}))
		if err != nil {
			t.Fatalf("label values of %s: %v", name, err)
		}
		values[name] = res.Msg.Names
	}
	for name, want := range map[string][]string{
		"service_name":     {"cli-app"},
		"__name__":         {"process_cpu"},
		"__profile_type__": {profilecliCPU},
	} {
		if !slices.Equal(values[name], want) {
			t.Errorf("values of %s: %v; want %v (all: %v)", name, values[name], want, values)
		}
	}
}

// ready checks `profilecli ready`: the server's /ready answers 200 once it
// is ready.
func (pc profilecliCase) ready(t *testing.T) {
	resp, err := http.Get(pc.base + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/ready: %s; want 200", resp.Status)
	}
}
