package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// Query benchmark shape: an hour of 10 s uploads from 100 executors.
const (
	benchExecutors = 100
	benchWindows   = 360
	benchStages    = 10
)

// benchUpload makes the upload of executor exec for 10 s window w from
// base: the same stacks, with times moved into the window and each
// thread's samples labelled with a task of its own and the window's stage,
// as an executor running one task per core would send.
func benchUpload(base *profile.Profile, start int64, exec, w, windows int) *store.Upload {
	p := *base
	p.OwnLabelSets()
	from := start + int64(w)*int64(10*time.Second)
	span := max(base.End-base.Start, 1)
	stage := strconv.Itoa(w * benchStages / windows)
	sets := make([]profile.LabelSetID, len(base.Threads))
	for i := range sets {
		task := (w*benchExecutors+exec)*len(sets) + i
		sets[i] = p.AddLabels(profile.Labels{
			{Name: profile.LabelStageID, Value: stage},
			{Name: profile.LabelTaskID, Value: strconv.Itoa(task)},
		})
	}
	p.Samples = make([]profile.Sample, len(base.Samples))
	for i, s := range base.Samples {
		s.Time = from + int64(float64(s.Time-base.Start)*float64(10*time.Second)/float64(span))
		s.Labels = sets[s.Thread]
		p.Samples[i] = s
	}
	p.Start, p.End = from, from+int64(10*time.Second)
	return &store.Upload{From: p.Start, Until: p.End, Profile: &p, Labels: profile.Labels{
		{Name: profile.LabelServiceName, Value: "bench"},
		{Name: profile.LabelAppID, Value: "app-bench"},
		{Name: profile.LabelExecutorID, Value: strconv.Itoa(exec)},
		{Name: profile.LabelHost, Value: fmt.Sprintf("node-%02d", exec%20)},
	}}
}

