package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// Samples clamped into their upload's window are found by the queries of a
// range that holds the window, as by those of all time, in the head and
// compacted.
func TestClampedSamplesInRange(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	qc := querierv1connect.NewQuerierServiceClient(http.DefaultClient, ts.URL)
	now := time.Now()
	q := url.Values{"name": {"clamped"}, "format": {"jfr"},
		"from": {fmt.Sprint(now.Add(-20 * time.Second).Unix())}, "until": {fmt.Sprint(now.Add(-10 * time.Second).Unix())}}
	code, body := postBody(t, ts, "/ingest?"+q.Encode(), "", corpus.Read(t, "jfr", "dump1.jfr.gz"))
	var ack struct{ Samples, Clamped int }
	json.Unmarshal([]byte(body), &ack)
	if code != 200 || ack.Clamped == 0 {
		t.Fatalf("upload: %d %s, want 200 with samples clamped", code, body)
	}
	for _, stage := range []string{"head", "compacted"} {
		if stage == "compacted" {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
		}
		all := render(t, ts, "clamped{}", "").Flamebearer.NumTicks
		if all == 0 {
			t.Fatalf("%s: the render of all time is empty", stage)
		}
		for _, path := range []string{
			"/api/v1/render?query=clamped{}&from=now-1h&until=now",
			"/pyroscope/render?query=clamped{}&from=now-1h&until=now",
		} {
			var r renderResponse
			getJSON(t, ts, path, &r)
			if got := r.Flamebearer.NumTicks; got != all {
				t.Errorf("%s: %s: %d ticks, all time %d", stage, strings.SplitN(path, "?", 2)[0], got, all)
			}
		}
		fg, err := qc.SelectMergeStacktraces(context.Background(), connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
			ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="clamped"}`,
			Start: now.Add(-time.Hour).UnixMilli(), End: time.Now().UnixMilli()}))
		if err != nil {
			t.Fatal(err)
		}
		if got := fg.Msg.Flamegraph.GetTotal(); got != int64(all) {
			t.Errorf("%s: SelectMergeStacktraces: total %d, all time %d", stage, got, all)
		}
		var top struct{ Total int64 }
		getJSON(t, ts, "/api/v1/top?query=clamped{}&from=now-1h&until=now", &top)
		if top.Total != int64(all) {
			t.Errorf("%s: /api/v1/top: total %d, all time %d", stage, top.Total, all)
		}
	}
}
