package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// DB is the embedded store: per tenant, an append-only log of uploads in
// segment files (each record length-prefixed, CRC-checked, zstd-compressed,
// fsynced before Append returns) and an in-memory index of the decoded
// uploads. A write-ahead log is the whole storage: it is what makes an
// acknowledged upload survive kill -9, and replaying it at start rebuilds
// the index. A record cut by a crash is detected by its length or CRC and
// cut off; the records before it are kept.
type DB struct {
	dir       string
	retention time.Duration
	log       *slog.Logger

	mu      sync.RWMutex
	tenants map[string]*tenant
	closed  bool
	enc     *zstd.Encoder
	dec     *zstd.Decoder
	stop    chan struct{}
	done    chan struct{}
}

type tenant struct {
	dir     string
	uploads []*Upload
	nextID  uint64
	seg     *os.File // segment being appended to
	segN    int
	segSize int64
}

// segmentSize is when a new segment file is started.
const segmentSize = 64 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options configure Open.
type Options struct {
	// Retention drops uploads older than this (by their window end); zero
	// keeps everything.
	Retention time.Duration
	Logger    *slog.Logger
}

// Open opens or creates the store in dir and replays its logs.
func Open(dir string, opts Options) (*DB, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	db := &DB{dir: dir, retention: opts.Retention, log: log, tenants: map[string]*tenant{}, enc: enc, dec: dec,
		stop: make(chan struct{}), done: make(chan struct{})}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name, err := TenantName(e.Name())
		if err != nil {
			continue
		}
		if err := db.load(name, filepath.Join(dir, e.Name())); err != nil {
			return nil, err
		}
	}
	go db.retain()
	return db, nil
}

// TenantDir encodes a tenant name as a directory name: hex, so that any
// X-Scope-OrgID is safe on any file system.
func TenantDir(name string) string { return fmt.Sprintf("t-%x", name) }

// TenantName decodes a directory name made by TenantDir.
func TenantName(dir string) (string, error) {
	if !strings.HasPrefix(dir, "t-") {
		return "", fmt.Errorf("not a tenant dir")
	}
	b, err := hex.DecodeString(dir[2:])
	return string(b), err
}

// record is an upload as a log record holds it.
type record struct {
	ID          uint64
	ReceivedNs  int64
	From, Until int64
	Labels      profile.Labels
	Agent       string
	Bytes       int
	Profile     []byte // profile.Profile.MarshalBinary
}

// load replays a tenant's segments.
func (db *DB) load(name, dir string) error {
	segs, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return err
	}
	sort.Strings(segs)
	t := &tenant{dir: dir, nextID: 1}
	for i, seg := range segs {
		n, err := db.replay(t, seg, i == len(segs)-1)
		if err != nil {
			return err
		}
		var idx int
		fmt.Sscanf(filepath.Base(seg), "%08d.wal", &idx)
		t.segN = idx
		t.segSize = n
	}
	db.tenants[name] = t
	db.log.Info("store: tenant loaded", "tenant", name, "uploads", len(t.uploads), "segments", len(segs))
	return nil
}

// replay reads one segment; a bad tail of the last segment (a crash during
// a write, never acknowledged) is cut off.
func (db *DB) replay(t *tenant, path string, last bool) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [8]byte
	for {
		_, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			return off, nil
		}
		bad := func(why string) (int64, error) {
			if !last {
				return 0, fmt.Errorf("store: %s: corrupt record at offset %d (%s); move the file away to start without it", path, off, why)
			}
			db.log.Warn("store: cutting an incomplete record left by a crash", "file", path, "offset", off, "why", why)
			if err := f.Truncate(off); err != nil {
				return 0, fmt.Errorf("store: %s: %w", path, err)
			}
			return off, nil
		}
		if err != nil {
			return bad("short header")
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		sum := binary.LittleEndian.Uint32(hdr[4:])
		if n > 1<<30 {
			return bad("record length")
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return bad("short record")
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return bad("checksum")
		}
		u, err := db.decodeRecord(payload)
		if err != nil {
			return bad(err.Error())
		}
		off += 8 + int64(n)
		t.uploads = append(t.uploads, u)
		if u.ID >= t.nextID {
			t.nextID = u.ID + 1
		}
	}
}