// BenchmarkQuery measures flame-graph query latency over an hour of
// uploads from 100 executors every 10 s (36,000 uploads made from the
// corpus's dump1.jfr, 2,188 CPU samples each, with new labels and times),
// compacted as the server does: the whole app, one stage of ten, and the
// last quarter of the hour (a range that cuts a block).
// SPARKPROF_BENCH_WINDOWS=36 makes a tenth of it for a quick run.
func BenchmarkQuery(b *testing.B) {
	windows := benchWindows
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
		for e := range benchExecutors {
			u := benchUpload(base, start, e, w, windows)
			samples += len(u.Profile.Samples)
			typ := mustType(b, u.Profile, cpu)
			for _, s := range u.Profile.Samples {
				if s.Type != typ {
					continue
				}
				want["whole-app"] += s.Value
				if w*benchStages/windows == 3 {
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
	n := windows * benchExecutors
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
	defer warm.Close()
	b.Logf("reopened: heap %d MiB", heapMiB())
	uncached, err := store.Open(dir, store.Options{CacheBytes: 1, Partition: partition})
	if err != nil {
		b.Fatal(err)
	}
	defer uncached.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	servers := map[string]*Server{"warm": New(Config{Store: warm, Logger: logger}), "uncached": New(Config{Store: uncached, Logger: logger})}
	for _, c := range []struct {
		name, cache, query string
		from               int64
	}{
		{"whole-app", "warm", `{spark_app_id="app-bench"}`, start},
		{"one-stage", "warm", `{spark_app_id="app-bench",spark_stage_id="3"}`, start},
		{"last-quarter", "warm", `{spark_app_id="app-bench"}`, cut},
		{"whole-app", "uncached", `{spark_app_id="app-bench"}`, start},
		{"last-quarter", "uncached", `{spark_app_id="app-bench"}`, cut},
	} {
		s := servers[c.cache]
		b.Run(c.name+"/"+c.cache, func(b *testing.B) {
			q := url.Values{"query": {c.query}, "from": {strconv.FormatInt(c.from, 10)}, "until": {strconv.FormatInt(end, 10)}}
			var got renderResponse
			for b.Loop() {
				got = renderResponse{}
				serveJSON(b, s, "/api/v1/render?"+q.Encode(), &got)
			}
			if got.Flamebearer.NumTicks != want[c.name] {
				b.Fatalf("%s: %d cpu ticks, the uploads hold %d", c.name, got.Flamebearer.NumTicks, want[c.name])
			}
		})
	}
	// The app page's CPU per executor (/api/v1/series by executor, a step
	// of the app's two-hundredth), every sample of the hour in time.
	for _, cache := range []string{"warm", "uncached"} {
		b.Run("app-series/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "by": {"spark_executor_id"}, "step": {"18s"}, "type": {"cpu"}}
			var got seriesAnswer
			for b.Loop() {
				got = seriesAnswer{}
				serveJSON(b, servers[cache], "/api/v1/series?"+q.Encode(), &got)
			}
			var total int64
			for _, sr := range got.Series {
				for _, pt := range sr.Points {
					total += pt[1]
				}
			}
			if len(got.Series) != benchExecutors || total != want["whole-app"] {
				b.Fatalf("%d series, %d cpu ns; want %d and %d", len(got.Series), total, benchExecutors, want["whole-app"])
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
				serveJSON(b, servers[cache], "/api/v1/breakdown?"+q.Encode(), &got)
			}
			if got.Total != want["whole-app"] {
				b.Fatalf("%d cpu ns, the uploads hold %d", got.Total, want["whole-app"])
			}
		})
	}
	// Pyroscope's render (/pyroscope/render): the flame graph and its
	// timeline, 1,500 steps over the range.
	for _, cache := range []string{"warm", "uncached"} {
		b.Run("pyroscope-render/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench"}`}, "from": {strconv.FormatInt(start, 10)}, "until": {strconv.FormatInt(end, 10)}}
			var got struct {
				Timeline timeline
			}
			for b.Loop() {
				got.Timeline = timeline{}
				serveJSON(b, servers[cache], "/pyroscope/render?"+q.Encode(), &got)
			}
			var total int64
			for _, v := range got.Timeline.Samples {
				total += v
			}
			if total != want["whole-app"] {
				b.Fatalf("timeline holds %d cpu ns, the uploads %d", total, want["whole-app"])
			}
		})
	}
	// With the app's task model known (a task per thread and window, each
	// running for its window less up to 600 ms): a stage's flame graph,
	// whose samples are joined to their tasks' windows, and the stage
	// page's slowest tenth of its tasks against the rest.
	nThreads := len(base.Threads)
	var tasks []*spark.Task
	byID := map[int64]*spark.Task{}
	for w := range windows {
		for e := range benchExecutors {
			launch := (start + int64(w)*int64(10*time.Second)) / 1e6
			for i := range nThreads {
				id := int64((w*benchExecutors+e)*nThreads + i)
				t := &spark.Task{ID: id, StageID: w * benchStages / windows, ExecutorID: strconv.Itoa(e), LaunchMs: launch, FinishMs: launch + 10000 - id%7*100}
				tasks = append(tasks, t)
				byID[id] = t
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
		s := New(Config{Store: map[string]*store.DB{"warm": warm, "uncached": uncached}[cache], Logger: logger})
		s.apps.by[""] = map[string]*analysedApp{"app-bench": {report: rep, tasks: byID}}
		b.Run("one-stage-joined/"+cache, func(b *testing.B) {
			q := url.Values{"query": {`{spark_app_id="app-bench",spark_stage_id="3"}`}, "type": {"cpu"}}
			var got renderResponse
			for b.Loop() {
				got = renderResponse{}
				serveJSON(b, s, "/api/v1/render?"+q.Encode(), &got)
			}
			// Samples after their task's finish lose its stage.
			if got.Flamebearer.NumTicks == 0 || got.Flamebearer.NumTicks > want["one-stage"] {
				b.Fatalf("%d cpu ticks; the stage's uploads hold %d", got.Flamebearer.NumTicks, want["one-stage"])
			}
		})
		// The app page, its task model alone (every task, for the
		// timeline), then with the straggler to explain.
		b.Run("app-page/"+cache, func(b *testing.B) {
			plain := *rep
			plain.Findings = nil
			s.apps.by[""]["app-bench"] = &analysedApp{report: &plain, tasks: byID}
			var page []byte
			for b.Loop() {
				page = serve(b, s, "/api/v1/apps/app-bench") // a large page: decoding it would cost more than serving it
			}
			b.ReportMetric(float64(len(tasks)), "tasks")
			b.ReportMetric(float64(len(page))/(1<<20), "page-MiB")
			s.apps.by[""]["app-bench"] = &analysedApp{report: rep, tasks: byID}
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
			if got.LeftTicks == 0 || got.RightTicks == 0 || got.LeftTicks+got.RightTicks > want["one-stage"] {
				b.Fatalf("%d + %d cpu ticks; the stage's uploads hold %d", got.LeftTicks, got.RightTicks, want["one-stage"])
			}
		})
	}
	// The other views a user opens on the app: the top functions, one
	// executor's, one task's and one thread's flame graph, two executors
	// side by side (JSON and Pyroscope's), and the exports.
	rng := "&from=" + strconv.FormatInt(start, 10) + "&until=" + strconv.FormatInt(end, 10)
	esc := url.QueryEscape
	app := esc(`{spark_app_id="app-bench"}`)
	exec := func(e int) string { return esc(fmt.Sprintf(`{spark_app_id="app-bench",spark_executor_id="%d"}`, e)) }
	for _, c := range []struct{ name, path string }{
		{"top", "/api/v1/top?type=cpu&query=" + app + rng},
		{"one-executor", "/api/v1/render?type=cpu&query=" + exec(7) + rng},
		{"one-task", "/api/v1/render?type=cpu&query=" + esc(`{spark_app_id="app-bench",spark_task_id="12345"}`) + rng},
		{"one-thread", "/api/v1/render?type=cpu&query=" + esc(`{spark_app_id="app-bench",thread_name=~"pool-2-thread-[12]"}`) + rng},
		{"diff-executors", "/api/v1/diff?type=cpu&base=" + exec(1) + "&next=" + exec(2) + rng},
		{"pyroscope-render-diff", "/pyroscope/render-diff?leftQuery=" + exec(1) + "&rightQuery=" + exec(2) + "&leftFrom=" + strconv.FormatInt(start, 10) + "&leftUntil=" + strconv.FormatInt(end, 10) + "&rightFrom=" + strconv.FormatInt(start, 10) + "&rightUntil=" + strconv.FormatInt(end, 10)},
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
					servers[cache].ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
				}
				if w.Code != 200 || w.Body.Len() < 100 {
					b.Fatalf("%s: %d: %.300s", c.path, w.Code, w.Body)
				}
				b.ReportMetric(float64(w.Body.Len()), "answer-bytes")
			})
		}
	}
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
				serveJSON(b, servers["uncached"], c.path, &got)
			}
			if len(got) == 0 || c.want > 0 && len(got) != c.want {
				b.Fatalf("%s: %d values, want %d", c.path, len(got), c.want)
			}
		})
	}
	// The Applications page: the analysed apps, and the app ids of the
	// samples (app-bench, known from its profiles alone here).
	b.Run("apps/uncached", func(b *testing.B) {
		var apps []AppSummary
		for b.Loop() {
			apps = nil
			serveJSON(b, servers["uncached"], "/api/v1/apps", &apps)
		}
		if len(apps) != 1 || apps[0].ID != "app-bench" || apps[0].Status != "profiles" {
			b.Fatalf("apps %+v, want app-bench from its profiles", apps)
		}
	})
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
				connectCall(b, servers[cache], "ProfileTypes", &querierv1.ProfileTypesRequest{Start: start / 1e6, End: end / 1e6}, &res)
			}
			if len(res.ProfileTypes) == 0 {
				b.Fatal("no profile types")
			}
		})
		b.Run("grafana-series/"+cache, func(b *testing.B) {
			var res querierv1.SeriesResponse
			req := &querierv1.SeriesRequest{LabelNames: []string{"service_name", "__profile_type__"}, Start: start / 1e6, End: end / 1e6}
			for b.Loop() {
				connectCall(b, servers[cache], "Series", req, &res)
			}
			if len(res.LabelsSet) == 0 {
				b.Fatal("no series")
			}
		})
		b.Run("grafana-series-by-executor/"+cache, func(b *testing.B) {
			var res querierv1.SelectSeriesResponse
			req := &querierv1.SelectSeriesRequest{ProfileTypeID: profileTypeID(profile.TypeCPU), LabelSelector: `{spark_app_id="app-bench"}`,
				Start: start / 1e6, End: end / 1e6, Step: 18, GroupBy: []string{profile.LabelExecutorID}}
			for b.Loop() {
				connectCall(b, servers[cache], "SelectSeries", req, &res)
			}
			var total float64
			for _, sr := range res.Series {
				for _, pt := range sr.Points {
					total += pt.Value
				}
			}
			if len(res.Series) != benchExecutors || int64(total) != want["whole-app"] {
				b.Fatalf("%d series, %.0f cpu ns; want %d and %d", len(res.Series), total, benchExecutors, want["whole-app"])
			}
		})
		b.Run("grafana-whole-app/"+cache, func(b *testing.B) {
			var res querierv1.SelectMergeStacktracesResponse
			req := &querierv1.SelectMergeStacktracesRequest{ProfileTypeID: profileTypeID(profile.TypeCPU), LabelSelector: `{spark_app_id="app-bench"}`, Start: start / 1e6, End: end / 1e6}
			for b.Loop() {
				connectCall(b, servers[cache], "SelectMergeStacktraces", req, &res)
			}
			if res.Flamegraph.Total != want["whole-app"] {
				b.Fatalf("%d cpu ticks, the uploads hold %d", res.Flamegraph.Total, want["whole-app"])
			}
		})
	}
	b.Logf("after the queries: heap %d MiB; warm store %+v", heapMiB(), warm.Stats())
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
		for e := range benchExecutors {
			if err := db.Append("", benchUpload(base, start, e, w, windows)); err != nil {
				b.Fatal(err)
			}
		}
	}
	st := db.Stats()
	b.Logf("%d uploads: %d in the head (%d MiB estimated), %d in %d blocks", windows*benchExecutors, st.HeadUploads, st.HeadBytes>>20, st.BlockUploads, st.Blocks)
	s := New(Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
		if len(got.Series) != benchExecutors {
			b.Fatalf("%d series, want %d", len(got.Series), benchExecutors)
		}
	})
	st = db.Stats()
	b.Logf("after the queries: %d in the head (%d MiB estimated, its uploads' rollups included)", st.HeadUploads, st.HeadBytes>>20)
}
