// Package keyfile is the format of a tenant's upload-key file, which keeps
// the keys of the uploads stored within the key window past compaction,
// which deletes the log segments that held them: JSON lines, each
// compaction appending its uploads' keys, rewritten without the keys past
// the window once they are most of it (docs/storage-format.md, "Upload
// keys"). Keeping the keys in the blocks instead would make every restart
// read each block's keys, however old.
package keyfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sparkprof/sparkprof/internal/syncfile"
)

// Name names the file in a tenant's directory.
const Name = "keys.json"

// Entry is an upload key in the file.
type Entry struct {
	Key      string
	ID       uint64
	Received int64 // Unix ns
}

// File is what Read found in a tenant's key file.
type File struct {
	Entries []Entry
	// Lines counts the file's lines, Bad those that did not decode (a
	// crash during an append); Torn says that it ends in a line cut by a
	// crash, which the next append would extend.
	Lines, Bad int
	Torn       bool
}

// Read reads the key file of the tenant directory dir; a file that does
// not exist is an empty one.
func Read(dir string) (File, error) {
	var f File
	data, err := os.ReadFile(filepath.Join(dir, Name))
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	for line := range bytes.Lines(data) {
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			f.Bad++
			continue
		}
		f.Entries = append(f.Entries, e)
		f.Lines++
	}
	f.Torn = len(data) > 0 && data[len(data)-1] != '\n'
	return f, nil
}

// encode returns entries as the file's lines.
func encode(entries []Entry) []byte {
	var out []byte
	for _, e := range entries {
		b, _ := json.Marshal(e) // strings, numbers: cannot fail
		out = append(append(out, b...), '\n')
	}
	return out
}

// Rewrite replaces the key file of dir with entries: a temporary file,
// fsynced, renamed into place, and the directory entry made durable.
func Rewrite(dir string, entries []Entry) error {
	path := filepath.Join(dir, Name)
	if err := syncfile.Write(path+".tmp", bytes.NewReader(encode(entries))); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	return syncfile.Dir(dir)
}

// Append appends entries to the key file of dir and fsyncs it; created
// says that the file is new, so that its directory entry is made durable
// too.
func Append(dir string, entries []Entry, created bool) error {
	if len(entries) == 0 {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(encode(entries))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || !created {
		return err
	}
	return syncfile.Dir(dir)
}
