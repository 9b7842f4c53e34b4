// Package store keeps uploaded profiles: crash-safe on disk, indexed in
// memory, behind the Store interface so that a distributed backend can
// replace the embedded one without touching ingest or query code.
package store

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/objstore"
	"github.com/sparkprof/sparkprof/store/wal"
)

// Upload is one ingested profile with what the agent said about it.
type Upload struct {
	ID       uint64         // assigned by Append, increasing per tenant
	Received int64          // Unix ns when it was stored
	From     int64          // Unix ns, start of the window the profile covers
	Until    int64          // Unix ns, end of the window
	Labels   profile.Labels // upload-level labels: service_name, app, executor, host, role
	Agent    string         // the client, e.g. Pyroscope's spyName
	Bytes    int            // request body size
	// Key, when set, names the upload for its sender, the same on every
	// attempt to send it: Append stores an upload once per key (see
	// ErrDuplicate). Empty for senders that name none.
	Key string
	// Profile holds the samples with stack, value, time, thread and
	// per-sample labels. For a compacted block it is nil: Load reads it.
	Profile *profile.Profile

	// A compacted block holds many uploads: Uploads counts them (0 for a
	// single upload) and Sources lists their profiles' sources. Its
	// upload-level labels are in the samples' label sets.
	Uploads int
	Sources []string
	// FirstSample and LastSample, for a block, bound its samples' times.
	FirstSample, LastSample int64
	// Values, for a block, lists the values of every label its uploads and
	// samples carry, by name; a label with too many values to list (task
	// ids, say) maps to nil: Load the samples for those. It is nil for a
	// single upload and for blocks written before blocks listed them.
	Values map[string][]string
	// Bounds, for a block or one of its time slices, bounds the values of
	// each label that has too many to list in Values and whose values are
	// all integers (task ids): none of its samples' values lies outside.
	// A bound whose least value is greater than its greatest means no
	// sample has the label. A block's label sets (LoadLabelSets) are the
	// whole block's: these bounds tell a slice's values among them.
	Bounds map[string][2]int64

	// load reads a part of a block or of one of its time slices: its
	// rollup, samples, series, timeline or tables (block.PartRollup, ...); nil
	// for a single upload.
	load func(part int) (*profile.Profile, error)
	// head, for an upload in a store's head, is its rollup, timeline and
	// sample span, computed when a query first asks for them.
	head *headRollup
	// slices, for a compacted block cut into time slices, are the
	// uploads of its slices (Slices).
	slices []*Upload
	// memSize estimates the memory a single upload holds in the head.
	memSize int64
	// node, for an upload read from a segment in the bucket, names the
	// node that stored it: node and ID name an upload across nodes.
	node string
	// wal is where an upload in the head has its log record.
	wal wal.Span
}

// LabelValues returns the values of each label u's samples carry, its
// upload labels included, by name, nil for a label with too many to list:
// a block's Values, or for an upload in the head a list computed the first
// time and kept while it is there. It returns nil when they are not known
// (blocks written before metas listed them). It must not be modified.
func (u *Upload) LabelValues() map[string][]string {
	if u.head != nil {
		return u.head.labelValues(u)
	}
	return u.Values
}

// Compacted reports whether u stands for a compacted block of uploads.
func (u *Upload) Compacted() bool { return u.load != nil }

// Load returns u's profile, reading a compacted block's samples from disk
// (through the store's cache) when they are not in memory.
func (u *Upload) Load() (*profile.Profile, error) {
	if u.load == nil {
		return u.Profile, nil
	}
	return u.load(block.PartSamples)
}

// Slices returns the uploads of the time slices a compacted block is cut
// into, in order, whose samples together are the block's: a query that
// reads all of a large block's samples can read them one slice at a time,
// each through the cache, rather than all at once (Load). It returns nil
// for an upload, a block that is not sliced, and a slice.
func (u *Upload) Slices() []*Upload { return u.slices }

