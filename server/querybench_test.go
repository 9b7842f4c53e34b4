package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	_ "gocloud.dev/blob/s3blob" // BenchmarkQueryBucket's bucket
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/internal/seaweedtest"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/query"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
	"github.com/sparkprof/sparkprof/store/objstore"
)

// BenchmarkQuery measures flame-graph query latency over an hour of
// uploads from 100 executors every 10 s (36,000 uploads made from the
// corpus's dump1.jfr, 2,188 CPU samples each, with new labels and times),
// compacted as the server does: the whole app, one stage of ten, and the
// last quarter of the hour (a range that cuts a block).
// SPARKPROF_BENCH_WINDOWS=36 makes a tenth of it for a quick run.
func BenchmarkQuery(b *testing.B) {
	qb := newQueryBench(b)
	qb.renders(b)
	qb.sums(b)
	qb.appModel(b)
	qb.views(b)
	qb.labelQueries(b)
	qb.grafana(b)
	b.Logf("after the queries: heap %d MiB; warm store %+v", heapMiB(), qb.stores["warm"].Stats())
}

// queryBench is the hour of uploads BenchmarkQuery queries, compacted and
// reopened: the totals each query must answer, and a server over the
// store as warm (its blocks' parts cached) and uncached.
type queryBench struct {
	dir             string // the store's directory
	partition       time.Duration
	windows         int
	base            *profile.Profile
	start, end, cut int64            // the hour, and a quarter before its end
	want            map[string]int64 // cpu total per query
	stores          map[string]*store.DB
	servers         map[string]*Server
	logger          *slog.Logger
}

