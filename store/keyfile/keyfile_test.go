package keyfile

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeyFile appends keys to a new file and to an existing one, reads
// them back, reads a file a crash cut within a line, and rewrites it
// whole.
func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	if f, err := Read(dir); err != nil || f.Lines != 0 || f.Torn {
		t.Fatalf("no file: %+v, %v; want an empty one", f, err)
	}
	a, b := Entry{Key: "a", ID: 1, Received: 10}, Entry{Key: "b", ID: 2, Received: 20}
	if err := Append(dir, []Entry{a}, true); err != nil {
		t.Fatal(err)
	}
	if err := Append(dir, []Entry{b}, false); err != nil {
		t.Fatal(err)
	}
	f, err := Read(dir)
	if err != nil || !slices.Equal(f.Entries, []Entry{a, b}) || f.Lines != 2 || f.Bad != 0 || f.Torn {
		t.Fatalf("read %+v, %v; want a and b on two whole lines", f, err)
	}
	path := filepath.Join(dir, Name)
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(data, `{"Key":"c","I`...), 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := Read(dir); err != nil || len(f.Entries) != 2 || f.Bad != 1 || !f.Torn {
		t.Fatalf("torn file: %+v, %v; want a and b, one bad line, torn", f, err)
	}
	if err := Rewrite(dir, []Entry{b}); err != nil {
		t.Fatal(err)
	}
	if f, err := Read(dir); err != nil || !slices.Equal(f.Entries, []Entry{b}) || f.Torn || f.Bad != 0 {
		t.Fatalf("rewritten: %+v, %v; want b alone", f, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
}
