package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// historyApp is an application of the History Server's applications
// answer, with the fields of its attempts sparkprof's list also has.
type historyApp struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Attempts []struct {
		AttemptID       string `json:"attemptId"`
		StartTimeEpoch  int64  `json:"startTimeEpoch"`
		EndTimeEpoch    int64  `json:"endTimeEpoch"`
		Duration        int64  `json:"duration"`
		SparkUser       string `json:"sparkUser"`
		AppSparkVersion string `json:"appSparkVersion"`
		Completed       bool   `json:"completed"`
	} `json:"attempts"`
}

// appRow is a row of /api/v1/apps, or one of its attempts.
type appRow struct {
	ID           string   `json:"id"`
	AttemptID    string   `json:"attemptId"`
	Name         string   `json:"name"`
	User         string   `json:"user"`
	SparkVersion string   `json:"sparkVersion"`
	StartMs      int64    `json:"startMs"`
	EndMs        int64    `json:"endMs"`
	DurationMs   int64    `json:"durationMs"`
	Status       string   `json:"status"`
	Attempts     []appRow `json:"attempts"`
}

// TestPreloadAttempts preloads a History Server directory holding both
// attempts of one application into a running server: its app list has the
// app once, with both attempts as the History Server's applications list
// them (its golden answer over the same logs), and each attempt's page is
// its own.
func TestPreloadAttempts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const id = "local-1430917381535"
	logs := t.TempDir()
	for _, name := range []string{id + "_1", id + "_2"} {
		if err := os.WriteFile(filepath.Join(logs, name), corpus.Read(t, "eventlogs", "apache", name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := serveUntilEnd(t, t.TempDir(), "--preload", logs)

	var golden []historyApp
	if err := json.Unmarshal(corpus.Read(t, "eventlogs", "golden", "apache", "application_list_json_expectation.json"), &golden); err != nil {
		t.Fatal(err)
	}
	var want *historyApp
	for i := range golden {
		if golden[i].ID == id {
			want = &golden[i]
		}
	}
	if want == nil || len(want.Attempts) != 2 {
		t.Fatalf("the History Server's golden list has no two attempts of %s", id)
	}

	var rows []appRow
	getJSON(t, base+"/api/v1/apps", &rows)
	if len(rows) != 1 {
		t.Fatalf("%d apps listed, want one, %s with its attempts: %+v", len(rows), id, rows)
	}
	row := rows[0]
	if row.ID != id || row.Name != want.Name || len(row.Attempts) != len(want.Attempts) {
		t.Fatalf("app %s %q with %d attempts; want %s %q with %d, as the History Server lists it", row.ID, row.Name, len(row.Attempts), id, want.Name, len(want.Attempts))
	}
	if row.AttemptID != want.Attempts[0].AttemptID {
		t.Errorf("the row tells attempt %q; want the latest, %q", row.AttemptID, want.Attempts[0].AttemptID)
	}
	for i, w := range want.Attempts {
		got := row.Attempts[i]
		status := map[bool]string{true: "finished", false: "running"}[w.Completed]
		if got.AttemptID != w.AttemptID || got.StartMs != w.StartTimeEpoch || got.EndMs != w.EndTimeEpoch || got.DurationMs != w.Duration ||
			got.User != w.SparkUser || got.SparkVersion != w.AppSparkVersion || got.Status != status {
			t.Errorf("attempt %d: %+v; want the History Server's %+v", i, got, w)
		}

		var page struct{ App appRow }
		getJSON(t, base+"/api/v1/apps/"+id+"?tasks=none&appAttempt="+w.AttemptID, &page)
		if page.App.AttemptID != w.AttemptID || page.App.DurationMs != w.Duration {
			t.Errorf("the page of attempt %s tells attempt %q of %d ms; want %d ms", w.AttemptID, page.App.AttemptID, page.App.DurationMs, w.Duration)
		}
	}
	var latest struct{ App appRow }
	getJSON(t, base+"/api/v1/apps/"+id+"?tasks=none", &latest)
	if latest.App.AttemptID != want.Attempts[0].AttemptID {
		t.Errorf("the app's page tells attempt %q; want the latest, %q", latest.App.AttemptID, want.Attempts[0].AttemptID)
	}
	// Every page of an app takes the attempt; one that no log has is
	// named, with those there are.
	for _, path := range []string{"/api/v1/apps/" + id, "/api/v1/apps/" + id + "/stages/0", "/api/v1/apps/" + id + "/stages/0/tasks", "/apps/" + id + "/report"} {
		resp, err := http.Get(base + path + "?appAttempt=3")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `its attempts are \"2\", \"1\"`) {
			t.Errorf("%s of attempt 3, which no log has: %s %s; want 404 naming attempts 2 and 1", path, resp.Status, body)
		}
	}
}

// getJSON decodes the JSON answer of a GET of url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
