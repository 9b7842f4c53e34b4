package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeOutput writes what fn produces to path, or to stdout when path is
// empty or "-". A file appears only complete: fn writes a temporary file
// beside it that is renamed into place on success.
func writeOutput(e *env, path string, fn func(w io.Writer) error) error {
	if path == "" || path == "-" {
		return fn(e.stdout)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("create output: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
