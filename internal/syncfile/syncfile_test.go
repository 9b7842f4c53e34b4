package syncfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing")
	if err := os.WriteFile(existing, []byte("an older and longer content"), 0o644); err != nil {
		t.Fatal(err)
	}
	cut := errors.New("connection reset")
	tests := []struct {
		name    string
		path    string
		data    io.Reader
		want    string // the file's content after a successful write
		wantErr error  // the error a failed write wraps
	}{
		{name: "new file", path: filepath.Join(dir, "new"), data: strings.NewReader("hello"), want: "hello"},
		{name: "empty", path: filepath.Join(dir, "empty"), data: bytes.NewReader(nil), want: ""},
		{name: "replaces", path: existing, data: strings.NewReader("new"), want: "new"},
		{name: "no directory", path: filepath.Join(dir, "missing", "f"), data: strings.NewReader("x"), wantErr: os.ErrNotExist},
		{name: "reader fails", path: filepath.Join(dir, "cut"), data: io.MultiReader(strings.NewReader("part"), iotest.ErrReader(cut)), wantErr: cut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(tt.path, tt.data)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Write = %v, want an error wrapping %v", err, tt.wantErr)
				}
				// The file's name, not its directory: a server's error
				// answers do not show where it keeps its data.
				if !strings.Contains(err.Error(), filepath.Base(tt.path)) || strings.Contains(err.Error(), dir) && tt.name == "reader fails" {
					t.Errorf("error %q: want it to name %s, without its directory", err, filepath.Base(tt.path))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("file holds %q, want %q", got, tt.want)
			}
		})
	}
}
