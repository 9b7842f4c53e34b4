package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sparkprof/sparkprof/store/wal"
)

// Append implements Store.
func (db *DB) Append(name string, u *Upload) error {
	if u.Profile != nil {
		u.memSize = u.Profile.MemSize()
	}
	if db.remote != nil && !db.opts.Role.Ingests() {
		return fmt.Errorf("%w (serve --role %s): send uploads to a node of role all or ingest", ErrNotIngesting, db.opts.Role)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	t := db.tenants[name]
	if t == nil {
		if err := CheckTenant(name); err != nil {
			return err
		}
		if db.opts.MaxTenants > 0 && len(db.tenants) >= db.opts.MaxTenants {
			return fmt.Errorf("%w: the store holds %d tenants, its limit (serve --max-tenants)", ErrTooManyTenants, len(db.tenants))
		}
		t = &tenant{dir: filepath.Join(db.dir, TenantDir(name)), nextID: 1}
		if err := os.MkdirAll(t.dir, 0o755); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		db.tenants[name] = t
	}
	if u.Received == 0 {
		u.Received = time.Now().UnixNano()
	}
	if sk, ok := t.keys[u.Key]; ok && u.Key != "" && sk.received >= db.keyCutoff() {
		u.ID = sk.id
		return ErrDuplicate
	}
	u.ID = t.nextID
	rec, err := db.walEnc.Encode(recordOf(u))
	if err != nil {
		return fmt.Errorf("store: encode upload: %w", err)
	}
	if err := db.openForAppend(t); err != nil {
		return err
	}
	walOff := t.segs[len(t.segs)-1].Size
	if err := t.write(rec); err != nil {
		db.log.Error("store: cannot write an upload to the log; it is refused, the log cut back to the last upload stored", "tenant", name, "file", t.segs[len(t.segs)-1].Path, "err", err)
		return err
	}
	db.walEnc.Trim() // a rare huge upload's buffers are not kept
	t.segs[len(t.segs)-1].Add(u.ID)
	u.wal = wal.Span{Path: t.segs[len(t.segs)-1].Path, Off: walOff, N: int64(len(rec))}
	t.nextID++
	t.addKey(u.Key, u.ID, u.Received, 0)
	u.head = &headRollup{acct: &db.headRollups, res: int64(db.opts.Resolution)}
	t.uploads = append(t.uploads, u)
	t.headBytes += u.memSize
	if db.headBytes() > db.opts.HeadBytes {
		select {
		case db.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Backlogged reports whether the head holds more than twice its budget
// (Options.HeadBytes): compaction is not keeping up with the uploads, and
// taking more would only grow the server's memory.
//
// With a bucket, where the head leaves the node only by being shipped, it
// is backlogged past its budget: the bucket is down, and the log holds
// what the head does until it is back.
func (db *DB) Backlogged() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.remote != nil {
		return db.headBytes() > db.opts.HeadBytes
	}
	return db.headBytes() > 2*db.opts.HeadBytes
}

// headBytes returns the estimated memory of every tenant's head, the
// rollups and timelines queries made of its uploads included; under mu.
func (db *DB) headBytes() int64 {
	n := db.headRollups.Load()
	for _, t := range db.tenants {
		n += t.headBytes
	}
	return n
}

// dropUploads removes the uploads that drop selects from the head; under
// mu, held for writing.
func (t *tenant) dropUploads(drop func(*Upload) bool) {
	t.uploads = slices.DeleteFunc(t.uploads, func(u *Upload) bool {
		if drop(u) {
			t.headBytes -= u.memSize
			if u.head != nil {
				u.head.drop()
			}
			return true
		}
		return false
	})
}
