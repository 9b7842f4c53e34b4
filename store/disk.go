package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/store/blockcache"
	"github.com/sparkprof/sparkprof/store/objstore"
	"github.com/sparkprof/sparkprof/store/wal"
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
	cache    *blockcache.Cache
	// remote is the bucket's view and counters; nil without a bucket.
	remote *remote
	// walEnc encodes the uploads' log records; under mu.
	walEnc    wal.Encoder
	compactMu sync.Mutex // one compaction at a time
	// headRollups is the memory of the head uploads' rollups and timelines
	// computed so far (Upload.LoadRollup, LoadTimeline), part of the
	// head's budget.
	headRollups atomic.Int64
	// compactions and compactionErrors count since Open, and compactionTime
	// is the time they took; under mu.
	compactions, compactionErrors int64
	compactionTime                time.Duration
	// writes counts uploads appended, to order tenants by their last
	// (tenant.lastWrite); under mu.
	writes uint64
	// kick wakes the background when Append finds the head over budget.
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

type tenant struct {
	dir       string
	uploads   []*Upload // the head: not compacted yet, oldest first
	headBytes int64     // the uploads' estimated memory (Upload.memSize)
	blocks    []*storedBlock
	nextID    uint64
	nextBlock uint64
	// shipped is the largest upload id shipped to the bucket.
	shipped uint64
	seg     wal.SegmentFile // segment being appended to
	segN    int
	segs    []wal.Segment
	// parked says that seg was closed to free its descriptor
	// (Options.MaxOpenSegments): the last segment is reopened for the
	// next upload. lastWrite orders tenants by their last upload (DB.writes).
	parked    bool
	lastWrite uint64
	// keys indexes the keys of the uploads stored within the key window
	// (Options.KeyWindow), head and blocks alike.
	keys map[string]storedKey
	// keyLines counts the lines of the keys file (see saveKeys);
	// keysTorn says that it ends in a line cut by a crash, which the next
	// save rewrites rather than appends to.
	keyLines int
	keysTorn bool
}

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
	// default a second, at least a microsecond (the Parquet samples
	// file's time unit).
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
	// MaxTenants bounds the tenants the store holds: Append for a new one
	// past it fails with ErrTooManyTenants. Zero means no limit.
	MaxTenants int
	// MaxOpenSegments bounds the log segments held open for appending,
	// one per tenant that uploads: those of the tenants that wrote least
	// recently are closed, and reopened when they write again. Default
	// 256.
	MaxOpenSegments int
	// Bucket, when set, is the store's durable tier: the head is shipped
	// to it as segments every FlushInterval and leaves the node, blocks
	// are compacted in it by the node holding the compactor's lease, and
	// queries read its blocks and segments besides the node's head (see
	// docs/storage-format.md, "Object storage"). Without it the store
	// compacts into its own directory.
	Bucket objstore.Bucket
	// FlushInterval is how often, with a Bucket, the head is shipped and
	// the bucket listed anew; default ten seconds.
	FlushInterval time.Duration
	// Role says what a node with a Bucket does; default RoleAll.
	Role Role
	// Node names the node in the bucket's segment names; default a random
	// name kept in the directory's node file, so that a node started again
	// on the same directory ships under the same name.
	Node string
	// LeaseTTL is how long the compactor's lease lasts unless renewed;
	// default three flush intervals.
	LeaseTTL time.Duration
	Logger   *slog.Logger
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
	o.Resolution = max(o.Resolution, time.Microsecond)
	if o.KeyWindow <= 0 {
		o.KeyWindow = time.Hour
	}
	if o.MaxOpenSegments <= 0 {
		o.MaxOpenSegments = 256
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 10 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 3 * o.FlushInterval
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
		cache: blockcache.New(opts.CacheBytes), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if opts.Bucket != nil {
		if db.opts.Node == "" {
			if db.opts.Node, err = nodeName(dir); err != nil {
				return nil, err
			}
		}
		db.remote = newRemote(opts.Bucket, db.opts.Node, db.opts.LeaseTTL, db.log)
	}
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
	if db.remote != nil {
		db.startBucket()
		return db, nil
	}
	go db.background()
	return db, nil
}

// TenantDir encodes a tenant name as a directory name: hex, so that any
// X-Scope-OrgID is safe on any file system.
func TenantDir(name string) string { return fmt.Sprintf("t-%x", name) }

// MaxTenantBytes bounds a tenant name: its directory name (TenantDir)
// must fit a file system's 255 bytes.
const MaxTenantBytes = 120

// ErrBadTenant is the error of a tenant name the store cannot keep.
var ErrBadTenant = errors.New("store: bad tenant name")

// ErrTooManyTenants is the error of an upload for a new tenant past
// Options.MaxTenants.
var ErrTooManyTenants = errors.New("store: too many tenants")

// CheckTenant reports a tenant name the store cannot keep, wrapping
// ErrBadTenant: longer than MaxTenantBytes, not UTF-8, or holding control
// characters.
func CheckTenant(name string) error {
	if len(name) > MaxTenantBytes || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("%w: %q (%d bytes): want at most %d bytes of text without control characters",
			ErrBadTenant, truncate(name, 64), len(name), MaxTenantBytes)
	}
	return nil
}

// truncate cuts s to at most n bytes of valid UTF-8, marking a cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// TenantName decodes a directory name made by TenantDir.
func TenantName(dir string) (string, error) {
	if !strings.HasPrefix(dir, "t-") {
		return "", fmt.Errorf("not a tenant dir")
	}
	b, err := hex.DecodeString(dir[2:])
	return string(b), err
}

// Tenants implements Store.
func (db *DB) Tenants() []string {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var out []string
	for n := range db.tenants {
		out = append(out, n)
	}
	if db.remote != nil {
		for n := range db.remote.view {
			if db.tenants[n] == nil {
				out = append(out, n)
			}
		}
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
	st.CacheBytes, st.CacheHits, st.CacheMisses, st.CacheEvictions = db.cache.Stats()
	if r := db.remote; r != nil {
		st.Bucket = &BucketStats{Up: r.up.Load(), Flushes: r.flushes.Load(), Errors: r.errors.Load(), Compactions: r.compactions.Load()}
		for _, rt := range r.view {
			st.Bucket.Blocks += len(rt.blocks)
			st.Bucket.Segments += len(rt.segs)
			st.Bucket.SegmentUploads += len(rt.uploads)
			for _, b := range rt.blocks {
				st.Bucket.BlockUploads += b.Meta.Uploads
			}
		}
	}
	for _, t := range db.tenants {
		st.HeadUploads += len(t.uploads)
		st.UploadKeys += len(t.keys)
		st.Blocks += len(t.blocks)
		for _, b := range t.blocks {
			st.BlockUploads += b.Meta.Uploads
			st.DiskBytes += b.DiskSize()
		}
		for _, s := range t.segs {
			st.DiskBytes += s.Size
		}
	}
	return st
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
	db.cache.Clear() // a closed store pins no block parts
	return errors.Join(errs...)
}
