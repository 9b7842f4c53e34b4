package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/klauspost/compress/s2"

	"github.com/sparkprof/sparkprof/internal/syncfile"
	"github.com/sparkprof/sparkprof/profile"
)

// segment is a log file and the range of upload ids it holds.
type segment struct {
	path   string
	lo, hi uint64 // 0, 0 when it holds none
	size   int64  // bytes of its records
}

// segmentFile is a log segment open for appending.
type segmentFile interface {
	Write(b []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// openSegment opens a log segment for appending; a variable so that tests
// can make its writes fail as a full disk does.
var openSegment = func(path string) (segmentFile, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// segmentSize is when a new segment file is started.
const segmentSize = 64 << 20

// record is the header of an upload in a log record: a uvarint length,
// this as JSON, then the profile (profile.MarshalBinary), all compressed.
type record struct {
	ID          uint64
	ReceivedNs  int64
	From, Until int64
	Labels      profile.Labels
	Agent       string
	Bytes       int
	Key         string `json:",omitempty"`
}

// walSpan is where a log record is: its segment file, offset and length.
type walSpan struct {
	path string
	off  int64
	n    int64
}

// add records that the segment holds upload id.
func (s *segment) add(id uint64) {
	if s.lo == 0 || id < s.lo {
		s.lo = id
	}
	s.hi = max(s.hi, id)
}

// maxKeptBuffer bounds the encodeRecord buffers kept between uploads.
const maxKeptBuffer = 16 << 20

// encodeRecord returns the log record of u (length, checksum, payload).
// It is built in buffers kept for the next upload: a record is hundreds of
// KiB that a fresh buffer would reach through a dozen growths, and on a
// virtual machine the fresh pages cost more than the encoding.
func (db *DB) encodeRecord(u *Upload) ([]byte, error) {
	hdr, err := json.Marshal(record{ID: u.ID, ReceivedNs: u.Received, From: u.From, Until: u.Until, Labels: u.Labels, Agent: u.Agent, Bytes: u.Bytes, Key: u.Key})
	if err != nil {
		return nil, err
	}
	raw := binary.AppendUvarint(db.rawBuf[:0], uint64(len(hdr)))
	raw, err = u.Profile.AppendBinary(append(raw, hdr...))
	if err != nil {
		return nil, err
	}
	db.rawBuf = raw
	// S2 rather than zstd: a record lives only until its partition is
	// compacted into a zstd block, and S2 compresses a plain JFR upload's
	// record in a third of the time zstd's fastest level takes, 12 % larger.
	need := 8 + s2.MaxEncodedLen(len(raw)) // the length and checksum go first
	if need < 0 {
		return nil, fmt.Errorf("record of %d bytes too large to compress", len(raw))
	}
	if cap(db.recBuf) < need {
		db.recBuf = make([]byte, need)
	}
	payload := s2.Encode(db.recBuf[8:need], raw)
	rec := db.recBuf[:8+len(payload)]
	binary.LittleEndian.PutUint32(rec[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
	return rec, nil
}

// zstdMagic starts the payload of log records written before records were
// S2 blocks. An S2 block starts with its decoded length as a varint, and a
// record is longer than 127 bytes, so its first byte has the high bit set:
// it never starts like a zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxRecordBytes bounds the decoded size of a log record.
const maxRecordBytes = 1 << 30

func (db *DB) decodeRecord(payload []byte) (*Upload, error) {
	var raw []byte
	if bytes.HasPrefix(payload, zstdMagic) {
		var err error
		if raw, err = db.dec.DecodeAll(payload, nil); err != nil {
			return nil, err
		}
	} else {
		n, err := s2.DecodedLen(payload)
		if err != nil {
			return nil, err
		}
		if n > maxRecordBytes {
			return nil, fmt.Errorf("record claims %d bytes decoded, more than %d", n, maxRecordBytes)
		}
		if raw, err = s2.Decode(nil, payload); err != nil {
			return nil, err
		}
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)-k) {
		return nil, fmt.Errorf("record header length")
	}
	var rec record
	if err := json.Unmarshal(raw[k:k+int(n)], &rec); err != nil {
		return nil, fmt.Errorf("record header: %w", err)
	}
	p := new(profile.Profile)
	if err := p.UnmarshalBinary(raw[k+int(n):]); err != nil {
		return nil, err
	}
	return &Upload{ID: rec.ID, Received: rec.ReceivedNs, From: rec.From, Until: rec.Until, Labels: rec.Labels,
		Agent: rec.Agent, Bytes: rec.Bytes, Key: rec.Key, Profile: p, memSize: p.MemSize()}, nil
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
			s.size += int64(len(rec))
			return nil
		}
		err = fmt.Errorf("sync: %w", err)
	} else {
		err = fmt.Errorf("write: %w", err)
	}
	if terr := t.seg.Truncate(s.size); terr != nil || t.seg.Sync() != nil {
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
	if t.seg != nil && t.segs[len(t.segs)-1].size < segmentSize { // the last segment is t.seg's
		return nil
	}
	var err error
	if t.seg == nil && t.parked && len(t.segs) > 0 && t.segs[len(t.segs)-1].size < segmentSize {
		t.seg, err = openSegment(t.segs[len(t.segs)-1].path)
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
	f, err := openSegment(path)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	syncfile.Dir(t.dir)
	t.seg = f
	t.segs = append(t.segs, segment{path: path})
	return nil
}

// pruneSegments deletes the log segments that hold no upload of the head:
// their uploads were compacted or are past retention. The segment being
// appended to is closed first when it is among them.
func (t *tenant) pruneSegments(log *slog.Logger) {
	live := func(s segment) bool {
		if s.lo == 0 {
			return false
		}
		i, _ := slices.BinarySearchFunc(t.uploads, s.lo, func(u *Upload, id uint64) int { return cmp.Compare(u.ID, id) })
		return i < len(t.uploads) && t.uploads[i].ID <= s.hi
	}
	keep := t.segs[:0]
	for i, s := range t.segs {
		active := t.seg != nil && i == len(t.segs)-1
		if live(s) || (active && s.lo == 0) {
			keep = append(keep, s)
			continue
		}
		if active {
			t.seg.Close()
			t.seg = nil
		}
		if err := os.Remove(s.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("store: cannot delete a compacted log segment", "file", s.path, "err", err)
		}
	}
	t.segs = keep
	if t.parked && (len(keep) == 0 || t.segs[len(t.segs)-1].size >= segmentSize) {
		t.parked = false // nothing to reopen: the next upload starts a segment
	}
}
