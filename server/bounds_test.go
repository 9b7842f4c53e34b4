package server

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
)

// A folded count past what a flame graph's total keeps is refused with a
// 400 naming its line, and leaves the service's flame graph as it was.
func TestFoldedCountTooLarge(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	q := url.Values{"name": {"big"}, "format": {"folded"}}
	if code := post(t, ts, q, "", []byte("main;work 5\n")); code != 200 {
		t.Fatalf("upload: %d", code)
	}
	code, body := postBody(t, ts, "/ingest?"+q.Encode(), "", []byte("main;work 1\nmain;more 9223372036854775807\n"))
	if code != http.StatusBadRequest || !strings.Contains(body, ":2: count 9223372036854775807 out of range: more than 2^53") {
		t.Errorf("a count of 2^63-1: %d %s, want 400 naming line 2 and the bound", code, body)
	}
	if got := render(t, ts, "big{}", "").Flamebearer.NumTicks; got != 5 {
		t.Errorf("the flame graph after the refused upload: %d ticks, want 5", got)
	}
}

// Times past what Unix nanoseconds hold, in a query's range, are a 400
// (REST) or InvalidArgument (Connect), as is a Connect range that ends
// before it starts: not an empty answer.
func TestRangeOutOfBounds(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	post(t, ts, url.Values{"name": {"svc"}}, "", []byte("main;work 2\n"))
	for _, r := range []string{"until=9999999999999", "until=9300000000000000", "from=now-586y", "from=now-100y", "until=now-300y"} {
		for _, path := range []string{"/api/v1/render?query=%7B%7D&", "/pyroscope/render?query=svc%7B%7D&"} {
			if code, body := getBody(t, ts, path+r); code != http.StatusBadRequest {
				t.Errorf("%s%s: %d %s, want 400", path, r, code, body)
			}
		}
	}
	if code := getStatus(t, ts, "/api/v1/render?query=%7B%7D&from=now-30y&until=9000000000000"); code != http.StatusOK {
		t.Errorf("a range from 30 years ago to 2255: %d, want 200", code)
	}

	qc := querierv1connect.NewQuerierServiceClient(http.DefaultClient, ts.URL)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	past := int64(math.MaxInt64/int64(time.Millisecond)) + 1 // ms past 2^63 ns
	for _, r := range []struct {
		name       string
		start, end int64
	}{
		{"end past 2^63 ns", now - 3_600_000, past},
		{"start past 2^63 ns", past, 0},
		{"start after end", now, now - 3_600_000},
		{"negative start", -1, now},
	} {
		calls := map[string]error{}
		_, calls["SelectMergeStacktraces"] = qc.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
			ProfileTypeID: "samples:samples:count:samples:count", LabelSelector: "{}", Start: r.start, End: r.end}))
		_, calls["SelectSeries"] = qc.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
			ProfileTypeID: "samples:samples:count:samples:count", LabelSelector: "{}", Start: r.start, End: r.end, Step: 10}))
		_, calls["LabelNames"] = qc.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: r.start, End: r.end}))
		_, calls["ProfileTypes"] = qc.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: r.start, End: r.end}))
		for call, err := range calls {
			var ce *connect.Error
			if !errors.As(err, &ce) || ce.Code() != connect.CodeInvalidArgument {
				t.Errorf("%s, %s: %v, want InvalidArgument", r.name, call, err)
			}
		}
	}
	// The same calls over the last hour answer.
	names, err := qc.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: now - 3_600_000, End: now + 1000}))
	if err != nil || len(names.Msg.Names) == 0 {
		t.Errorf("the label names of the last hour: %v, %v", names, err)
	}
	fg, err := qc.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID: "samples:samples:count:samples:count", LabelSelector: "{}", Start: now - 3_600_000, End: now + 1000}))
	if err != nil || fg.Msg.Flamegraph.GetTotal() != 2 {
		t.Errorf("the flame graph of the last hour: %v, %v; want a total of 2", fg, err)
	}
}
