package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/store"
)

// TestCompactionKeepsAnswers renders the same selections before and after
// the uploads are compacted into a block: whether a query is answered from
// the block's rollup (whole range, no thread or task matcher) or from its
// samples (part of the range, a task, a thread state), the flame graph is
// the one the uploads gave. With one-minute blocks the minute of uploads
// is cut into time slices of six seconds, and a range that cuts the block
// reads the slices it covers from their rollups.
func TestCompactionKeepsAnswers(t *testing.T) {
	for _, span := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprintf("span=%v", span), func(t *testing.T) { testCompactionKeepsAnswers(t, span) })
	}
}

func testCompactionKeepsAnswers(t *testing.T, span time.Duration) {
	base, err := format.Load(corpus.Path(t, "jfr", "dump2.jfr.gz"), format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := store.Options{Partition: span}
	db, err := store.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	handler := newServer(t, Config{Store: db, Logger: logger})
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	const windows, execs = 6, 3
	for w := range windows {
		for e := range execs {
			if err := db.Append("", synth.Upload(base, start, e, w, windows)); err != nil {
				t.Fatal(err)
			}
		}
	}
	sec := func(s int) string { return strconv.FormatInt(start+int64(s)*int64(time.Second), 10) }
	queries := []url.Values{
		{"query": {`{spark_app_id="app-bench"}`}},
		{"query": {`{spark_app_id="app-bench"}`}, "type": {"wall"}},
		{"query": {`{spark_stage_id="5"}`}, "from": {sec(0)}, "until": {sec(3600)}},
		{"query": {`{spark_executor_id="1"}`}, "type": {"alloc"}},
		{"query": {`{spark_app_id="app-bench"}`}, "from": {sec(15)}, "until": {sec(42)}},
		{"query": {`{spark_task_id="7"}`}, "type": {"wall"}},
		{"query": {`{spark_app_id="app-bench"}`}, "type": {"wall"}, "state": {"SLEEPING"}},
		{"query": {`{spark_executor_id="2"}`}, "type": {"wall"}, "state": {"SLEEPING"}, "from": {sec(15)}, "until": {sec(42)}},
		{"query": {`{spark_stage_id="1"}`}, "type": {"wall"}, "from": {sec(7)}, "until": {sec(53)}},
		{"query": {`{spark_app_id="app-bench"}`}, "type": {"wall"}, "from": {sec(17)}, "until": {sec(31)}},
	}
	// Other endpoints read the block's samples; their answers stay too.
	others := []string{
		"/api/v1/top?query=" + url.QueryEscape(`{spark_app_id="app-bench"}`) + "&type=wall",
		"/api/v1/breakdown?by=state,spark_stage_id&query=" + url.QueryEscape(`{spark_executor_id="2"}`) + "&type=wall",
		"/api/v1/series?by=spark_executor_id&step=10s&query=" + url.QueryEscape(`{spark_app_id="app-bench"}`) + "&type=wall",
		"/api/v1/labels",
		"/api/v1/label-values?label=spark_stage_id",
		"/api/v1/label-values?name=spark_task_id&query=" + url.QueryEscape(`{spark_stage_id="1",spark_executor_id="2"}`),
		"/api/v1/export?format=folded&query=" + url.QueryEscape(`{spark_stage_id="5"}`) + "&type=wall",
		"/api/v1/series?by=spark_stage_id&step=1s&from=" + sec(20) + "&until=" + sec(33) + "&query=" + url.QueryEscape(`{spark_app_id="app-bench"}`) + "&type=wall",
		"/pyroscope/render?groupBy=spark_executor_id&from=" + sec(0) + "&until=" + sec(3600) + "&query=" + url.QueryEscape(`app.wall{spark_app_id="app-bench"}`),
		"/pyroscope/render?from=" + sec(12) + "&until=" + sec(47) + "&query=" + url.QueryEscape(`{spark_stage_id="2"}`),
	}
	get := func(path string) string {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 || w.Body.Len() < 10 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	answers := func() []string {
		var out []string
		for _, q := range queries {
			var r renderResponse
			if err := json.Unmarshal([]byte(get("/api/v1/render?"+q.Encode())), &r); err != nil {
				t.Fatalf("%v: %v", q, err)
			}
			if r.Flamebearer.NumTicks == 0 {
				t.Fatalf("%v selects nothing", q)
			}
			fb, _ := json.Marshal(r.Flamebearer)
			out = append(out, string(fb))
		}
		for _, path := range others {
			out = append(out, get(path))
		}
		return out
	}
	before := answers()
	if m := get("/metrics"); !strings.Contains(m, "\nsparkprof_store_head_uploads 18\n") || !strings.Contains(m, "\nsparkprof_store_blocks 0\n") {
		t.Errorf("metrics before compaction:\n%s", m)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	after := answers()
	metrics := func(want ...string) {
		t.Helper()
		m := get("/metrics")
		for _, w := range want {
			if !strings.Contains(m, "\n"+w+"\n") {
				t.Errorf("metrics lack %q:\n%s", w, m)
			}
		}
	}
	// Compaction left the new block's rollup cached. The queries read its
	// samples once, and the series its timeline; with one-minute blocks,
	// those whose range cuts the block read the tables of its samples and
	// the time slices they need (a slice's samples when they cut it, its
	// rollup when they cover it and can use one, its timeline for a
	// series). A ten-minute block of this minute is not sliced: its
	// samples are all in the first slice.
	misses := map[time.Duration][2]int{0: {2, 3}, time.Minute: {20, 21}}[span]
	metrics("sparkprof_store_head_uploads 0", "sparkprof_store_blocks 1", "sparkprof_store_block_uploads 18",
		"sparkprof_store_compactions_total 1", "sparkprof_store_compaction_errors_total 0", fmt.Sprint("sparkprof_store_cache_misses_total ", misses[0]))
	if m := get("/metrics"); !regexp.MustCompile(`\nsparkprof_store_compaction_seconds_total [0-9.e-]+\n`).MatchString(m) || strings.Contains(m, "compaction_seconds_total 0\n") {
		t.Errorf("metrics lack the time compaction took:\n%s", m)
	}
	// After a restart the block is read from disk: its rollup and samples
	// once each (label queries answer from the block's meta).
	db.Close()
	if db, err = store.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	handler = newServer(t, Config{Store: db, Logger: logger})
	labels, stages := get("/api/v1/labels"), get("/api/v1/label-values?label=spark_stage_id")
	metrics("sparkprof_store_cache_misses_total 0") // answered from the block's meta
	if labels != before[len(queries)+3] || stages != before[len(queries)+4] {
		t.Errorf("label queries from the block's meta: %s, %s; want %s, %s", labels, stages, before[len(queries)+3], before[len(queries)+4])
	}
	// A time range bounds label queries; a bad one is a 400.
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/label-values?label=spark_stage_id&from="+sec(7200)+"&until="+sec(7300), nil))
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("stage values two hours after the data: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	handler.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/labels?from=yesterday", nil))
	if w.Code != 400 || !strings.Contains(w.Body.String(), "from") {
		t.Errorf("labels from=yesterday: %d %s", w.Code, w.Body)
	}
	reopened := answers()
	metrics("sparkprof_store_blocks 1", fmt.Sprint("sparkprof_store_cache_misses_total ", misses[1]))
	for i := range before {
		what := func() string {
			if i < len(queries) {
				return "/api/v1/render?" + queries[i].Encode()
			}
			return others[i-len(queries)]
		}
		if before[i] != after[i] {
			t.Errorf("%s: the answer changed with compaction:\nbefore %.300s\nafter  %.300s", what(), before[i], after[i])
		}
		if before[i] != reopened[i] {
			t.Errorf("%s: the answer changed with compaction and a restart:\nbefore %.300s\nafter  %.300s", what(), before[i], reopened[i])
		}
	}
}
