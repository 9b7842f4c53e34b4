// Package atomicfile writes files that a crash leaves either whole or
// absent.
package atomicfile

import (
	"io"
	"os"
)

// WriteSynced copies r to a new file at path and syncs it to disk before
// it returns; the caller renames it into place.
func WriteSynced(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
