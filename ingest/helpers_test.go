package ingest

import (
	"io"
	"log/slog"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"

	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/internal/synth"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// newTestPipeline returns a pipeline into a new store and app store, all
// closed when t ends.
func newTestPipeline(t *testing.T) (*Pipeline, *store.DB, *appstore.Store) {
	t.Helper()
	db, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	apps, err := appstore.Open(t.TempDir(), analysis.DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(); apps.Close() })
	return New(Config{Store: db, Apps: apps, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}), db, apps
}

// countUploads returns how many uploads of the default tenant db holds.
func countUploads(t *testing.T, db store.Store) int {
	t.Helper()
	n := 0
	if err := db.Select("", store.Query{}, func(*store.Upload) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// storedTotal sums the values of the samples of type family typ that db
// holds of app's executor exec.
func storedTotal(t *testing.T, db store.Store, app, exec, typ string) int64 {
	t.Helper()
	var total int64
	err := db.Select("", store.Query{}, func(u *store.Upload) error {
		p, err := u.Load()
		if err != nil {
			return err
		}
		for _, s := range p.Samples {
			if p.Types[s.Type].Family() == typ && p.Label(s, profile.LabelAppID) == app && p.Label(s, profile.LabelExecutorID) == exec {
				total += s.Value
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// offlineTotal is synth.DecodedTotal.
func offlineTotal(t *testing.T, data []byte, labels []byte, typ string) int64 {
	t.Helper()
	return synth.DecodedTotal(t, data, labels, typ)
}
