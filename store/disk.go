package store

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// DB is the embedded store. Per tenant, uploads are first appended to a
// write-ahead log of segment files (each record length-prefixed,
// CRC-checked, S2-compressed, fsynced before Append returns) and kept in
// memory as they came: the head. That log is what makes an acknowledged
// upload survive kill -9; replaying it at start rebuilds the head, and a
// record cut by a crash is detected by its length or CRC and left unread.
//
// In the background the head is compacted: once a time partition (ten minutes
// by default) has had no upload for a while, its uploads are merged into a
// block file (see block) with frames, stacks, threads and label sets stored
// once and sample times kept to a resolution (a second by default), and
// the log segments that held only compacted uploads are deleted. Late
// uploads for a compacted partition are merged with its block at the next
// compaction. When the head outgrows Options.HeadBytes, its oldest uploads
// are compacted at once into blocks of their partition, still receiving or
// not, until it holds half of that; once the partition is quiet, its blocks
// are merged in runs that fit the budget.
type DB struct {
	dir  string
	opts Options
	log  *slog.Logger

	mu       sync.RWMutex
	tenants  map[string]*tenant
	closed   bool
	blockEnc *zstd.Encoder
	dec      *zstd.Decoder
	cache    *cache
	// rawBuf and recBuf are encodeRecord's buffers; under mu.
	rawBuf, recBuf []byte
	compactMu      sync.Mutex // one compaction at a time
	// headRollups is the memory of the head uploads' rollups and timelines
	// computed so far (Upload.LoadRollup, LoadTimeline), part of the
	// head's budget.
	headRollups atomic.Int64
	// compactions and compactionErrors count since Open, and compactionTime
	// is the time they took; under mu.
	compactions, compactionErrors int64
	compactionTime                time.Duration
	// kick wakes the background when Append finds the head over budget.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

type tenant struct {
	dir       string
	uploads   []*Upload // the head: not compacted yet, oldest first
	headBytes int64     // the uploads' estimated memory (Upload.memSize)
	blocks    []*block
	nextID    uint64
	nextBlock uint64
	seg       segmentFile // segment being appended to
	segN      int
	segs      []segment
	// keys indexes the keys of the uploads stored within the key window
	// (Options.KeyWindow), head and blocks alike.
	keys map[string]storedKey
	// keyLines counts the lines of the keys file (see saveKeys);
	// keysTorn says that it ends in a line cut by a crash, which the next
	// save rewrites rather than appends to.
	keyLines int
	keysTorn bool
}

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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Options configure Open.
type Options struct {
	// Retention drops uploads older than this (by their window end); zero
	// keeps everything.
	Retention time.Duration
	// Partition is the time span of a block; default ten minutes, so that
	// a query over a recent range reads few samples of partly covered
	// blocks and the rest from whole blocks' rollups.
	Partition time.Duration
	// CompactAfter is how long a partition must have had no upload, and
	// have ended, before it is compacted; default five minutes.
	CompactAfter time.Duration
	// Resolution is the time resolution of compacted samples: samples of
	// the same stack, thread, state and labels within it are summed;
	// default a second.
	Resolution time.Duration
	// CacheBytes bounds the memory (estimated) that blocks read from disk
	// keep for later queries; default 512 MiB.
	CacheBytes int64
	// HeadBytes bounds the memory (estimated) of the uploads not compacted
	// yet: past it the oldest are compacted early; default 512 MiB.
	HeadBytes int64
	// KeyWindow is how long an upload's key (Upload.Key) is remembered
	// after the upload was received, so that a retry within it is not
	// stored twice; default an hour.
	KeyWindow time.Duration
	Logger    *slog.Logger
}

func (o *Options) defaults() {
	if o.Partition <= 0 {
		o.Partition = 10 * time.Minute
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 512 << 20
	}
	if o.HeadBytes <= 0 {
		o.HeadBytes = 512 << 20
	}
	if o.CompactAfter <= 0 {
		o.CompactAfter = 5 * time.Minute
	}
	if o.Resolution <= 0 {
		o.Resolution = time.Second
	}
	if o.KeyWindow <= 0 {
		o.KeyWindow = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Open opens or creates the store in dir, reads its blocks and replays its
// logs.
func Open(dir string, opts Options) (*DB, error) {
	opts.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	blockEnc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(4<<30))
	if err != nil {
		return nil, err
	}
	db := &DB{dir: dir, opts: opts, log: opts.Logger, tenants: map[string]*tenant{}, blockEnc: blockEnc, dec: dec,
		cache: newCache(opts.CacheBytes), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
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
	go db.background()
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

// load reads a tenant's blocks and replays its segments, skipping uploads
// a block already holds (a crash between writing a block and deleting the
// segments it made obsolete).
func (db *DB) load(name, dir string) error {
	blocks, err := loadBlocks(dir)
	if err != nil {
		return fmt.Errorf("store: tenant %q: %w", name, err)
	}
	t := &tenant{dir: dir, nextID: 1, blocks: blocks}
	if err := t.loadKeys(db.log, db.keyCutoff()); err != nil {
		return err
	}
	for _, b := range blocks {
		db.attach(b)
		t.nextID = max(t.nextID, b.meta.maxID()+1)
		var seq uint64
		var part int64
		fmt.Sscanf(filepath.Base(b.path), "%020d-%010d.block", &part, &seq)
		t.nextBlock = max(t.nextBlock, seq+1)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		return err
	}
	sort.Strings(segs)
	for _, path := range segs {
		n, seg, err := db.replay(t, path)
		if err != nil {
			return err
		}
		fmt.Sscanf(filepath.Base(path), "%08d.wal", &t.segN)
		seg.size = n
		t.segs = append(t.segs, seg)
	}
	t.pruneSegments(db.log)
	db.tenants[name] = t
	db.log.Info("store: tenant loaded", "tenant", name, "uploads", len(t.uploads), "blocks", len(blocks), "segments", len(segs))
	return nil
}

// replay reads one segment. A bad record at its end (a crash during a
// write, or a write that failed and could not be cut back: never
// acknowledged) is left unread and logged; the file is not changed, since
// appends go to a new segment after a restart. A damaged record inside it
// (its checksum wrong, the disk's doing) is skipped and logged: the
// records after it are kept. Records are decoded in batches on every core,
// then taken in order: decoding is most of what a restart after a crash
// costs (about a millisecond per JDK recording). It returns the segment's
// size.
func (db *DB) replay(t *tenant, path string) (int64, segment, error) {
	seg := segment{path: path}
	f, err := os.Open(path)
	if err != nil {
		return 0, seg, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, seg, fmt.Errorf("store: %w", err)
	}
	size := st.Size()
	var batch []logRecord
	cutoff := db.keyCutoff()
	take := func() error {
		ups, err := db.decodeRecords(batch)
		if err != nil {
			return fmt.Errorf("store: %s: %w", path, err)
		}
		for _, u := range ups {
			t.nextID = max(t.nextID, u.ID+1)
			t.addKey(u.Key, u.ID, u.Received, cutoff)
			if t.compacted(u.ID) {
				continue
			}
			seg.add(u.ID)
			u.head = &headRollup{acct: &db.headRollups, res: int64(db.opts.Resolution)}
			t.uploads = append(t.uploads, u)
			t.headBytes += u.memSize
		}
		batch = batch[:0]
		return nil
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var hdr [8]byte
	for {
		_, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			err := take() // before seg is returned: take adds the batch's ids to it
			return off, seg, err
		}
		// tail leaves a torn record at the segment's end unread.
		tail := func(why string) (int64, segment, error) {
			if err := take(); err != nil {
				return 0, seg, err
			}
			db.log.Warn("store: ignoring an incomplete record at the end of a log segment, left by a crash or a failed write (never acknowledged)",
				"file", path, "offset", off, "bytes", size-off, "why", why)
			return size, seg, nil
		}
		if err != nil {
			return tail("short header")
		}
		n := int64(binary.LittleEndian.Uint32(hdr[:4]))
		sum := binary.LittleEndian.Uint32(hdr[4:])
		end := off + 8 + n
		if end > size {
			return tail("short record")
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return 0, seg, fmt.Errorf("store: %s: offset %d: %w", path, off, err)
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			if end == size {
				return tail("checksum")
			}
			db.log.Error("store: skipping a damaged log record; its upload is lost, the records after it are kept", "file", path, "offset", off, "bytes", n)
			off = end
			continue
		}
		batch = append(batch, logRecord{off, payload})
		off += 8 + int64(n)
		if len(batch) == replayBatch {
			if err := take(); err != nil {
				return 0, seg, err
			}
		}
	}
}

// replayBatch is how many log records replay decodes at once: enough to
// keep every core busy, few enough to bound the memory of their payloads.
const replayBatch = 64

// logRecord is a log record's payload and its offset in its segment.
type logRecord struct {
	off     int64
	payload []byte
}

// decodeRecords decodes records on every core, returning their uploads in
// order.
func (db *DB) decodeRecords(recs []logRecord) ([]*Upload, error) {
	ups := make([]*Upload, len(recs))
	errs := make([]error, len(recs))
	workers := min(runtime.GOMAXPROCS(0), len(recs))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(recs); i += workers {
				ups[i], errs[i] = db.decodeRecord(recs[i].payload)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			// The checksum holds, so this is no torn write to leave unread: the
			// record is in a format this version does not read.
			return nil, fmt.Errorf("record at offset %d: %w; the data directory was written by another sparkprof version: move it away (or use another --data) and import the data again", recs[i].off, err)
		}
	}
	return ups, nil
}

// add records that the segment holds upload id.
func (s *segment) add(id uint64) {
	if s.lo == 0 || id < s.lo {
		s.lo = id
	}
	s.hi = max(s.hi, id)
}

// compacted reports whether a block holds upload id.
func (t *tenant) compacted(id uint64) bool {
	for _, b := range t.blocks {
		if b.meta.contains(id) {
			return true
		}
	}
	return false
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

// Append implements Store.
func (db *DB) Append(name string, u *Upload) error {
	if u.Profile != nil {
		u.memSize = u.Profile.MemSize()
	}
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
	if u.Received == 0 {
		u.Received = time.Now().UnixNano()
	}
	if sk, ok := t.keys[u.Key]; ok && u.Key != "" && sk.received >= db.keyCutoff() {
		u.ID = sk.id
		return ErrDuplicate
	}
	u.ID = t.nextID
	rec, err := db.encodeRecord(u)
	if err != nil {
		return fmt.Errorf("store: encode upload: %w", err)
	}
	if t.seg == nil || t.segs[len(t.segs)-1].size >= segmentSize { // the last segment is t.seg's
		if err := t.rotate(); err != nil {
			return err
		}
	}
	if err := t.write(rec); err != nil {
		db.log.Error("store: cannot write an upload to the log; it is refused, the log cut back to the last upload stored", "tenant", name, "file", t.segs[len(t.segs)-1].path, "err", err)
		return err
	}
	if cap(db.rawBuf) > maxKeptBuffer {
		db.rawBuf, db.recBuf = nil, nil // a rare huge upload: not kept
	}
	t.segs[len(t.segs)-1].add(u.ID)
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
	syncDir(t.dir)
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
}

// attach makes block b's uploads read their parts through the cache.
func (db *DB) attach(b *block) {
	b.up.load = func(part int) (*profile.Profile, error) {
		switch {
		case part == partTables:
			return db.loadTables(b)
		case part == partTimeline && !b.has(part):
			return nil, nil // written before blocks had a timeline
		case !b.has(part):
			part = partSamples // written before blocks had a series part: the samples hold it
		}
		return db.cache.get(cacheKey{path: b.path, part: part}, func() (*profile.Profile, error) { return b.load(part, db.dec) })
	}
	for i, u := range b.sliceUps {
		u.load = func(part int) (*profile.Profile, error) { return db.loadSlice(b, i, part) }
	}
}

// loadTables reads the tables of a sliced block's samples through the
// cache, without the samples; an unsliced block's samples.
func (db *DB) loadTables(b *block) (*profile.Profile, error) {
	if len(b.slices) == 0 {
		return b.up.load(partSamples)
	}
	return db.cache.get(cacheKey{path: b.path, part: partSamples, slice: tablesOnly}, func() (*profile.Profile, error) {
		var p *profile.Profile
		err := b.withFile(func(f *os.File) (err error) {
			p, err = b.decodePart(f, partSamples, db.dec)
			return err
		})
		return p, err
	})
}

// loadSlice reads part of block b's time slice i through the cache: its
// rollup or samples, or the block's metric points in the time the slice
// stands for.
func (db *DB) loadSlice(b *block, i, part int) (*profile.Profile, error) {
	var tables *profile.Profile
	var err error
	switch part {
	case partTables:
		return db.loadTables(b)
	case partSeries:
		all, err := b.up.load(partSeries)
		if err != nil {
			return nil, err
		}
		return sliceSeries(all, b.meta.Slices[i]), nil
	case partTimeline:
		return db.cache.get(cacheKey{path: b.path, part: part, slice: i + 1}, func() (*profile.Profile, error) {
			all, err := b.up.load(partTimeline)
			if err != nil || all == nil {
				return all, err
			}
			return sliceTimeline(all, b.meta.Slices[i]), nil
		})
	case partRollup:
		tables, err = b.up.load(partRollup) // the block's rollup: most queries read it anyway
	default:
		tables, err = db.loadTables(b)
	}
	if err != nil {
		return nil, err
	}
	return db.cache.get(cacheKey{path: b.path, part: part, slice: i + 1}, func() (*profile.Profile, error) {
		var p *profile.Profile
		err := b.withFile(func(f *os.File) (err error) {
			p, err = b.decodeSlice(f, i, part, tables, db.dec)
			return err
		})
		return p, err
	})
}

// sliceTimeline returns a copy of timeline p holding its rows in the time
// slice sm stands for: its rows without a time for the untimed samples'
// slice.
func sliceTimeline(p *profile.Profile, sm sliceMeta) *profile.Profile {
	cp := *p
	cp.Samples = nil
	for _, s := range p.Samples {
		if sm.holds(s.Time) {
			cp.Samples = append(cp.Samples, s)
		}
	}
	return &cp
}

// sliceSeries returns a profile holding the points of p's series in the
// time slice sm stands for.
func sliceSeries(p *profile.Profile, sm sliceMeta) *profile.Profile {
	out := profile.New()
	for _, sr := range p.Series {
		var pts []profile.Point
		for _, pt := range sr.Points {
			if sm.holds(pt.Time) {
				pts = append(pts, pt)
			}
		}
		if len(pts) > 0 {
			sr.Points = pts
			out.Series = append(out.Series, sr)
		}
	}
	return out
}

// Select implements Store. Blocks come first (they hold older
// partitions), then the uploads not compacted yet.
func (db *DB) Select(name string, q Query, fn func(*Upload) error) error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	t := db.tenants[name]
	var ups []*Upload
	if t != nil {
		ims := intMatchers(q.SampleMatchers)
		for _, b := range t.blocks {
			if b.mayMatch(q, ims) {
				ups = append(ups, b.uploads(q, ims)...)
			}
		}
		ups = append(ups, t.uploads...)
	}
	db.mu.RUnlock()
	for _, u := range ups {
		// A head upload's label values are listed only for a query that
		// needs them.
		if !q.Matches(u) || u.head != nil && len(q.SampleMatchers) > 0 && !mayHold(u.LabelValues(), q.SampleMatchers) {
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

// Stats implements Store.
func (db *DB) Stats() Stats {
	db.mu.RLock()
	defer db.mu.RUnlock()
	st := Stats{Compactions: db.compactions, CompactionErrors: db.compactionErrors, CompactionTime: db.compactionTime,
		HeadBytes: db.headBytes()}
	st.CacheBytes, st.CacheHits, st.CacheMisses, st.CacheEvictions = db.cache.stats()
	for _, t := range db.tenants {
		st.HeadUploads += len(t.uploads)
		st.UploadKeys += len(t.keys)
		st.Blocks += len(t.blocks)
		for _, b := range t.blocks {
			st.BlockUploads += b.meta.Uploads
			st.DiskBytes += b.size
		}
		for _, s := range t.segs {
			st.DiskBytes += s.size
		}
	}
	return st
}

// background applies retention and compacts, once a minute and whenever
// Append finds the head over its budget.
func (db *DB) background() {
	defer close(db.done)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		now := time.Now()
		if db.opts.Retention > 0 {
			db.dropOld(now.Add(-db.opts.Retention).UnixNano())
		}
		db.forgetKeys()
		if err := db.compact(now.UnixNano(), false); err != nil {
			db.log.Error("store: compaction failed; the uploads stay in the log", "err", err)
		}
		db.mu.RLock()
		over := db.headBytes() > db.opts.HeadBytes
		db.mu.RUnlock()
		kick := db.kick
		if over {
			if err := db.compactHead(); err != nil {
				db.log.Error("store: compaction of a full head failed; the uploads stay in the log", "err", err)
				kick = nil // until the next tick, not at every upload
			}
		}
		select {
		case <-db.stop:
			return
		case <-tick.C:
		case <-kick:
		}
	}
}

// Compact compacts every tenant's uploads into blocks now, whether or not
// their partitions are still receiving uploads.
func (db *DB) Compact() error { return db.compact(time.Now().UnixNano(), true) }

// compactHead brings a head over its budget down to half of it, oldest
// uploads first: the uploads of the largest tenant head's oldest partition
// go into a new block, a quarter of the budget at a time, so that what one
// compaction holds in memory stays a fraction of the budget. The block is
// not merged with the partition's blocks: that would rewrite a still-growing
// partition at every early compaction; compact merges them once the
// partition is quiet.
func (db *DB) compactHead() error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	part := int64(db.opts.Partition)
	for {
		db.mu.RLock()
		if db.closed || db.headBytes() <= db.opts.HeadBytes/2 {
			db.mu.RUnlock()
			return nil
		}
		var name string
		var t *tenant
		for n, x := range db.tenants {
			if x.headBytes > 0 && (t == nil || x.headBytes > t.headBytes) {
				name, t = n, x
			}
		}
		if t == nil {
			db.mu.RUnlock()
			return nil
		}
		p := partitionOf(t.uploads[0], part)
		var ups []*Upload
		var size int64
		for _, u := range t.uploads {
			if size >= db.opts.HeadBytes/4 {
				break
			}
			if partitionOf(u, part) == p {
				ups = append(ups, u)
				size += u.memSize
			}
		}
		db.mu.RUnlock()
		if err := db.compactCounted(name, t, p, ups, nil, true); err != nil {
			return err
		}
	}
}

// compact merges the head uploads of each partition that is ready (ended
// and quiet for CompactAfter, or any with all) into a block, together with
// the partition's existing blocks as far as the head's budget allows (see
// mergeable). A ready partition with no uploads left in the head but
// several blocks (made by compactHead) has them merged the same way.
func (db *DB) compact(now int64, all bool) error {
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	part := int64(db.opts.Partition)
	quiet := int64(db.opts.CompactAfter)
	var errs []error
	for _, name := range db.Tenants() {
		db.mu.RLock()
		t := db.tenants[name]
		if db.closed || t == nil {
			db.mu.RUnlock()
			return nil
		}
		ups := slices.Clone(t.uploads)
		blocks := slices.Clone(t.blocks)
		db.mu.RUnlock()

		byPart := map[int64][]*Upload{}
		lastReceived := map[int64]int64{}
		for _, u := range ups {
			p := partitionOf(u, part)
			byPart[p] = append(byPart[p], u)
			lastReceived[p] = max(lastReceived[p], u.Received)
		}
		partBlocks := map[int64][]*block{}
		for _, b := range blocks {
			partBlocks[b.meta.Partition] = append(partBlocks[b.meta.Partition], b)
			lastReceived[b.meta.Partition] = max(lastReceived[b.meta.Partition], b.meta.Received)
		}
		parts := slices.Sorted(maps.Keys(lastReceived))
		for _, p := range parts {
			if !all && (p+part+quiet > now || lastReceived[p]+quiet > now) {
				continue
			}
			// Each run of blocks that fits the budget together becomes one,
			// the head's uploads going into the first.
			for ups, olds := byPart[p], partBlocks[p]; ; ups = nil {
				merge := db.mergeable(ups, olds)
				if len(ups) == 0 && len(merge) < 2 {
					break
				}
				if err := db.compactCounted(name, t, p, ups, merge, false); err != nil {
					errs = append(errs, err)
					break
				}
				db.mu.RLock()
				if db.closed { // the block written stays on disk; the store was not changed
					db.mu.RUnlock()
					return errors.Join(errs...)
				}
				olds = olds[:0:0]
				for _, b := range t.blocks {
					if b.meta.Partition == p {
						olds = append(olds, b)
					}
				}
				db.mu.RUnlock()
			}
		}
	}
	return errors.Join(errs...)
}

// mergeable returns the blocks of a partition to merge with its uploads
// ups: the first run of consecutive blocks that, with the uploads, makes at
// least two parts and whose estimated memory stays within the head's
// budget, so that a partition that had blocks made early (many executors)
// is not merged whole in memory at once. Blocks written before blocks
// recorded their size count as small.
func (db *DB) mergeable(ups []*Upload, blocks []*block) []*block {
	var head int64
	for _, u := range ups {
		head += u.memSize
	}
	for i := range blocks {
		size, n := head+blocks[i].meta.MemSize, 1
		if size > db.opts.HeadBytes {
			continue
		}
		for _, b := range blocks[i+1:] {
			if size+b.meta.MemSize > db.opts.HeadBytes {
				break
			}
			size += b.meta.MemSize
			n++
		}
		if n >= 2 || len(ups) > 0 {
			return blocks[i : i+n]
		}
	}
	return nil
}

// compactCounted runs compactPartition, counting it and its time in the
// store's statistics.
func (db *DB) compactCounted(name string, t *tenant, p int64, ups []*Upload, olds []*block, early bool) error {
	start := time.Now()
	err := db.compactPartition(name, t, p, ups, olds, early)
	db.mu.Lock()
	defer db.mu.Unlock()
	db.compactionTime += time.Since(start)
	if err != nil {
		db.compactionErrors++
		return fmt.Errorf("tenant %q partition %s: %w", name, time.Unix(0, p).UTC().Format(time.RFC3339), err)
	}
	db.compactions++
	return nil
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

// partitionOf returns the start of the partition holding u: by the start of
// its window, or when it was received if it has none.
func partitionOf(u *Upload, part int64) int64 {
	at := u.From
	if at == 0 {
		at = u.Received
	}
	return at - ((at%part)+part)%part
}

// compactPartition writes the uploads ups of partition p into a new block,
// merged with the partition's blocks olds, which it replaces. An early
// block (see compactHead) does not start in the cache.
func (db *DB) compactPartition(name string, t *tenant, p int64, ups []*Upload, olds []*block, early bool) error {
	// The blocks being replaced are read straight from disk: going
	// through the cache would push out what queries use.
	oldProfiles := make([]*profile.Profile, len(olds))
	for i, b := range olds {
		op, err := b.load(partSamples, db.dec)
		if err != nil {
			return fmt.Errorf("read the block to merge into: %w", err)
		}
		// The series are in a part of their own; blocks written before
		// November 25, 2026 hold them in their samples too (and those
		// written before the series part, there alone).
		if len(op.Series) == 0 && b.has(partSeries) {
			sp, err := b.load(partSeries, db.dec)
			if err != nil {
				return fmt.Errorf("read the series of the block to merge into: %w", err)
			}
			op.Series = sp.Series
		}
		oldProfiles[i] = op
	}
	prof, meta := compactUploads(p, olds, oldProfiles, ups, int64(db.opts.Resolution))
	// The uploads' keys are in the log segments this compaction may delete.
	if err := db.saveKeys(t, ups); err != nil {
		return fmt.Errorf("save the upload keys: %w", err)
	}
	db.mu.Lock()
	seq := t.nextBlock
	t.nextBlock++
	db.mu.Unlock()
	path := filepath.Join(t.dir, blockName(p, seq))
	b, roll, err := writeBlock(path, meta, prof, db.blockEnc, int64(db.opts.Partition))
	if err != nil {
		os.Remove(path + ".tmp")
		return fmt.Errorf("write block: %w", err)
	}
	db.attach(b)
	// The newest block is the likeliest to be queried next: its rollup,
	// which most flame graphs read, starts in the cache. Its samples, many
	// times larger, are read when a query needs them. A block made early,
	// to be merged with its partition's others, does not: under a steady
	// stream of uploads those would fill the cache.
	if !early {
		db.cache.put(cacheKey{path: path, part: partRollup}, roll)
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	done := map[uint64]bool{}
	for _, u := range ups {
		done[u.ID] = true
	}
	t.dropUploads(func(u *Upload) bool { return done[u.ID] })
	t.blocks = slices.DeleteFunc(t.blocks, func(x *block) bool { return slices.Contains(olds, x) })
	t.blocks = append(t.blocks, b)
	slices.SortStableFunc(t.blocks, func(x, y *block) int { return cmp.Compare(x.meta.Partition, y.meta.Partition) })
	for _, o := range olds {
		os.Remove(o.path)
		db.cache.forget(o.path)
	}
	t.pruneSegments(db.log)
	db.log.Info("store: compacted", "tenant", name, "partition", time.Unix(0, p).UTC().Format(time.RFC3339),
		"uploads", meta.Uploads, "samples", len(prof.Samples), "file", filepath.Base(path), "head_over_budget", early)
	return nil
}

// dropOld drops uploads and blocks whose data ended before cutoff, and the
// files that held only them.
func (db *DB) dropOld(cutoff int64) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, t := range db.tenants {
		t.dropUploads(func(u *Upload) bool { return max(u.Until, u.Received) < cutoff })
		t.blocks = slices.DeleteFunc(t.blocks, func(b *block) bool {
			if max(b.meta.Until, b.meta.Received) >= cutoff {
				return false
			}
			os.Remove(b.path)
			db.cache.forget(b.path)
			return true
		})
		t.pruneSegments(db.log)
	}
}

// Close implements Store. It waits for a compaction under way.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	db.mu.Unlock()
	close(db.stop)
	<-db.done
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	var errs []error
	for _, t := range db.tenants {
		if t.seg != nil {
			errs = append(errs, t.seg.Close())
		}
	}
	db.cache.clear() // a closed store pins no block parts
	return errors.Join(errs...)
}
