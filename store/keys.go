package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/sparkprof/sparkprof/internal/syncfile"
)

// storedKey is where an upload key was stored: the upload's id and when it
// was received (Unix ns).
type storedKey struct {
	id       uint64
	received int64
}

// addKey indexes the key of upload id, received at received, unless it is
// empty or was received before cutoff.
func (t *tenant) addKey(key string, id uint64, received, cutoff int64) {
	if key == "" || received < cutoff {
		return
	}
	if t.keys == nil {
		t.keys = map[string]storedKey{}
	}
	t.keys[key] = storedKey{id, received}
}

// keysFile names the file in a tenant's directory that keeps the upload
// keys of the key window past compaction, which deletes the log segments
// that held them: JSON lines, each compaction appending its uploads' keys,
// rewritten without the keys past the window once they are most of it.
// Keeping the keys in the blocks instead would make every restart read
// each block's keys, however old.
const keysFile = "keys.json"

// storedKeyJSON is an upload key in the keys file.
type storedKeyJSON struct {
	Key      string
	ID       uint64
	Received int64 // Unix ns
}

// loadKeys reads the tenant's keys file, if any, keeping the keys received
// since cutoff. A damaged line (a crash during an append) costs only the
// retries it would have caught: it is logged and skipped.
func (t *tenant) loadKeys(log *slog.Logger, cutoff int64) error {
	path := filepath.Join(t.dir, keysFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	bad := 0
	for line := range bytes.Lines(data) {
		var k storedKeyJSON
		if err := json.Unmarshal(line, &k); err != nil {
			bad++
			continue
		}
		t.addKey(k.Key, k.ID, k.Received, cutoff)
		t.keyLines++
	}
	t.keysTorn = len(data) > 0 && data[len(data)-1] != '\n'
	if bad > 0 {
		log.Warn("store: damaged upload keys skipped; retries of those uploads may be stored twice", "file", path, "lines", bad)
	}
	return nil
}

// saveKeys appends the keys of ups, about to be compacted, to the tenant's
// keys file and fsyncs it; when most of the file's lines are keys past the
// window, it rewrites the file (temporary file, fsync, rename) with the
// window's keys instead. Under compactMu, which guards keyLines.
func (db *DB) saveKeys(t *tenant, ups []*Upload) error {
	// The keys are copied under the lock and written out of it: a rewrite
	// encodes an hour's keys, which Append should not wait for.
	var keys []storedKeyJSON
	db.mu.RLock()
	rewrite := t.keysTorn || t.keyLines > 2*len(t.keys)+1024
	if rewrite {
		keys = make([]storedKeyJSON, 0, len(t.keys))
		for k, sk := range t.keys {
			keys = append(keys, storedKeyJSON{Key: k, ID: sk.id, Received: sk.received})
		}
	} else {
		for _, u := range ups {
			if sk, ok := t.keys[u.Key]; ok && u.Key != "" && sk.id == u.ID {
				keys = append(keys, storedKeyJSON{Key: u.Key, ID: u.ID, Received: u.Received})
			}
		}
	}
	db.mu.RUnlock()
	var out []byte
	for _, k := range keys {
		b, _ := json.Marshal(k) // strings, numbers: cannot fail
		out = append(append(out, b...), '\n')
	}
	n := len(keys)
	path := filepath.Join(t.dir, keysFile)
	if rewrite {
		if err := syncfile.Write(path+".tmp", bytes.NewReader(out)); err != nil {
			return err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return err
		}
		t.keyLines, t.keysTorn = n, false
		return syncfile.Dir(t.dir)
	}
	if len(out) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(out)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	created := t.keyLines == 0
	t.keyLines += n
	if created {
		return syncfile.Dir(t.dir)
	}
	return nil
}

// KeyStored reports whether an upload of tenant with key was stored within
// the key window, and its id: a sender's retry can then be answered
// before its body is read or decoded. Append decides in the end.
func (db *DB) KeyStored(tenant, key string) (uint64, bool) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	t := db.tenants[tenant]
	if t == nil || key == "" {
		return 0, false
	}
	sk, ok := t.keys[key]
	if !ok || sk.received < db.keyCutoff() {
		return 0, false
	}
	return sk.id, true
}

// keyCutoff returns the receipt time (Unix ns) before which upload keys
// are forgotten.
func (db *DB) keyCutoff() int64 {
	return time.Now().Add(-db.opts.KeyWindow).UnixNano()
}

// forgetKeys drops the upload keys older than the key window.
func (db *DB) forgetKeys() {
	cutoff := db.keyCutoff()
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, t := range db.tenants {
		maps.DeleteFunc(t.keys, func(_ string, sk storedKey) bool { return sk.received < cutoff })
	}
}