// LoadLabelSets returns a profile holding the label sets of u's samples,
// for label queries: an upload's profile, or a block's samples; for a
// block cut into time slices, or one of its slices, the block's tables,
// read without the samples, whose label sets (all but the empty one) are
// those of all the block's samples, and which has no samples. It must not
// be modified.
func (u *Upload) LoadLabelSets() (*profile.Profile, error) {
	if u.load == nil {
		return u.Profile, nil
	}
	return u.load(block.PartTables)
}

// LoadTimeline returns the timeline of a compacted block, of one of its
// time slices, or of an upload in a store's head: its samples summed over
// stacks and threads, with the labels in RollupDropped removed, at their
// times (an upload's to TimelineResolution), which is what a time series
// needs when it filters on no frame, thread or dropped label. An upload's
// is computed when first asked for and kept while it is in the head,
// counted in the head's memory. Blocks written before blocks had one, and
// other uploads, have none: nil. It must not be modified.
func (u *Upload) LoadTimeline() (*profile.Profile, error) {
	switch {
	case u.load != nil:
		return u.load(block.PartTimeline)
	case u.head != nil:
		return u.head.timeline(u.Profile), nil
	}
	return nil, nil
}

// TimelineResolution is the resolution (ns) an upload in the head keeps
// its timeline's times to, where its samples keep theirs exactly: a series
// whose step and range bounds it divides reads the timeline as it would
// the samples. 0 for a block, whose timeline keeps its samples' times.
func (u *Upload) TimelineResolution() int64 {
	if u.head == nil {
		return 0
	}
	return u.head.res
}

// LoadSeries returns u's metric series (GC pauses, CPU load, heap...), each
// with its upload's labels, reading a compacted block's from disk. They
// must not be modified.
func (u *Upload) LoadSeries() ([]profile.Series, error) {
	if u.load == nil {
		if u.Profile == nil || len(u.Profile.Series) == 0 {
			return nil, nil
		}
		out := make([]profile.Series, len(u.Profile.Series))
		for i, s := range u.Profile.Series {
			s.Labels = u.Profile.Labels.Merge(s.Labels)
			out[i] = s
		}
		return out, nil
	}
	p, err := u.load(block.PartSeries)
	if err != nil {
		return nil, err
	}
	return p.Series, nil
}

// LoadRollup returns the rollup of a compacted block, or of an upload in
// a store's head: its samples summed over time and threads, with the
// labels in RollupDropped removed, which is what a flame graph needs when
// the query covers all its samples (SampleSpan) and matches no dropped
// label. An upload's is computed when first asked for and kept while it
// is in the head, counted in the head's memory. Other uploads have none:
// nil. It must not be modified.
func (u *Upload) LoadRollup() (*profile.Profile, error) {
	switch {
	case u.load != nil:
		return u.load(block.PartRollup)
	case u.head != nil:
		return u.head.rollup(u.Profile), nil
	}
	return nil, nil
}

// LoadThreadRollup returns the thread rollup of a compacted block: its
// samples summed over time per thread, with the labels in
// ThreadRollupDropped removed, which is what a flame graph of some threads
// needs when the query covers all its samples (SampleSpan) and matches no
// dropped label. Other uploads, time slices and blocks written before
// blocks had one have none: nil. It must not be modified.
func (u *Upload) LoadThreadRollup() (*profile.Profile, error) {
	if u.load == nil {
		return nil, nil
	}
	return u.load(block.PartThreads)
}

// HasRollup reports whether LoadRollup has a rollup for u.
func (u *Upload) HasRollup() bool { return u.load != nil || u.head != nil }

// SampleSpan returns the first and last times (Unix ns) of u's samples
// that have one: a block's from its meta, an upload's computed once.
func (u *Upload) SampleSpan() (first, last int64) {
	if u.head == nil {
		return u.FirstSample, u.LastSample
	}
	return u.head.span(u.Profile)
}

