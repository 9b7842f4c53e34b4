package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/store/objstore"
)

// The compactor's lease is a run of objects leasePrefix<generation>, each
// the JSON of a leaseRecord: the lease is the highest generation's. A node
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
const leasePrefix = "lease/compactor-"

// leaseRecord is the content of a lease generation.
type leaseRecord struct {
	Holder  string // the node and process holding it
	Expires int64  // Unix ns
}

// leaseHolder names this store in the lease: its node and a random
// process id, so that two processes of one node never share a lease.
func (r *remote) leaseHolder() string {
	r.holderOnce.Do(func() {
		var b [6]byte
		rand.Read(b[:])
		r.holder = r.node + "/" + hex.EncodeToString(b[:])
	})
	return r.holder
}

// holdLease takes or renews the compactor's lease and reports whether
// this store holds it until at least now plus half the lease.
func (db *DB) holdLease(ctx context.Context, now time.Time) (bool, error) {
	r := db.remote
	me := r.leaseHolder()
	objs, err := r.b.List(ctx, leasePrefix)
	if err != nil {
		return false, fmt.Errorf("list the lease: %w", err)
	}
	var gen uint64
	var name string
	for _, o := range objs {
		if g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(o.Name, leasePrefix), ".json"), 10, 64); err == nil && g >= gen {
			gen, name = g, o.Name
		}
	}
	var cur leaseRecord
	if name != "" {
		data, err := r.b.ReadAll(ctx, name)
		if err != nil && !errors.Is(err, objstore.ErrNotExist) {
			// A read racing the holder's renewal can fail on some stores;
			// once more before giving up the round.
			data, err = r.b.ReadAll(ctx, name)
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
	next := leaseRecord{Holder: me, Expires: now.Add(db.opts.LeaseTTL).UnixNano()}
	data, _ := json.Marshal(next) // a string and a number
	switch {
	case cur.Holder == me:
		if err := r.b.Write(ctx, name, data, false); err != nil {
			return false, fmt.Errorf("renew the lease: %w", err)
		}
	case name != "" && cur.Expires > now.UnixNano():
		return false, nil // another's, and running
	default:
		gen++
		name = fmt.Sprintf("%s%020d.json", leasePrefix, gen)
		err := r.b.Write(ctx, name, data, true)
		if errors.Is(err, objstore.ErrExists) {
			return false, nil // another node took it first
		}
		if err != nil {
			return false, fmt.Errorf("take the lease: %w", err)
		}
		db.log.Info("store: took the compactor lease", "object", name, "holder", me, "previous", cur.Holder)
		for _, o := range objs { // the generations before
			r.b.Delete(ctx, o.Name)
		}
	}
	r.leaseUntil.Store(next.Expires)
	return true, nil
}

// keepLease renews the compactor's lease every third of its time until
// the stop it returns is called: a compaction can take longer than the
// lease (a bucket's worth of segments after an outage, a busy machine),
// and a holder whose lease ran out midway would write blocks another
// holder writes again. The context it returns ends when a renewal finds
// another node holding the lease; a renewal that fails leaves the lease
// to run short, which leaseValid tells.
func (db *DB) keepLease(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(db.opts.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if held, err := db.holdLease(ctx, now); err == nil && !held {
					db.log.Warn("store: another node took the compactor lease; this compaction stops")
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

// errLeaseShort stops a compaction whose lease is running out.
var errLeaseShort = errors.New("the compactor lease ran short; the rest waits for the next round")

// leaseValid reports whether the lease this store holds has more than
// half its time left at now.
func (db *DB) leaseValid(now time.Time) bool {
	return db.remote.leaseUntil.Load()-int64(db.opts.LeaseTTL)/2 > now.UnixNano()
}
