package appstore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/spark"
)

// An event log added is analysed, kept on disk and analysed again when the
// store opens its directory anew; one that is not an event log is refused
// and leaves nothing behind.
func TestAddEventLog(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	log := corpus.Read(t, "eventlogs", "apache", "local-1642039451826")
	rep, err := s.AddEventLog("team-a", "spark-events/local-1642039451826", bytes.NewReader(log), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.App.ID != "local-1642039451826" || len(rep.Tasks) == 0 || rep.Sources[0].Path != "local-1642039451826" {
		t.Fatalf("report of %s with %d tasks from %v", rep.App.ID, len(rep.Tasks), rep.Sources)
	}
	if _, err := s.AddEventLog("team-a", "notes.txt", strings.NewReader("not an event log\n"), nil); err == nil {
		t.Error("a text file was taken for an event log")
	}
	if got := s.Reports("team-a"); len(got) != 1 || s.Report("", rep.App.ID) != nil {
		t.Errorf("team-a has %d apps, the default tenant %v; want one app, of team-a only", len(got), s.Report("", rep.App.ID))
	}
	reopened, err := Open(dir, analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if r := reopened.Report("team-a", rep.App.ID); r == nil || len(r.Tasks) != len(rep.Tasks) {
		t.Errorf("after reopening: %v, want the app with its %d tasks", r, len(rep.Tasks))
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("Close removed the directory it was given: %v", err)
	}
}

// A store opened without a directory keeps its files in one of its own,
// which Close removes.
func TestOpenTemporary(t *testing.T) {
	s, err := Open("", analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEventLog("", "app", bytes.NewReader(corpus.Read(t, "eventlogs", "apache", "local-1642039451826")), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("the temporary directory %s is still there after Close: %v", filepath.Base(s.dir), err)
	}
}

// An app put from elsewhere has its task model: its tasks by id (the
// latest attempt of an id) and each stage's window.
func TestPutTaskModel(t *testing.T) {
	s, err := Open(t.TempDir(), analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	tasks := []*spark.Task{
		{ID: 1, StageID: 2, LaunchMs: 10_000, FinishMs: 12_000},
		{ID: 1, StageID: 2, LaunchMs: 13_000, FinishMs: 14_000}, // a later attempt of the id
		{ID: 2, StageID: 2, LaunchMs: 11_000, FinishMs: 15_000},
	}
	s.Put("", &analysis.Report{App: spark.Summary{ID: "app-1"}, Tasks: tasks})
	if got := s.Tasks("", "app-1", "")[1]; got != tasks[1] {
		t.Errorf("task 1 is %+v, want its later attempt", got)
	}
	ms := int64(time.Millisecond)
	from, until, ok := s.StageWindow("", "app-1", 2)
	if !ok || from != 11_000*ms-attribution.WindowSlack || until != 15_000*ms+attribution.WindowSlack+1 {
		t.Errorf("stage 2's window %d–%d (%v)", from, until, ok)
	}
	if _, _, ok := s.StageWindow("", "app-1", 3); ok {
		t.Error("a stage without tasks has a window")
	}
	if s.Tasks("other", "app-1", "") != nil {
		t.Error("another tenant sees the app")
	}

	// A later attempt: its own tasks, the stage's window spanning both.
	later := []*spark.Task{{ID: 1, StageID: 2, LaunchMs: 50_000, FinishMs: 52_000}}
	s.Put("", &analysis.Report{App: spark.Summary{ID: "app-1", AttemptID: "2", StartMs: 49_000}, Tasks: later})
	if got := s.Tasks("", "app-1", "2")[1]; got != later[0] {
		t.Errorf("attempt 2's task 1 is %+v", got)
	}
	if got := s.Tasks("", "app-1", "")[1]; got != later[0] {
		t.Errorf("the latest attempt's task 1 is %+v, want attempt 2's", got)
	}
	if got := s.Tasks("", "app-1", "9")[1]; got != later[0] {
		t.Errorf("an attempt not known gives task 1 %+v, want the latest attempt's", got)
	}
	from, until, ok = s.StageWindow("", "app-1", 2)
	if !ok || from != 11_000*ms-attribution.WindowSlack || until != 52_000*ms+attribution.WindowSlack+1 {
		t.Errorf("stage 2's window over both attempts %d–%d (%v)", from, until, ok)
	}
}

// The attempts of one app are kept apart, also when the store opens its
// directory anew: the app's id alone names the latest attempt.
func TestAttemptsApart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	const id = "local-1430917381535"
	for _, name := range []string{id + "_2", id + "_1"} {
		if _, err := s.AddEventLog("", name, bytes.NewReader(corpus.Read(t, "eventlogs", "apache", name)), nil); err != nil {
			t.Fatal(err)
		}
	}
	reopened, err := Open(dir, analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, reopened} {
		var order []string
		for _, r := range st.Attempts("", id) {
			order = append(order, r.App.AttemptID)
		}
		if strings.Join(order, ",") != "2,1" || len(st.Reports("")) != 2 {
			t.Errorf("attempts %v of %d reports; want 2,1 of 2", order, len(st.Reports("")))
		}
		if r := st.Report("", id); r == nil || r.App.AttemptID != "2" {
			t.Errorf("the app's report is %v; want attempt 2's, the latest", r)
		}
		for _, c := range []struct {
			attempt  string
			duration int64
		}{{"1", 10}, {"2", 57}} {
			if r := st.Attempt("", id, c.attempt); r == nil || r.App.DurationMs != c.duration {
				t.Errorf("attempt %s: %v; want %d ms", c.attempt, r, c.duration)
			}
		}
		if r := st.Attempt("", id, "3"); r != nil {
			t.Errorf("attempt 3, which no log has: %v", r.App)
		}
	}
}