// headRollup is the rollup, timeline and sample span of an upload in the
// head, each computed once on demand; their memory is counted in the
// store's head (acct) until the upload leaves it.
type headRollup struct {
	acct *atomic.Int64 // the store's memory of head rollups and timelines
	res  int64         // the resolution of the timeline's times (ns)

	mu          sync.Mutex       // guards the fields below
	p           *profile.Profile // the rollup, once computed
	tl          *profile.Profile // the timeline, once computed
	size        int64            // their estimated memory, counted in acct
	spanned     bool             // whether first and last are computed
	first, last int64            // the samples' first and last times
	dropped     bool             // whether the upload left the head
	// values lists the values of each label the upload's samples carry,
	// as a block's Values does, once computed (valued).
	values map[string][]string
	valued bool
}

func (h *headRollup) rollup(p *profile.Profile) *profile.Profile {
	return h.derive(&h.p, p, block.Rollup)
}

func (h *headRollup) timeline(p *profile.Profile) *profile.Profile {
	return h.derive(&h.tl, p, func(p *profile.Profile) *profile.Profile { return block.Timeline(p, h.res) })
}

// derive returns *dst, built of p the first time and its memory
// counted: it shares p's types, frames and stacks, so its own memory is
// its rows and label sets.
func (h *headRollup) derive(dst **profile.Profile, p *profile.Profile, build func(*profile.Profile) *profile.Profile) *profile.Profile {
	h.mu.Lock()
	defer h.mu.Unlock()
	if *dst == nil {
		*dst = build(p)
		h.count(int64(cap((*dst).Samples))*sampleBytes + int64((*dst).NumLabelSets())*labelSetBytes)
	}
	return *dst
}

// count adds size bytes to the upload's derived memory, and to the head's
// while the upload is in it; under mu.
func (h *headRollup) count(size int64) {
	h.size += size
	if !h.dropped {
		h.acct.Add(size)
	}
}

func (h *headRollup) span(p *profile.Profile) (first, last int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.spanned {
		h.first, h.last = block.SampleSpan(p.Samples)
		h.spanned = true
	}
	return h.first, h.last
}

// labelValues returns the values of each label the samples of upload u
// carry, its upload labels included, as a block's Values lists them:
// computed the first time and its memory counted.
func (h *headRollup) labelValues(u *Upload) map[string][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.valued {
		h.values = block.SampleLabels(u.Profile, u.Labels)
		h.valued = true
		var size int64
		for name, vals := range h.values {
			size += int64(len(name)) + labelSetBytes
			for _, v := range vals {
				size += int64(len(v)) + 16
			}
		}
		h.count(size)
	}
	return h.values
}

// drop is called as the upload leaves the head: its rollup's and
// timeline's memory is no longer the head's.
func (h *headRollup) drop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.dropped {
		h.acct.Add(-h.size)
	}
	h.dropped = true
}

// Estimated bytes of a sample and of a label set in a rollup.
const (
	sampleBytes   = int64(unsafe.Sizeof(profile.Sample{}))
	labelSetBytes = 64
)

// RollupDropped and ThreadRollupDropped are the labels a block's rollup
// and thread rollup leave out (block.RollupDropped): a query that matches
// one of them reads the samples.
var (
	RollupDropped       = block.RollupDropped
	ThreadRollupDropped = block.ThreadRollupDropped
)

// Query selects uploads.
type Query struct {
	// Matchers must all match the upload's labels. A matcher on a label an
	// upload does not carry is left to the sample filter (stage, task and
	// thread labels live on samples).
	Matchers []profile.Matcher
	// SampleMatchers are matchers the stored labels of every sample the
	// caller keeps satisfy: an upload, a block, or a time slice of one,
	// whose samples' values of such a label none can match (as the values
	// its samples carry, or the bounds of integer values a block's meta
	// records, tell) is skipped. A caller that changes samples' labels
	// after reading them leaves matchers on those labels out.
	SampleMatchers []profile.Matcher
	// From and Until bound the uploads' windows (Unix ns); zero is open.
	From, Until int64
}

