package store

import (
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"time"

	"github.com/sparkprof/sparkprof/store/keyfile"
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

// loadKeys reads the tenant's key file, if any, keeping the keys received
// since cutoff. A damaged line (a crash during an append) costs only the
// retries it would have caught: it is logged and skipped.
func (t *tenant) loadKeys(log *slog.Logger, cutoff int64) error {
	f, err := keyfile.Read(t.dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	for _, e := range f.Entries {
		t.addKey(e.Key, e.ID, e.Received, cutoff)
	}
	t.keyLines, t.keysTorn = f.Lines, f.Torn
	if f.Bad > 0 {
		log.Warn("store: damaged upload keys skipped; retries of those uploads may be stored twice", "file", filepath.Join(t.dir, keyfile.Name), "lines", f.Bad)
	}
	return nil
}

// saveKeys appends the keys of ups, about to be compacted, to the tenant's
// key file and fsyncs it; when most of the file's lines are keys past the
// window, it rewrites the file with the window's keys instead. Under
// compactMu, which guards keyLines.
func (db *DB) saveKeys(t *tenant, ups []*Upload) error {
	// The keys are copied under the lock and written out of it: a rewrite
	// encodes an hour's keys, which Append should not wait for.
	var keys []keyfile.Entry
	db.mu.RLock()
	rewrite := t.keysTorn || t.keyLines > 2*len(t.keys)+1024
	if rewrite {
		keys = make([]keyfile.Entry, 0, len(t.keys))
		for k, sk := range t.keys {
			keys = append(keys, keyfile.Entry{Key: k, ID: sk.id, Received: sk.received})
		}
	} else {
		for _, u := range ups {
			if sk, ok := t.keys[u.Key]; ok && u.Key != "" && sk.id == u.ID {
				keys = append(keys, keyfile.Entry{Key: u.Key, ID: u.ID, Received: u.Received})
			}
		}
	}
	db.mu.RUnlock()
	if rewrite {
		if err := keyfile.Rewrite(t.dir, keys); err != nil {
			return err
		}
		t.keyLines, t.keysTorn = len(keys), false
		return nil
	}
	if err := keyfile.Append(t.dir, keys, t.keyLines == 0); err != nil {
		return err
	}
	t.keyLines += len(keys)
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
