package appstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/store"
)

// Skipped is a file or directory of the store's directory that Open did
// not load: one that cannot be analysed, or that the store does not know.
// It is left as it was.
type Skipped struct {
	Path string // relative to the store's directory
	Err  error  // why
}

// Skipped returns what Open did not load, in the order of the directory.
func (s *Store) Skipped() []Skipped { return slices.Clone(s.skipped) }

// load analyses every event log and bundle saved under the store's
// directory, after removing the temporary files of imports a stop cut
// short. What cannot be loaded is skipped, never a reason to stop: the
// error is that of a store directory that cannot be read.
func (s *Store) load() error {
	if err := os.RemoveAll(filepath.Join(s.dir, tmpDir)); err != nil {
		s.skip(tmpDir, fmt.Errorf("removing the temporary files: %w", err))
	}
	tenants, err := os.ReadDir(s.dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, t := range tenants {
		if t.Name() == tmpDir {
			continue
		}
		tenant, err := store.TenantName(t.Name())
		if err != nil || !t.IsDir() {
			s.skip(t.Name(), errors.New("not a tenant's directory"))
			continue
		}
		s.loadTenant(tenant, t.Name())
	}
	return nil
}

// loadTenant loads the event logs and bundles of tenant, whose directory
// is named dir.
func (s *Store) loadTenant(tenant, dir string) {
	entries, err := os.ReadDir(filepath.Join(s.dir, dir))
	if err != nil {
		s.skip(dir, err)
	}
	for _, e := range entries {
		rel := filepath.Join(dir, e.Name())
		path := filepath.Join(s.dir, rel)
		var err error
		switch {
		case e.IsDir():
			err = s.loadBundle(tenant, path)
		case strings.HasSuffix(e.Name(), tmpSuffix):
			err = os.Remove(path) // an earlier version's temporary file
		default:
			_, err = s.Analyse(tenant, path, nil)
		}
		if err != nil {
			s.skip(rel, err)
		}
	}
}

// loadBundle loads the bundle directory dir of tenant, after removing the
// temporary files earlier versions left in it, and the directory if they
// were all it held.
func (s *Store) loadBundle(tenant, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	paths, err := bundleFiles(dir)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		// An import cut short (or refused, by earlier versions) left it:
		// an empty directory is no app.
		return os.Remove(dir)
	}
	bundle := strings.TrimPrefix(filepath.Base(dir), bundleDirPrefix)
	r, err := s.analyse(paths, bundle, nil)
	if err != nil {
		return err
	}
	s.put(tenant, r, bundle)
	return nil
}

// skip notes that the entry at rel, relative to the store's directory, was
// not loaded, and why.
func (s *Store) skip(rel string, err error) {
	s.skipped = append(s.skipped, Skipped{Path: rel, Err: err})
}
