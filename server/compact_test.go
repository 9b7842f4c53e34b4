package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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
	c := &compactionCase{t: t, handler: newServer(t, Config{Store: db, Logger: logger}), queries: compactionRenders(sec), others: compactionOthers(sec)}
	before := c.answers()
	if m := c.get("/metrics"); !strings.Contains(m, "\nsparkprof_store_head_uploads 18\n") || !strings.Contains(m, "\nsparkprof_store_blocks 0\n") {
		t.Errorf("metrics before compaction:\n%s", m)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	after := c.answers()
	// Compaction left the new block's rollup cached. The queries read its
	// samples once, and the series its timeline; with one-minute blocks,
	// those whose range cuts the block read the tables of its samples and
	// the time slices they need (a slice's samples when they cut it, its
	// rollup when they cover it and can use one, its timeline for a
	// series). A ten-minute block of this minute is not sliced: its
	// samples are all in the first slice.
	misses := map[time.Duration][2]int{0: {2, 3}, time.Minute: {20, 21}}[span]
	c.metrics("sparkprof_store_head_uploads 0", "sparkprof_store_blocks 1", "sparkprof_store_block_uploads 18",
		"sparkprof_store_compactions_total 1", "sparkprof_store_compaction_errors_total 0", fmt.Sprint("sparkprof_store_cache_misses_total ", misses[0]))
	if m := c.get("/metrics"); !regexp.MustCompile(`\nsparkprof_store_compaction_seconds_total [0-9.e-]+\n`).MatchString(m) || strings.Contains(m, "compaction_seconds_total 0\n") {
		t.Errorf("metrics lack the time compaction took:\n%s", m)
	}
	// After a restart the block is read from disk: its rollup and samples
	// once each (label queries answer from the block's meta).
	db.Close()
	if db, err = store.Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	c.handler = newServer(t, Config{Store: db, Logger: logger})
	c.labelQueries(before, sec)
	reopened := c.answers()
	c.metrics("sparkprof_store_blocks 1", fmt.Sprint("sparkprof_store_cache_misses_total ", misses[1]))
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("%s: the answer changed with compaction:\nbefore %.300s\nafter  %.300s", c.path(i), before[i], after[i])
		}
		if before[i] != reopened[i] {
			t.Errorf("%s: the answer changed with compaction and a restart:\nbefore %.300s\nafter  %.300s", c.path(i), before[i], reopened[i])
		}
	}
}

// compactionRenders are the flame graphs TestCompactionKeepsAnswers asks
// for before and after compaction: sec gives the time s seconds into the
// uploads.
func compactionRenders(sec func(s int) string) []url.Values {
	return []url.Values{
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
}

// compactionOthers are the other endpoints TestCompactionKeepsAnswers
// asks: they read the block's samples, and their answers stay too. The
// fourth and fifth are label queries.
func compactionOthers(sec func(s int) string) []string {
	return []string{
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
}

// compactionCase asks a server the queries of TestCompactionKeepsAnswers.
type compactionCase struct {
	t       *testing.T
	handler http.Handler
	queries []url.Values
	others  []string
}

// get answers path, failing the test unless it answers 200 with a body.
func (c *compactionCase) get(path string) string {
	w := httptest.NewRecorder()
	c.handler.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	if w.Code != 200 || w.Body.Len() < 10 {
		c.t.Fatalf("%s: %d %s", path, w.Code, w.Body)
	}
	return w.Body.String()
}

// path is the request of answer i of answers.
func (c *compactionCase) path(i int) string {
	if i < len(c.queries) {
		return "/api/v1/render?" + c.queries[i].Encode()
	}
	return c.others[i-len(c.queries)]
}

// answers asks every query: the flame graphs of the renders, then the
// whole answers of the others.
func (c *compactionCase) answers() []string {
	var out []string
	for _, q := range c.queries {
		var r renderResponse
		if err := json.Unmarshal([]byte(c.get("/api/v1/render?"+q.Encode())), &r); err != nil {
			c.t.Fatalf("%v: %v", q, err)
		}
		if r.Flamebearer.NumTicks == 0 {
			c.t.Fatalf("%v selects nothing", q)
		}
		fb, _ := json.Marshal(r.Flamebearer)
		out = append(out, string(fb))
	}
	for _, path := range c.others {
		out = append(out, c.get(path))
	}
	return out
}

// metrics checks that /metrics has each of the lines want.
func (c *compactionCase) metrics(want ...string) {
	c.t.Helper()
	m := c.get("/metrics")
	for _, w := range want {
		if !strings.Contains(m, "\n"+w+"\n") {
			c.t.Errorf("metrics lack %q:\n%s", w, m)
		}
	}
}

// labelQueries checks, on a server that has just reopened its store, that
// label queries answer from the block's meta as before (the answers of
// before), that a time range bounds them and that a bad one is a 400.
func (c *compactionCase) labelQueries(before []string, sec func(s int) string) {
	t := c.t
	labels, stages := c.get("/api/v1/labels"), c.get("/api/v1/label-values?label=spark_stage_id")
	c.metrics("sparkprof_store_cache_misses_total 0") // answered from the block's meta
	if n := len(c.queries); labels != before[n+3] || stages != before[n+4] {
		t.Errorf("label queries from the block's meta: %s, %s; want %s, %s", labels, stages, before[n+3], before[n+4])
	}
	w := httptest.NewRecorder()
	c.handler.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/label-values?label=spark_stage_id&from="+sec(7200)+"&until="+sec(7300), nil))
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("stage values two hours after the data: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	c.handler.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/labels?from=yesterday", nil))
	if w.Code != 400 || !strings.Contains(w.Body.String(), "from") {
		t.Errorf("labels from=yesterday: %d %s", w.Code, w.Body)
	}
}