// newQueryBench stores and compacts the hour of BenchmarkQuery, and opens
// the store again as after a restart.
func newQueryBench(b *testing.B) *queryBench {
	windows := synth.Windows
	if v, err := strconv.Atoi(os.Getenv("SPARKPROF_BENCH_WINDOWS")); err == nil && v > 0 {
		windows = v
	}
	base, err := format.Load(corpus.Path(b, "jfr", "dump1.jfr.gz"), format.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	// SPARKPROF_BENCH_PARTITION sets the blocks' time span (default ten
	// minutes, the server's).
	partition, _ := time.ParseDuration(os.Getenv("SPARKPROF_BENCH_PARTITION"))
	// One block per ten-minute partition, as the figures in BENCHMARKS.md
	// were first measured: a head budget that a partition of 6,000 uploads
	// does not reach. SPARKPROF_BENCH_HEAD_MB sets the budget instead (512,
	// the server's default, keeps a busy partition as several blocks).
	head := int64(1 << 40)
	if v, err := strconv.ParseInt(os.Getenv("SPARKPROF_BENCH_HEAD_MB"), 10, 64); err == nil && v > 0 {
		head = v << 20
	}
	db, err := store.Open(dir, store.Options{HeadBytes: head, Partition: partition})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	end := start + int64(windows)*int64(10*time.Second)
	cut := end - (end-start)/4 // a quarter before the end, inside a partition
	cut -= cut % int64(time.Second)
	if partition != 0 {
		cut -= cut%int64(partition) - int64(partition)/2 // inside a partition, as with ten-minute ones
	}
	// Inside a block's time slice rather than at its edge: a range a user
	// drags cuts one.
	cut += int64(25 * time.Second)
	t0 := time.Now()
	var samples int
	want := map[string]int64{} // cpu total per query
	cpu, _ := base.FindType("cpu")
	for w := range windows {
		for e := range synth.Executors {
			u := synth.Upload(base, start, e, w, windows)
			samples += len(u.Profile.Samples)
			typ := mustType(b, u.Profile, cpu)
			for _, s := range u.Profile.Samples {
				if s.Type != typ {
					continue
				}
				want["whole-app"] += s.Value
				if w*synth.Stages/windows == 3 {
					want["one-stage"] += s.Value
				}
				if s.Time >= cut {
					want["last-quarter"] += s.Value
				}
			}
			if err := db.Append("", u); err != nil {
				b.Fatal(err)
			}
		}
		if w%60 == 59 || w == windows-1 {
			if err := db.Compact(); err != nil {
				b.Fatal(err)
			}
		}
	}
	n := windows * synth.Executors
	b.Logf("%d uploads, %d samples stored and compacted in %v into %d blocks; heap %d MiB; on disk %.1f MB, %.2f KB per upload",
		n, samples, time.Since(t0).Round(time.Second), db.Stats().Blocks, heapMiB(), float64(dirSize(dir))/(1<<20), float64(dirSize(dir))/float64(n)/1024)
	db.Close()

	// As after a restart: the blocks' metas in memory, their parts read
	// on demand, then cached ("warm"), or with no room in the cache, read
	// from disk every time ("uncached").
	warm, err := store.Open(dir, store.Options{Partition: partition})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { warm.Close() })
	b.Logf("reopened: heap %d MiB", heapMiB())
	uncached, err := store.Open(dir, store.Options{CacheBytes: 1, Partition: partition})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { uncached.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	servers := map[string]*Server{"warm": newServer(b, Config{Store: warm, Logger: logger}), "uncached": newServer(b, Config{Store: uncached, Logger: logger})}
	return &queryBench{dir: dir, partition: partition, windows: windows, base: base, start: start, end: end, cut: cut, want: want,
		stores: map[string]*store.DB{"warm": warm, "uncached": uncached}, servers: servers, logger: logger}
}

// BenchmarkQueryBucket measures BenchmarkQuery's flame graphs of the
// hour, the whole app and one stage, from a bucket of a real S3-compatible
// store (SeaweedFS on loopback): its blocks written to the bucket as a
// compactor writes them, and read by a query node (serve --role query)
// whose cache keeps what it read (warm) or nothing (cold: each query
// lists nothing new but reads every part it needs with ranged GETs).
// It needs SeaweedFS's weed (make weed).
func BenchmarkQueryBucket(b *testing.B) {
	s3 := seaweedtest.Start(b, "bench")
	for _, kv := range seaweedtest.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	qb := newQueryBench(b)
	ctx := context.Background()
	bkt, closer, err := objstore.Open(ctx, s3.URL("hour"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { closer.Close() })
	files, err := filepath.Glob(filepath.Join(qb.dir, "t-*", "*"))
	if err != nil {
		b.Fatal(err)
	}
	var objects, size int64
	for _, f := range files {
		if !strings.HasSuffix(f, ".block") && !strings.HasSuffix(f, ".parquet") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		name := path.Join(filepath.Base(filepath.Dir(f)), "blocks", filepath.Base(f))
		if err := bkt.Write(ctx, name, data, false); err != nil {
			b.Fatal(err)
		}
		objects++
		size += int64(len(data))
	}
	b.Logf("%d objects, %.1f MB, in the bucket", objects, float64(size)/(1<<20))
	for _, c := range []struct {
		cache string
		bytes int64
	}{{"warm", 0}, {"cold", 1}} {
		t0 := time.Now()
		db, err := store.Open(b.TempDir(), store.Options{Bucket: bkt, Role: store.RoleQuery, CacheBytes: c.bytes, Partition: qb.partition})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		b.Logf("%s query node: listed and read %d block metas in %v", c.cache, db.Stats().Bucket.Blocks, time.Since(t0).Round(time.Millisecond))
		s := newServer(b, Config{Store: db, Logger: qb.logger})
		for _, q := range []struct{ name, query string }{
			{"whole-app", `{spark_app_id="app-bench"}`},
			{"one-stage", `{spark_app_id="app-bench",spark_stage_id="3"}`},
		} {
			b.Run(q.name+"/"+c.cache, func(b *testing.B) { qb.render(b, s, q.name, q.query, qb.start) })
		}
	}
}

// renders measures the flame graphs of the whole app, one stage and the last quarter.
func (qb *queryBench) renders(b *testing.B) {
	for _, c := range []struct {
		name, cache, query string
		from               int64
	}{
		{"whole-app", "warm", `{spark_app_id="app-bench"}`, qb.start},
		{"one-stage", "warm", `{spark_app_id="app-bench",spark_stage_id="3"}`, qb.start},
		{"last-quarter", "warm", `{spark_app_id="app-bench"}`, qb.cut},
		{"whole-app", "uncached", `{spark_app_id="app-bench"}`, qb.start},
		{"last-quarter", "uncached", `{spark_app_id="app-bench"}`, qb.cut},
	} {
		b.Run(c.name+"/"+c.cache, func(b *testing.B) { qb.render(b, qb.servers[c.cache], c.name, c.query, c.from) })
	}
}

// render measures server s's flame graph of query from from to the end
// of the hour, whose CPU must be what qb.want holds for name.
func (qb *queryBench) render(b *testing.B, s *Server, name, query string, from int64) {
	q := url.Values{"query": {query}, "from": {strconv.FormatInt(from, 10)}, "until": {strconv.FormatInt(qb.end, 10)}}
	var got renderResponse
	for b.Loop() {
		got = renderResponse{}
		serveJSON(b, s, "/api/v1/render?"+q.Encode(), &got)
	}
	if got.Flamebearer.NumTicks != qb.want[name] {
		b.Fatalf("%s: %d cpu ticks, the uploads hold %d", name, got.Flamebearer.NumTicks, qb.want[name])
	}
}

// sums measures the series and breakdowns that sum samples as they are read.
func (qb *queryBench) sums(b *testing.B) {
	// The app page's CPU per executor (/api/v1/series by executor, a step
	// of the app's two-hundredth), every sample of the hour in time.
	for _, cache := range []string{"warm", "uncached"} {
		b.Run("app-series/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "by": {"spark_executor_id"}, "step": {"18s"}, "type": {"cpu"}}
			var got seriesAnswer
			for b.Loop() {
				got = seriesAnswer{}
				serveJSON(b, qb.servers[cache], "/api/v1/series?"+q.Encode(), &got)
			}
			var total int64
			for _, sr := range got.Series {
				for _, pt := range sr.Points {
					total += pt[1]
				}
			}
			if len(got.Series) != synth.Executors || total != qb.want["whole-app"] {
				b.Fatalf("%d series, %d cpu ns; want %d and %d", len(got.Series), total, synth.Executors, qb.want["whole-app"])
			}
		})
	}
	// The latency view's sums by thread state and stage
	// (/api/v1/breakdown), of the app's CPU.
	for _, cache := range []string{"warm", "uncached"} {
		b.Run("breakdown/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "by": {"state,spark_stage_id"}, "type": {"cpu"}}
			var got struct{ Total int64 }
			for b.Loop() {
				serveJSON(b, qb.servers[cache], "/api/v1/breakdown?"+q.Encode(), &got)
			}
			if got.Total != qb.want["whole-app"] {
				b.Fatalf("%d cpu ns, the uploads hold %d", got.Total, qb.want["whole-app"])
			}
		})
	}
	// Pyroscope's render (/pyroscope/render): the flame graph and its
	// timeline, 1,500 steps over the range.
	for _, cache := range []string{"warm", "uncached"} {
		b.Run("pyroscope-render/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "from": {strconv.FormatInt(qb.start, 10)}, "until": {strconv.FormatInt(qb.end, 10)}}
			var got struct {
				Timeline query.Timeline
			}
			for b.Loop() {
				got.Timeline = query.Timeline{}
				serveJSON(b, qb.servers[cache], "/pyroscope/render?"+q.Encode(), &got)
			}
			var total int64
			for _, v := range got.Timeline.Samples {
				total += v
			}
			if total != qb.want["whole-app"] {
				b.Fatalf("timeline holds %d cpu ns, the uploads %d", total, qb.want["whole-app"])
			}
		})
	}
}

