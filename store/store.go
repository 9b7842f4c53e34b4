// Package store keeps uploaded profiles: crash-safe on disk, indexed in
// memory, behind the Store interface so that a distributed backend can
// replace the embedded one without touching ingest or query code.
package store

import (
	"errors"
	"time"

	"github.com/sparkprof/sparkprof/profile"
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

	// load reads a block's rollup or samples (partRollup, partSamples);
	// nil for a single upload.
	load func(part int) (*profile.Profile, error)
	// memSize estimates the memory a single upload holds in the head.
	memSize int64
}

// Compacted reports whether u stands for a compacted block of uploads.
func (u *Upload) Compacted() bool { return u.load != nil }

// Load returns u's profile, reading a compacted block's samples from disk
// (through the store's cache) when they are not in memory.
func (u *Upload) Load() (*profile.Profile, error) {
	if u.load == nil {
		return u.Profile, nil
	}
	return u.load(partSamples)
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
	p, err := u.load(partSeries)
	if err != nil {
		return nil, err
	}
	return p.Series, nil
}

// LoadRollup returns a compacted block's rollup: its samples summed over
// time and threads, with the labels in RollupDropped removed, which is
// what a flame graph needs when the query covers the whole block and
// matches no dropped label. A single upload has none: nil.
func (u *Upload) LoadRollup() (*profile.Profile, error) {
	if u.load == nil {
		return nil, nil
	}
	return u.load(partRollup)
}

// Query selects uploads.
type Query struct {
	// Matchers must all match the upload's labels. A matcher on a label an
	// upload does not carry is left to the sample filter (stage, task and
	// thread labels live on samples).
	Matchers []profile.Matcher
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
}

// ErrClosed is returned by a closed store.
var ErrClosed = errors.New("store: closed")

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
