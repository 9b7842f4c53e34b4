// Package corpus locates the shared corpus of real test files
// (../shared/testdata beside the repository root) for tests and benchmarks.
package corpus

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvDir overrides the corpus location.
const EnvDir = "SPARKPROF_TESTDATA"

// Dir returns the corpus directory. It fails the test when the corpus is
// missing: the real files are the judge, so tests never silently skip them.
func Dir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, "..", "shared", "testdata")
			if _, err := os.Stat(dir); err != nil {
				tb.Fatalf("corpus not found at %s (set %s): %v", dir, EnvDir, err)
			}
			return dir
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("corpus: no go.mod above %s (set %s)", wd, EnvDir)
		}
	}
}

// Path returns the path of a corpus file given relative to the corpus root.
func Path(tb testing.TB, rel ...string) string {
	tb.Helper()
	return filepath.Join(append([]string{Dir(tb)}, rel...)...)
}

// Read returns a corpus file's contents, gunzipped when its name ends in .gz.
func Read(tb testing.TB, rel ...string) []byte {
	tb.Helper()
	p := Path(tb, rel...)
	data, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if !strings.HasSuffix(p, ".gz") {
		return data
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		tb.Fatalf("%s: %v", p, err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatalf("%s: %v", p, err)
	}
	return out
}
