package laketest

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

// topOfStage reads the example query of docs/storage-format.md ("top
// functions of one stage"), between the markers that surround it there,
// so that the test runs the query the docs show.
func topOfStage(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "storage-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- top-of-stage -->\n```sql\n", "```\n<!-- /top-of-stage -->"
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("docs/storage-format.md: no query between %q and %q", begin, end)
	}
	return s[i+len(begin) : j]
}

// funcStat is a row of a top table.
type funcStat struct {
	Name        string
	Self, Total int64
}

// TestDuckDBTopOfStage writes blocks of a synthetic Spark app, runs the
// documented query in DuckDB over their Parquet files for each of two
// stages, and checks that its ten top functions are those /api/v1/top
// answers for the stage, with the same self and total values.
func TestDuckDBTopOfStage(t *testing.T) {
	if os.Getenv(corpus.EnvDir) == "" {
		// The corpus is beside the repository's root, not this module's.
		root, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "testdata"))
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(corpus.EnvDir, root)
	}
	dir := t.TempDir()
	db, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := synth.Base(t)
	const windows = 6
	for exec := range 3 {
		for w := range windows {
			if err := db.Append("", synth.Upload(base, synth.Start, exec, w, windows)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	samples, _ := filepath.Glob(filepath.Join(dir, "*", "*.samples.parquet"))
	if len(samples) == 0 {
		t.Fatal("the store wrote no Parquet samples file")
	}
	srv := server.New(server.Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	duck, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	query := topOfStage(t)
	query = strings.ReplaceAll(query, "'blocks/", "'"+filepath.ToSlash(filepath.Join(dir, "*"))+"/")
	for _, stage := range []int{1, 3} {
		want, typ := engineTop(t, ts.URL, stage)
		if len(want) != 10 {
			t.Fatalf("stage %d: /api/v1/top listed %d functions, want 10", stage, len(want))
		}
		q := strings.ReplaceAll(query, "stage = 3", "stage = "+strconv.Itoa(stage))
		q = strings.ReplaceAll(q, "type = 'cpu'", "type = '"+typ+"'")
		rows, err := duck.Query(q)
		if err != nil {
			t.Fatalf("DuckDB: %v\n%s", err, q)
		}
		var got []funcStat
		for rows.Next() {
			var f funcStat
			if err := rows.Scan(&f.Name, &f.Self, &f.Total); err != nil {
				t.Fatal(err)
			}
			got = append(got, f)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		t.Logf("stage %d: %d functions, the first %v", stage, len(got), got[0])
		if !slices.Equal(got, want) {
			t.Errorf("stage %d: DuckDB's top 10:\n%v\n/api/v1/top's:\n%v", stage, got, want)
		}
	}
	labelColumns(t, duck, filepath.ToSlash(filepath.Join(dir, "*", "*.samples.parquet")))
}

// labelColumns checks in DuckDB that the samples files at glob, of
// synth.Upload's uploads, have each executor's host in the host column
// and not in the labels map.
func labelColumns(t *testing.T, duck *sql.DB, glob string) {
	t.Helper()
	rows, err := duck.Query(`SELECT executor, host, count(*), count(*) FILTER (WHERE list_contains(map_keys(labels), 'host'))
		FROM read_parquet('` + glob + `') GROUP BY ALL ORDER BY executor`)
	if err != nil {
		t.Fatalf("DuckDB: %v", err)
	}
	defer rows.Close()
	var execs []string
	for rows.Next() {
		var exec, host string
		var n, inMap int64
		if err := rows.Scan(&exec, &host, &n, &inMap); err != nil {
			t.Fatal(err)
		}
		execs = append(execs, exec)
		e, _ := strconv.Atoi(exec)
		if want := fmt.Sprintf("node-%02d", e%20); host != want || inMap != 0 {
			t.Errorf("executor %s: host %q on %d rows, %d of them with host in labels; want %q and none", exec, host, n, inMap, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(execs, []string{"0", "1", "2"}) {
		t.Errorf("executors %v in the samples files, want 0, 1 and 2", execs)
	}
}

// engineTop asks the server at base for the ten top functions of stage,
// over all time, and returns them and the sample type they are of.
func engineTop(t *testing.T, base string, stage int) ([]funcStat, string) {
	t.Helper()
	v := url.Values{"query": {fmt.Sprintf(`{spark_stage_id="%d"}`, stage)}, "type": {"cpu"}, "n": {"10"},
		"from": {strconv.FormatInt(synth.Start/1e9-60, 10)}, "until": {strconv.FormatInt(synth.Start/1e9+3600, 10)}}
	resp, err := http.Get(base + "/api/v1/top?" + v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Type struct {
			Name string `json:"name"`
		} `json:"type"`
		Functions []funcStat `json:"functions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/api/v1/top: %d, %v", resp.StatusCode, err)
	}
	return got.Functions, got.Type.Name
}
