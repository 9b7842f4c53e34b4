// Package repo finds the repository's root, where the test tools built
// under build/ and the pinned versions under tools/ are.
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root is the directory of the go.mod above the working directory.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
