// Package lease is the compactor's lease in a bucket: of the nodes that
// compact a store's bucket, the one that holds it compacts, and no other.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sparkprof/sparkprof/store/objstore"
)

// The compactor's lease is a run of objects Prefix<generation>, each
// the JSON of a record: the lease is the highest generation's. A node
// takes a free or expired lease by writing the next generation with a
// conditional write (Bucket.Write with ifNotExist), which one writer wins
// however many try: S3 and S3-compatible stores (If-None-Match: *), GCS
// (DoesNotExist precondition) and Azure (If-None-Match) make the check and
// the write one atomic step on the server, and a local directory under
// one process's lock. The holder renews by writing its own generation
// again, which no other node writes; it compacts only while the lease it
// last wrote has more than half its time left, so that a holder that
// stalled past the lease stops before another's lease begins, as long as
// clocks agree within half a lease.
const Prefix = "lease/compactor-"

// Lease is a node's hold on the compactor's lease of a bucket.
type Lease struct {
	b    objstore.Bucket
	node string
	ttl  time.Duration
	log  *slog.Logger

	holderOnce sync.Once
	holder     string       // names this process in the lease (holderName)
	until      atomic.Int64 // when the lease it last wrote expires (Unix ns)
}

// New returns node's hold on the lease of bucket b, which lasts ttl
// unless renewed; it holds nothing until Hold takes it.
func New(b objstore.Bucket, node string, ttl time.Duration, log *slog.Logger) *Lease {
	return &Lease{b: b, node: node, ttl: ttl, log: log}
}

// record is the content of a lease generation.
type record struct {
	Holder  string // the node and process holding it
	Expires int64  // Unix ns
}

// holderName names this process in the lease: its node and a random
// process id, so that two processes of one node never share a lease.
func (l *Lease) holderName() string {
	l.holderOnce.Do(func() {
		var b [6]byte
		rand.Read(b[:])
		l.holder = l.node + "/" + hex.EncodeToString(b[:])
	})
	return l.holder
}

// Hold takes or renews the compactor's lease and reports whether this
// process holds it until at least now plus half the lease.
func (l *Lease) Hold(ctx context.Context, now time.Time) (bool, error) {
	me := l.holderName()
	objs, err := l.b.List(ctx, Prefix)
	if err != nil {
		return false, fmt.Errorf("list the lease: %w", err)
	}
	var gen uint64
	var name string
	for _, o := range objs {
		if g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(o.Name, Prefix), ".json"), 10, 64); err == nil && g >= gen {
			gen, name = g, o.Name
		}
	}
	var cur record
	if name != "" {
		data, err := l.b.ReadAll(ctx, name)
		if err != nil && !errors.Is(err, objstore.ErrNotExist) {
			// A read racing the holder's renewal can fail on some stores;
			// once more before giving up the round.
			data, err = l.b.ReadAll(ctx, name)
		}
		if err != nil && !errors.Is(err, objstore.ErrNotExist) {
			return false, fmt.Errorf("read the lease: %w", err)
		}
		if err == nil {
			if err := json.Unmarshal(data, &cur); err != nil {
				return false, fmt.Errorf("lease %s: %w", name, err)
			}
		}
	}
	next := record{Holder: me, Expires: now.Add(l.ttl).UnixNano()}
	data, _ := json.Marshal(next) // a string and a number
	switch {
	case cur.Holder == me:
		if err := l.b.Write(ctx, name, data, false); err != nil {
			return false, fmt.Errorf("renew the lease: %w", err)
		}
	case name != "" && cur.Expires > now.UnixNano():
		return false, nil // another's, and running
	default:
		gen++
		name = fmt.Sprintf("%s%020d.json", Prefix, gen)
		err := l.b.Write(ctx, name, data, true)
		if errors.Is(err, objstore.ErrExists) {
			return false, nil // another node took it first
		}
		if err != nil {
			return false, fmt.Errorf("take the lease: %w", err)
		}
		l.log.Info("store: took the compactor lease", "object", name, "holder", me, "previous", cur.Holder)
		for _, o := range objs { // the generations before
			l.b.Delete(ctx, o.Name)
		}
	}
	l.until.Store(next.Expires)
	return true, nil
}

// Keep renews the compactor's lease every third of its time until
// the stop it returns is called: a compaction can take longer than the
// lease (a bucket's worth of segments after an outage, a busy machine),
// and a holder whose lease ran out midway would write blocks another
// holder writes again. The context it returns ends when a renewal finds
// another node holding the lease; a renewal that fails leaves the lease
// to run short, which Valid tells.
func (l *Lease) Keep(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(l.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if held, err := l.Hold(ctx, now); err == nil && !held {
					l.log.Warn("store: another node took the compactor lease; this compaction stops")
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}

// ErrShort stops a compaction whose lease is running out.
var ErrShort = errors.New("the compactor lease ran short; the rest waits for the next round")

// Valid reports whether the lease this process holds has more than half
// its time left at now.
func (l *Lease) Valid(now time.Time) bool {
	return l.until.Load()-int64(l.ttl)/2 > now.UnixNano()
}
