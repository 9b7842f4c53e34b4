// Package syncfile writes files whose contents are on stable storage once
// written, for a caller that then renames them into place: a crash leaves
// the old file or the whole new one, never a part of it.
package syncfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Write creates the file at path, or truncates the one there, copies data
// into it and syncs it to stable storage before closing it. An error of
// data names the file but not its directory, which a server's answers
// keep to themselves.
func Write(path string, data io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err = io.Copy(f, data); err != nil {
		err = fmt.Errorf("copy to %s: %w", filepath.Base(path), err)
	} else {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Dir makes a directory's entries durable: a file created, renamed or
// removed in it stays so after a crash.
func Dir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !strings.Contains(err.Error(), "invalid argument") {
		return err
	}
	return nil
}