// Store is where ingested profiles live.
type Store interface {
	// Append stores u for tenant durably before returning. When u.Key is
	// set and an upload of tenant with that key was stored within the
	// store's key window, it stores nothing, sets u.ID to that upload's and
	// returns ErrDuplicate.
	Append(tenant string, u *Upload) error
	// Select calls fn for each upload of tenant that q selects, oldest
	// first. The uploads must not be modified.
	Select(tenant string, q Query, fn func(*Upload) error) error
	// Tenants lists the tenants with data.
	Tenants() []string
	// Stats describes what the store holds, for monitoring.
	Stats() Stats
	// Close flushes and releases the store.
	Close() error
}

// Stats describes what a store holds, over all tenants.
type Stats struct {
	HeadUploads      int   // uploads not compacted yet
	HeadBytes        int64 // their estimated memory
	Blocks           int   // compacted blocks
	BlockUploads     int   // uploads the blocks hold
	Compactions      int64 // blocks written since the store opened
	CompactionErrors int64 // compactions that failed since the store opened
	DiskBytes        int64 // bytes of the store's files: blocks and log segments
	UploadKeys       int   // upload keys remembered (Options.KeyWindow)
	// CompactionTime is the time compactions took since the store opened,
	// failed ones included.
	CompactionTime time.Duration
	// CacheBytes estimates the heap the cache of block parts holds;
	// CacheHits, CacheMisses and CacheEvictions count its lookups and
	// drops since the store opened.
	CacheBytes, CacheHits, CacheMisses, CacheEvictions int64
	// Bucket describes the store's bucket; nil without one.
	Bucket *BucketStats
}

// BucketStats describes a store's work with its bucket.
type BucketStats struct {
	Up          bool  // whether the bucket answered the last request
	Flushes     int64 // head segments shipped since the store opened
	Errors      int64 // requests to the bucket that failed since then
	Compactions int64 // blocks this node wrote in the bucket since then
	Blocks      int   // blocks in the bucket at the last listing
	Segments    int   // segments in the bucket at the last listing
	// BlockUploads and SegmentUploads count the uploads queries read of
	// the blocks and of the segments: those no block holds.
	BlockUploads, SegmentUploads int
}

// UnreachableError is the error of reading a block or segment of the
// bucket that failed (objstore.UnreachableError): a query skips it and
// names it among those it could not read.
type UnreachableError = objstore.UnreachableError

// ErrClosed is returned by a closed store.
var ErrClosed = errors.New("store: closed")

// ErrNotIngesting is returned by Append on a node with a bucket whose
// role takes no uploads (query, compactor): such a node ships nothing,
// and its disk need not outlive it.
var ErrNotIngesting = errors.New("store: this node takes no uploads")

// ErrDuplicate is returned by Append for an upload whose key was stored
// already: a sender's retry of an upload that was stored, its answer lost.
var ErrDuplicate = errors.New("store: an upload with this key is stored already")

// Matches reports whether upload labels ls satisfy the query's matchers;
// matchers on names the upload lacks are not decided here.
func (q Query) Matches(u *Upload) bool {
	if q.From != 0 && u.Until != 0 && u.Until < q.From {
		return false
	}
	if q.Until != 0 && u.From != 0 && u.From >= q.Until {
		return false
	}
	for _, m := range q.Matchers {
		v, ok := u.Labels.Get(m.Name)
		if !ok {
			// A block's upload labels are in its samples' label sets.
			if u.Profile == nil {
				continue
			}
			if pv, ok := u.Profile.Labels.Get(m.Name); ok {
				v = pv
			} else {
				continue
			}
		}
		if !m.Matches(v) {
			return false
		}
	}
	return true
}