func (db *DB) encodeRecord(u *Upload) ([]byte, error) {
	pb, err := u.Profile.MarshalBinary()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	rec := record{ID: u.ID, From: u.From, Until: u.Until, Labels: u.Labels, Agent: u.Agent, Bytes: u.Bytes, Profile: pb, ReceivedNs: u.Received}
	if err := gob.NewEncoder(&b).Encode(&rec); err != nil {
		return nil, err
	}
	return db.enc.EncodeAll(b.Bytes(), nil), nil
}

func (db *DB) decodeRecord(payload []byte) (*Upload, error) {
	raw, err := db.dec.DecodeAll(payload, nil)
	if err != nil {
		return nil, err
	}
	var rec record
	if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&rec); err != nil {
		return nil, err
	}
	p := new(profile.Profile)
	if err := p.UnmarshalBinary(rec.Profile); err != nil {
		return nil, err
	}
	return &Upload{ID: rec.ID, Received: rec.ReceivedNs, From: rec.From, Until: rec.Until, Labels: rec.Labels,
		Agent: rec.Agent, Bytes: rec.Bytes, Profile: p}, nil
}

// Append implements Store.
func (db *DB) Append(name string, u *Upload) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	t := db.tenants[name]
	if t == nil {
		t = &tenant{dir: filepath.Join(db.dir, TenantDir(name)), nextID: 1}
		if err := os.MkdirAll(t.dir, 0o755); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		db.tenants[name] = t
	}
	u.ID = t.nextID
	if u.Received == 0 {
		u.Received = time.Now().UnixNano()
	}
	payload, err := db.encodeRecord(u)
	if err != nil {
		return fmt.Errorf("store: encode upload: %w", err)
	}
	if t.seg == nil || t.segSize >= segmentSize {
		if err := t.rotate(); err != nil {
			return err
		}
	}
	var hdr [8]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(payload, castagnoli))
	if _, err := t.seg.Write(append(hdr[:], payload...)); err != nil {
		return fmt.Errorf("store: write: %w", err)
	}
	if err := t.seg.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	t.segSize += int64(8 + len(payload))
	t.nextID++
	t.uploads = append(t.uploads, u)
	return nil
}

// rotate starts the next segment file and makes its directory entry
// durable.
func (t *tenant) rotate() error {
	if t.seg != nil {
		t.seg.Close()
		t.segN++
	} else if t.segSize > 0 || t.segN > 0 {
		t.segN++
	}
	path := filepath.Join(t.dir, fmt.Sprintf("%08d.wal", t.segN))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if d, err := os.Open(t.dir); err == nil {
		d.Sync()
		d.Close()
	}
	t.seg, t.segSize = f, 0
	return nil
}

// Select implements Store.
func (db *DB) Select(name string, q Query, fn func(*Upload) error) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	t := db.tenants[name]
	var ups []*Upload
	if t != nil {
		ups = t.uploads[:len(t.uploads):len(t.uploads)]
	}
	db.mu.RUnlock()
	for _, u := range ups {
		if !q.Matches(u) {
			continue
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// Tenants implements Store.
func (db *DB) Tenants() []string {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var out []string
	for n := range db.tenants {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// retain drops uploads past the retention period from memory and deletes
// segments whose uploads are all past it, once a minute.
func (db *DB) retain() {
	defer close(db.done)
	if db.retention <= 0 {
		<-db.stop
		return
	}
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		db.dropOld(time.Now().Add(-db.retention).UnixNano())
		select {
		case <-db.stop:
			return
		case <-tick.C:
		}
	}
}

func (db *DB) dropOld(cutoff int64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, t := range db.tenants {
		keep := t.uploads[:0:0]
		for _, u := range t.uploads {
			if end := max(u.Until, u.Received); end >= cutoff {
				keep = append(keep, u)
			}
		}
		t.uploads = keep
		segs, _ := filepath.Glob(filepath.Join(t.dir, "*.wal"))
		for _, s := range segs {
			if t.seg != nil && s == t.seg.Name() {
				continue
			}
			if st, err := os.Stat(s); err == nil && st.ModTime().UnixNano() < cutoff {
				os.Remove(s)
			}
		}
	}
}

// Close implements Store.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	var errs []error
	for _, t := range db.tenants {
		if t.seg != nil {
			errs = append(errs, t.seg.Close())
		}
	}
	db.mu.Unlock()
	close(db.stop)
	<-db.done
	return errors.Join(errs...)
}
