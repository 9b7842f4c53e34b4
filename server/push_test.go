package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	jfrpprof "github.com/grafana/jfr-parser/pprof"
	googlev1 "github.com/grafana/pyroscope/api/gen/proto/go/google/v1"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/ingest"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

// alloyPush builds the push Grafana Alloy's pyroscope.java sends for a JFR
// recording: jfr-parser's pprof profiles (the converter Alloy uses), one
// series per profile with its __name__ and the pod's labels.
func alloyPush(t *testing.T, jfr []byte, labels ...*typesv1.LabelPair) *pushv1.PushRequest {
	t.Helper()
	ps, err := jfrpprof.ParseJFR(jfr, &jfrpprof.ParseInput{StartTime: time.Unix(1700000000, 0), EndTime: time.Unix(1700000010, 0), SampleRate: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := &pushv1.PushRequest{}
	for _, p := range ps.Profiles {
		raw, err := proto.Marshal(p.Profile)
		if err != nil {
			t.Fatal(err)
		}
		ls := append([]*typesv1.LabelPair{{Name: "__name__", Value: p.Metric}, {Name: "__delta__", Value: "false"}}, labels...)
		req.Series = append(req.Series, &pushv1.RawProfileSeries{Labels: ls, Samples: []*pushv1.RawSample{{RawProfile: raw}}})
	}
	return req
}

// TestPush sends a real recording as Grafana Alloy does, through the
// generated Connect client, and reads each sample type's total back; a
// push with a bad profile or no service_name stores nothing.
func TestPush(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	c := pushv1connect.NewPusherServiceClient(http.DefaultClient, ts.URL, connect.WithSendGzip())
	ctx := context.Background()
	pod := []*typesv1.LabelPair{
		{Name: "service_name", Value: "spark/etl"}, {Name: "namespace", Value: "spark"},
		{Name: "pod", Value: "etl-exec-1"}, {Name: "executorId", Value: "1"},
	}
	push := alloyPush(t, jfr, pod...)
	if len(push.Series) < 4 {
		t.Fatalf("jfr-parser made %d profiles of the recording; want cpu, allocations and locks", len(push.Series))
	}
	if _, err := c.Push(ctx, connect.NewRequest(push)); err != nil {
		t.Fatal(err)
	}

	offline, err := format.Decode(jfr, "offline", format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// jfr-parser writes lock delays in the recording's ticks under the unit
	// nanoseconds; sparkprof stores what the agent sent.
	var delayTicks int64
	for _, series := range push.Series {
		var pp googlev1.Profile
		if err := proto.Unmarshal(series.Samples[0].RawProfile, &pp); err != nil {
			t.Fatal(err)
		}
		for i, st := range pp.SampleType {
			if pp.StringTable[st.Type] == "delay" {
				for _, smp := range pp.Sample {
					delayTicks += smp.Value[i]
				}
			}
		}
	}
	for _, typ := range []profile.SampleType{profile.TypeCPU, profile.TypeAllocBytes, profile.TypeAllocObjects, profile.TypeLockCount, profile.TypeLockDelay} {
		id, _ := offline.TypeIndex(typ)
		want := offline.Total(id)
		if typ == profile.TypeLockDelay {
			want = delayTicks
		}
		if got := render(t, ts, `{service_name="spark/etl", spark_executor_id="1", pod="etl-exec-1"}`, typ.Name, "").Flamebearer.NumTicks; got != want || want == 0 {
			t.Errorf("%s: %d pushed, the recording holds %d", typ, got, want)
		}
	}

	count := func() int { return countUploads(t, db, "") }
	before := count()
	bad := alloyPush(t, jfr, pod...)
	bad.Series[len(bad.Series)-1].Samples[0].RawProfile = []byte("not a profile")
	if _, err := c.Push(ctx, connect.NewRequest(bad)); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("a bad profile: %v, want invalid_argument", err)
	}
	if _, err := c.Push(ctx, connect.NewRequest(alloyPush(t, jfr))); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("no service_name: %v, want invalid_argument", err)
	}
	if n := count(); n != before {
		t.Errorf("refused pushes stored %d uploads", n-before)
	}
	var agents []ingest.Agent
	getJSON(t, ts, "/api/v1/agents", &agents)
	for _, a := range agents {
		if a.App == "spark/etl" && (a.Uploads != int64(len(push.Series)) || a.ExecutorID != "1" || a.Errors == 0 || !strings.HasPrefix(a.SpyName, "connect-go/")) {
			t.Errorf("agents row %+v: want %d uploads from executor 1, and the refused pushes", a, len(push.Series))
		}
	}
}

// A push over the body limit is refused whole, also when it is gzipped
// under the limit and decompresses past it.
func TestPushLimit(t *testing.T) {
	push := alloyPush(t, corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz"), &typesv1.LabelPair{Name: "service_name", Value: "big"})
	raw, err := proto.Marshal(push)
	if err != nil {
		t.Fatal(err)
	}
	gz := gzipBytes(t, raw)
	limit := (len(gz) + len(raw)) / 2
	ts, db := newTestServer(t, Config{MaxBodyBytes: int64(limit)})
	for _, opts := range [][]connect.ClientOption{nil, {connect.WithSendGzip()}} {
		c := pushv1connect.NewPusherServiceClient(http.DefaultClient, ts.URL, opts...)
		if _, err := c.Push(context.Background(), connect.NewRequest(push)); connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Errorf("a push of %d bytes (%d gzipped) over the limit of %d (%d options): %v, want resource_exhausted", len(raw), len(gz), limit, len(opts), err)
		}
	}
	if n := countUploads(t, db, ""); n != 0 {
		t.Errorf("%d uploads stored", n)
	}
}

// The labels Spark puts on its Kubernetes pods, as Alloy passes them on,
// attribute the profiles to the app, its driver and its executors.
func TestPushSparkPodLabels(t *testing.T) {
	ts, _ := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "dump1.jfr.gz")
	c := pushv1connect.NewPusherServiceClient(http.DefaultClient, ts.URL)
	for _, pod := range [][]*typesv1.LabelPair{
		{{Name: "service_name", Value: "spark/etl-driver"}, {Name: "spark_app_selector", Value: "spark-7f3a"}, {Name: "spark_role", Value: "driver"}},
		{{Name: "service_name", Value: "spark/etl-exec-3"}, {Name: "spark_app_selector", Value: "spark-7f3a"}, {Name: "spark_role", Value: "executor"}, {Name: "spark_exec_id", Value: "3"}},
	} {
		if _, err := c.Push(context.Background(), connect.NewRequest(alloyPush(t, jfr, pod...))); err != nil {
			t.Fatal(err)
		}
	}
	for label, want := range map[string]string{
		"spark_app_id":      "[spark-7f3a]",
		"spark_executor_id": "[3 driver]",
		"role":              "[driver executor]",
	} {
		var got []string
		getJSON(t, ts, "/api/v1/label-values?name="+label, &got)
		if fmt.Sprint(got) != want {
			t.Errorf("%s: %v, want %s", label, got, want)
		}
	}
}

