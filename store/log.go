package store

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/store/wal"
)

// recordOf returns the log record of upload u.
func recordOf(u *Upload) wal.Record {
	return wal.Record{Header: wal.Header{ID: u.ID, ReceivedNs: u.Received, From: u.From, Until: u.Until, Labels: u.Labels,
		Agent: u.Agent, Bytes: u.Bytes, Key: u.Key}, Profile: u.Profile}
}

// uploadOf returns the upload of log record r.
func uploadOf(r *wal.Record) *Upload {
	return &Upload{ID: r.ID, Received: r.ReceivedNs, From: r.From, Until: r.Until, Labels: r.Labels,
		Agent: r.Agent, Bytes: r.Bytes, Key: r.Key, Profile: r.Profile, memSize: r.Profile.MemSize()}
}

// decodeRecords decodes log records on every core, returning their
// uploads in order.
func (db *DB) decodeRecords(payloads []wal.Payload) ([]*Upload, error) {
	recs, err := wal.DecodeAll(payloads, db.dec)
	if err != nil {
		return nil, err
	}
	ups := make([]*Upload, len(recs))
	for i, r := range recs {
		ups[i] = uploadOf(r)
	}
	return ups, nil
}

// write appends log record rec to the active segment and fsyncs it. On
// failure (a full disk, an I/O error) the segment is cut back to its last
// whole record, so that the records after it follow it directly and a
// replay finds none cut in the middle; if even that fails, the segment is
// left, the next write starting a new one, and replay cuts the torn record
// at its end.
func (t *tenant) write(rec []byte) error {
	s := &t.segs[len(t.segs)-1] // t.seg's
	_, err := t.seg.Write(rec)
	if err == nil {
		if err = t.seg.Sync(); err == nil {
			s.Size += int64(len(rec))
			return nil
		}
		err = fmt.Errorf("sync: %w", err)
	} else {
		err = fmt.Errorf("write: %w", err)
	}
	if terr := t.seg.Truncate(s.Size); terr != nil || t.seg.Sync() != nil {
		t.seg.Close()
		t.seg = nil
	}
	return fmt.Errorf("store: %w", err)
}

// openForAppend makes t's segment to append to open: the one it
// appended to last, reopened if it was closed to free its descriptor
// (parked), else a new one when t has none or its last is full. It closes
// the segments of the tenants that wrote least recently past
// Options.MaxOpenSegments. Under mu, held for writing.
func (db *DB) openForAppend(t *tenant) error {
	db.writes++
	t.lastWrite = db.writes
	if t.seg != nil && t.segs[len(t.segs)-1].Size < wal.SegmentSize { // the last segment is t.seg's
		return nil
	}
	var err error
	if t.seg == nil && t.parked && len(t.segs) > 0 && t.segs[len(t.segs)-1].Size < wal.SegmentSize {
		t.seg, err = wal.OpenSegment(t.segs[len(t.segs)-1].Path)
		if err != nil {
			return fmt.Errorf("store: reopen log segment: %w", err)
		}
	} else if err = t.rotate(); err != nil {
		return err
	}
	t.parked = false
	db.parkIdle(t)
	return nil
}

// parkIdle closes the segments of the tenants that wrote least recently,
// but not keep's, until at most Options.MaxOpenSegments are open: a store
// of many tenants holds that many descriptors, not one per tenant. Under
// mu, held for writing.
func (db *DB) parkIdle(keep *tenant) {
	open := 0
	for _, t := range db.tenants {
		if t.seg != nil {
			open++
		}
	}
	for open > db.opts.MaxOpenSegments {
		var idle *tenant
		for _, t := range db.tenants {
			if t.seg != nil && t != keep && (idle == nil || t.lastWrite < idle.lastWrite) {
				idle = t
			}
		}
		if idle == nil {
			return
		}
		idle.seg.Close()
		idle.seg, idle.parked = nil, true
		open--
	}
}

// rotate starts the next segment file and makes its directory entry
// durable.
func (t *tenant) rotate() error {
	if t.seg != nil {
		t.seg.Close()
		t.segN++
	} else if len(t.segs) > 0 {
		t.segN++
	}
	path := filepath.Join(t.dir, fmt.Sprintf("%08d.wal", t.segN))
	f, err := wal.OpenSegment(path)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	syncfile.Dir(t.dir)
	t.seg = f
	t.segs = append(t.segs, wal.Segment{Path: path})
	return nil
}

// pruneSegments deletes the log segments that hold no upload of the head:
// their uploads were compacted or are past retention. The segment being
// appended to is closed first when it is among them.
func (t *tenant) pruneSegments(log *slog.Logger) {
	live := func(s wal.Segment) bool {
		if s.Lo == 0 {
			return false
		}
		i, _ := slices.BinarySearchFunc(t.uploads, s.Lo, func(u *Upload, id uint64) int { return cmp.Compare(u.ID, id) })
		return i < len(t.uploads) && t.uploads[i].ID <= s.Hi
	}
	keep := t.segs[:0]
	for i, s := range t.segs {
		active := t.seg != nil && i == len(t.segs)-1
		if live(s) || (active && s.Lo == 0) {
			keep = append(keep, s)
			continue
		}
		if active {
			t.seg.Close()
			t.seg = nil
		}
		if err := os.Remove(s.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("store: cannot delete a compacted log segment", "file", s.Path, "err", err)
		}
	}
	t.segs = keep
	if t.parked && (len(keep) == 0 || t.segs[len(t.segs)-1].Size >= wal.SegmentSize) {
		t.parked = false // nothing to reopen: the next upload starts a segment
	}
}