// appModel measures the queries that join samples to the app's task model.
func (qb *queryBench) appModel(b *testing.B) {
	// With the app's task model known (a task per thread and window, each
	// running for its window less up to 600 ms): a stage's flame graph,
	// whose samples are joined to their tasks' windows, and the stage
	// page's slowest tenth of its tasks against the rest.
	nThreads := len(qb.base.Threads)
	var tasks []*spark.Task
	for w := range qb.windows {
		for e := range synth.Executors {
			launch := (qb.start + int64(w)*int64(10*time.Second)) / 1e6
			for i := range nThreads {
				id := int64((w*synth.Executors+e)*nThreads + i)
				t := &spark.Task{ID: id, StageID: w * synth.Stages / qb.windows, ExecutorID: strconv.Itoa(e), LaunchMs: launch, FinishMs: launch + 10000 - id%7*100}
				tasks = append(tasks, t)
			}
		}
	}
	// A straggler finding of stage 3, which the app page explains from
	// the task's samples.
	var straggler *spark.Task
	for _, t := range tasks {
		if t.StageID == 3 && (straggler == nil || t.DurationMs() > straggler.DurationMs()) {
			straggler = t
		}
	}
	rep := &analysis.Report{App: spark.Summary{ID: "app-bench", Name: "bench"}, Tasks: tasks,
		Findings: []analysis.Finding{{Kind: analysis.KindStraggler, StageID: &straggler.StageID, TaskID: &straggler.ID, Evidence: &analysis.StragglerEvidence{}}}}
	for _, cache := range []string{"warm", "uncached"} {
		s := newServer(b, Config{Store: qb.stores[cache], Logger: qb.logger})
		s.apps.Put("", rep)
		b.Run("one-stage-joined/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench",spark_stage_id="3"}`}, "type": {"cpu"}}
			var got renderResponse
			for b.Loop() {
				got = renderResponse{}
				serveJSON(b, s, "/api/v1/render?"+q.Encode(), &got)
			}
			// Samples after their task's finish lose its stage.
			if got.Flamebearer.NumTicks == 0 || got.Flamebearer.NumTicks > qb.want["one-stage"] {
				b.Fatalf("%d cpu ticks; the stage's uploads hold %d", got.Flamebearer.NumTicks, qb.want["one-stage"])
			}
		})
		// The app page, its task model alone (every task, for the
		// timeline), then with the straggler to explain.
		b.Run("app-page/"+cache, func(b *testing.B) {
			plain := *rep
			plain.Findings = nil
			s.apps.Put("", &plain)
			var page []byte
			for b.Loop() {
				page = serve(b, s, "/api/v1/apps/app-bench") // a large page: decoding it would cost more than serving it
			}
			b.ReportMetric(float64(len(tasks)), "tasks")
			b.ReportMetric(float64(len(page))/(1<<20), "page-MiB")
			s.apps.Put("", rep)
		})
		b.Run("app-page-straggler/"+cache, func(b *testing.B) {
			var page []byte
			for b.Loop() {
				page = serve(b, s, "/api/v1/apps/app-bench")
			}
			var got struct {
				Findings []struct {
					Evidence struct{ Profile analysis.Hotspot }
				}
			}
			if err := json.Unmarshal(page, &got); err != nil {
				b.Fatal(err)
			}
			if len(got.Findings) != 1 || got.Findings[0].Evidence.Profile.Samples == 0 {
				b.Fatalf("findings %+v: want the straggler's samples", got.Findings)
			}
		})
		b.Run("slow-vs-rest/"+cache, func(b *testing.B) {
			var got struct{ LeftTicks, RightTicks int64 }
			for b.Loop() {
				serveJSON(b, s, "/api/v1/apps/app-bench/stages/3/slow-vs-rest?type=cpu", &got)
			}
			if got.LeftTicks == 0 || got.RightTicks == 0 || got.LeftTicks+got.RightTicks > qb.want["one-stage"] {
				b.Fatalf("%d + %d cpu ticks; the stage's uploads hold %d", got.LeftTicks, got.RightTicks, qb.want["one-stage"])
			}
		})
	}
}

// views measures the other views a user opens on the app.
func (qb *queryBench) views(b *testing.B) {
	// The other views a user opens on the app: the top functions, one
	// executor's, one task's and one thread's flame graph, two executors
	// side by side (JSON and Pyroscope's), and the exports.
	rng := "&from=" + strconv.FormatInt(qb.start, 10) + "&until=" + strconv.FormatInt(qb.end, 10)
	esc := url.QueryEscape
	app := esc(`{spark_app_id="app-bench"}`)
	exec := func(e int) string { return esc(fmt.Sprintf(`{spark_app_id="app-bench",spark_executor_id="%d"}`, e)) }
	for _, c := range []struct{ name, path string }{
		{"top", "/api/v1/top?type=cpu&query=" + app + rng},
		{"one-executor", "/api/v1/render?type=cpu&query=" + exec(7) + rng},
		{"one-task", "/api/v1/render?type=cpu&query=" + esc(`{spark_app_id="app-bench",spark_task_id="12345"}`) + rng},
		{"one-thread", "/api/v1/render?type=cpu&query=" + esc(`{spark_app_id="app-bench",thread_name=~"pool-2-thread-[12]"}`) + rng},
		{"diff-executors", "/api/v1/diff?type=cpu&base=" + exec(1) + "&next=" + exec(2) + rng},
		{"pyroscope-render-diff", "/pyroscope/render-diff?leftQuery=" + exec(1) + "&rightQuery=" + exec(2) + "&leftFrom=" + strconv.FormatInt(qb.start, 10) + "&leftUntil=" + strconv.FormatInt(qb.end, 10) + "&rightFrom=" + strconv.FormatInt(qb.start, 10) + "&rightUntil=" + strconv.FormatInt(qb.end, 10)},
		{"export-pprof", "/api/v1/export?format=pprof&type=cpu&query=" + app + rng},
		{"export-pprof-all-labels", "/api/v1/export?format=pprof&labels=all&type=cpu&query=" + app + rng},
		{"flame-page", "/flame?type=cpu&query=" + app + rng},
		{"export-folded", "/api/v1/export?format=folded&type=cpu&query=" + app + rng},
	} {
		for _, cache := range []string{"warm", "uncached"} {
			b.Run(c.name+"/"+cache, func(b *testing.B) {
				var w *httptest.ResponseRecorder
				for b.Loop() {
					w = httptest.NewRecorder()
					qb.servers[cache].ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
				}
				if w.Code != 200 || w.Body.Len() < 100 {
					b.Fatalf("%s: %d: %.300s", c.path, w.Code, w.Body)
				}
				b.ReportMetric(float64(w.Body.Len()), "answer-bytes")
			})
		}
	}
}

// labelQueries measures label queries and the apps list.
func (qb *queryBench) labelQueries(b *testing.B) {
	// Label queries, with nothing cached: names and a stage's values come
	// from the blocks' metas, task ids (too many to list) from the samples;
	// with a selector, values come from the rollups or the samples.
	for _, c := range []struct {
		name, path string
		want       int // values expected, 0 for any
	}{
		{"labels", "/api/v1/labels", 0},
		{"stage-values", "/api/v1/label-values?name=spark_stage_id", 10},
		{"task-values", "/api/v1/label-values?name=spark_task_id", 0},
		// What the UI's pickers ask once a stage is picked: the
		// executors (blocks' rollups) and its tasks (blocks' samples).
		{"executors-of-a-stage", "/api/v1/label-values?name=spark_executor_id&query=" + url.QueryEscape(`{spark_stage_id="3"}`), 100},
		{"tasks-of-a-stage", "/api/v1/label-values?name=spark_task_id&query=" + url.QueryEscape(`{spark_stage_id="3"}`), 0},
	} {
		b.Run(c.name+"/uncached", func(b *testing.B) {
			var got []string
			for b.Loop() {
				got = nil
				serveJSON(b, qb.servers["uncached"], c.path, &got)
			}
			if len(got) == 0 || c.want > 0 && len(got) != c.want {
				b.Fatalf("%s: %d values, want %d", c.path, len(got), c.want)
			}
		})
	}
	// The Applications page: the analysed apps, and the app ids of the
	// samples (app-bench, known from its profiles alone here).
	b.Run("apps/uncached", func(b *testing.B) {
		var apps []query.AppSummary
		for b.Loop() {
			apps = nil
			serveJSON(b, qb.servers["uncached"], "/api/v1/apps", &apps)
		}
		if len(apps) != 1 || apps[0].ID != "app-bench" || apps[0].Status != "profiles" {
			b.Fatalf("apps %+v, want app-bench from its profiles", apps)
		}
	})
}

// grafana measures what Grafana's Pyroscope data source asks.
func (qb *queryBench) grafana(b *testing.B) {
	// What Grafana's Pyroscope data source asks, in protobuf over Connect:
	// the profile types (every block's rollup), then the flame graph.
	connectCall := func(b *testing.B, s *Server, method string, req, res proto.Message) {
		body, err := proto.Marshal(req)
		if err != nil {
			b.Fatal(err)
		}
		r := httptest.NewRequest("POST", "/querier.v1.QuerierService/"+method, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/proto")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("%s: %d: %s", method, w.Code, w.Body)
		}
		if err := proto.Unmarshal(w.Body.Bytes(), res); err != nil {
			b.Fatal(err)
		}
	}
	for _, cache := range []string{"warm", "uncached"} {
		b.Run("grafana-profile-types/"+cache, func(b *testing.B) {
			var res querierv1.ProfileTypesResponse
			for b.Loop() {
				connectCall(b, qb.servers[cache], "ProfileTypes", &querierv1.ProfileTypesRequest{Start: qb.start / 1e6, End: qb.end / 1e6}, &res)
			}
			if len(res.ProfileTypes) == 0 {
				b.Fatal("no profile types")
			}
		})
		b.Run("grafana-series/"+cache, func(b *testing.B) {
			var res querierv1.SeriesResponse
			req := &querierv1.SeriesRequest{LabelNames: []string{"service_name", "__profile_type__"}, Start: qb.start / 1e6, End: qb.end / 1e6}
			for b.Loop() {
				connectCall(b, qb.servers[cache], "Series", req, &res)
			}
			if len(res.LabelsSet) == 0 {
				b.Fatal("no series")
			}
		})
		b.Run("grafana-series-by-executor/"+cache, func(b *testing.B) {
			var res querierv1.SelectSeriesResponse
			req := &querierv1.SelectSeriesRequest{ProfileTypeID: pyroscope.TypeID(profile.TypeCPU), LabelSelector: `{spark_app_id="app-bench"}`,
				Start: qb.start / 1e6, End: qb.end / 1e6, Step: 18, GroupBy: []string{profile.LabelExecutorID}}
			for b.Loop() {
				connectCall(b, qb.servers[cache], "SelectSeries", req, &res)
			}
			var total float64
			for _, sr := range res.Series {
				for _, pt := range sr.Points {
					total += pt.Value
				}
			}
			if len(res.Series) != synth.Executors || int64(total) != qb.want["whole-app"] {
				b.Fatalf("%d series, %.0f cpu ns; want %d and %d", len(res.Series), total, synth.Executors, qb.want["whole-app"])
			}
		})
		b.Run("grafana-whole-app/"+cache, func(b *testing.B) {
			var res querierv1.SelectMergeStacktracesResponse
			req := &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: pyroscope.TypeID(profile.TypeCPU), LabelSelector: `{spark_app_id="app-bench"}`, Start: qb.start / 1e6, End: qb.end / 1e6}
			for b.Loop() {
				connectCall(b, qb.servers[cache], "SelectMergeStacktraces", req, &res)
			}
			if res.Flamegraph.Total != qb.want["whole-app"] {
				b.Fatalf("%d cpu ticks, the uploads hold %d", res.Flamegraph.Total, qb.want["whole-app"])
			}
		})
	}
}

// serveJSON runs GET path on s and decodes its JSON answer into v,
// failing b unless it is 200.
func serveJSON(b *testing.B, s *Server, path string, v any) {
	if err := json.Unmarshal(serve(b, s, path), v); err != nil {
		b.Fatal(err)
	}
}

// serve returns the body of a 200 answer to a GET of path.
func serve(b *testing.B, s *Server, path string) []byte {
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != 200 {
		b.Fatalf("%s: %d: %.300s", path, w.Code, w.Body)
	}
	return w.Body.Bytes()
}

// heapMiB is the live heap after a collection.
func heapMiB() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc >> 20
}

func mustType(tb testing.TB, p *profile.Profile, t profile.SampleType) profile.TypeID {
	tb.Helper()
	id, ok := p.TypeIndex(t)
	if !ok {
		tb.Fatalf("no %s samples", t)
	}
	return id
}

// BenchmarkLiveQuery measures the queries a running app's page makes at
// each refresh: 100 executors have sent 10 s uploads for the last 30
// minutes, up to now, into a store with the server's defaults (a 512 MiB
// head, compaction in the background), and the flame graph asks for the
// last 5 and the last 15 minutes. The recent uploads are in the head, or
// in blocks the head's budget made early.
func BenchmarkLiveQuery(b *testing.B) {
	base, err := format.Load(corpus.Path(b, "jfr", "dump1.jfr.gz"), format.Options{})
	if err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const windows = 180 // 30 minutes
	now := time.Now().UnixNano()
	start := now - windows*int64(10*time.Second)
	for w := range windows {
		for e := range synth.Executors {
			if err := db.Append("", synth.Upload(base, start, e, w, windows)); err != nil {
				b.Fatal(err)
			}
		}
	}
	st := db.Stats()
	b.Logf("%d uploads: %d in the head (%d MiB estimated), %d in %d blocks", windows*synth.Executors, st.HeadUploads, st.HeadBytes>>20, st.BlockUploads, st.Blocks)
	s := newServer(b, Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, last := range []string{"5m", "15m"} {
		b.Run("last-"+last, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "from": {"now-" + last}, "until": {"now"}}
			for b.Loop() {
				w := httptest.NewRecorder()
				s.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/render?"+q.Encode(), nil))
				if w.Code != 200 {
					b.Fatalf("%d: %s", w.Code, w.Body)
				}
			}
		})
	}
	// The page's CPU per executor, over the app so far (a step of its
	// two-hundredth).
	b.Run("app-series", func(b *testing.B) {
		q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "by": {"spark_executor_id"}, "step": {"9s"}, "type": {"cpu"}}
		var got seriesAnswer
		for b.Loop() {
			got = seriesAnswer{}
			serveJSON(b, s, "/api/v1/series?"+q.Encode(), &got)
		}
		if len(got.Series) != synth.Executors {
			b.Fatalf("%d series, want %d", len(got.Series), synth.Executors)
		}
	})
	st = db.Stats()
	b.Logf("after the queries: %d in the head (%d MiB estimated, its uploads' rollups included)", st.HeadUploads, st.HeadBytes>>20)
}
