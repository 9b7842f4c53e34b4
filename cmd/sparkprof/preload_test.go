package main

import (
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/server"
	"github.com/sparkprof/sparkprof/store"
)

// TestPreloadOnce preloads the sample data, compacts it as a server left
// running would, and preloads again, as `make demo` does at every start:
// no profile is stored twice.
func TestPreloadOnce(t *testing.T) {
	// One partition for all: the block then holds profiles of several
	// sources.
	db, err := store.Open(t.TempDir(), store.Options{Partition: 100 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := newServer(t, server.Config{Store: db})
	dir := corpus.Dir(t)
	if _, err := preloadDir(srv, db, dir); err != nil {
		t.Fatal(err)
	}
	first := db.Stats().HeadUploads
	if first == 0 {
		t.Fatal("nothing preloaded")
	}
	// dump1's LabelsSnapshot, beside it in the corpus, labels its samples.
	labelled := 0
	db.Select("", store.Query{}, func(u *store.Upload) error {
		if p := u.Profile; p != nil && p.Source == "jfr/dump1.jfr.gz" {
			for _, s := range p.Samples {
				if p.Label(s, profile.LabelThreadName) != "" {
					labelled++
				}
			}
		}
		return nil
	})
	if labelled == 0 {
		t.Error("no sample of dump1 got a label from the snapshot beside it")
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if _, err := preloadDir(srv, db, dir); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.HeadUploads != 0 || st.BlockUploads != first {
		t.Errorf("after compaction and a second preload: %+v; want the %d first uploads in blocks and none new", st, first)
	}
}