// Pushes over the tenant's rate get resource_exhausted, saying when to
// retry.
func TestPushRate(t *testing.T) {
	push := alloyPush(t, corpus.Read(t, "jfr", "dump1.jfr.gz"), &typesv1.LabelPair{Name: "service_name", Value: "busy"})
	ts, _ := newTestServer(t, Config{RatePerSecond: 1})
	c := pushv1connect.NewPusherServiceClient(http.DefaultClient, ts.URL)
	var err error
	for range 3 { // a burst of 2
		if _, err = c.Push(context.Background(), connect.NewRequest(push)); err != nil {
			break
		}
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted || ce.Meta().Get("Retry-After") != "1" {
		t.Errorf("third push in a burst of 2: %v (meta %v); want resource_exhausted with Retry-After 1", err, ce)
	}
}

// TestPushRetried sends a push again, as Alloy retries one whose answer it
// did not get: its profiles are stored once, with and without the IDs
// Alloy gives them; the agents list counts the retries.
func TestPushRetried(t *testing.T) {
	ts, db := newTestServer(t, Config{})
	jfr := corpus.Read(t, "jfr", "cortex-dev-01__kafka-0__cpu_lock0_alloc0__0.jfr.gz")
	c := pushv1connect.NewPusherServiceClient(http.DefaultClient, ts.URL)
	ctx := context.Background()
	count := func(app string) int { return countUploads(t, db, app) }
	for _, withIDs := range []bool{false, true} {
		app := fmt.Sprintf("retried-%v", withIDs)
		push := alloyPush(t, jfr, &typesv1.LabelPair{Name: "service_name", Value: app})
		if withIDs {
			for i, series := range push.Series {
				series.Samples[0].ID = fmt.Sprintf("734FD599-6865-419E-9475-%012d", i)
			}
		}
		for range 2 {
			if _, err := c.Push(ctx, connect.NewRequest(push)); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(app); n != len(push.Series) {
			t.Errorf("IDs %v: %d uploads after a push and its retry, want %d", withIDs, n, len(push.Series))
		}
		var agents []ingest.Agent
		getJSON(t, ts, "/api/v1/agents", &agents)
		for _, a := range agents {
			if a.App == app && (a.Uploads != int64(len(push.Series)) || a.Retried != int64(len(push.Series))) {
				t.Errorf("IDs %v: agents row %+v; want %d uploads and %d retried", withIDs, a, len(push.Series), len(push.Series))
			}
		}
	}
	// The same ID in another push, with other content: a client that gives
	// every profile one ID still has each stored.
	other := alloyPush(t, corpus.Read(t, "jfr", "dump1.jfr.gz"), &typesv1.LabelPair{Name: "service_name", Value: "retried-true"})
	other.Series = other.Series[:1]
	other.Series[0].Samples[0].ID = "734FD599-6865-419E-9475-000000000000"
	if _, err := c.Push(ctx, connect.NewRequest(other)); err != nil {
		t.Fatal(err)
	}
	if n := count("retried-true"); n != len(alloyPush(t, jfr).Series)+1 {
		t.Errorf("another profile under a stored ID: %d uploads, want %d", n, len(alloyPush(t, jfr).Series)+1)
	}
}
