package ingest

import (
	"fmt"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/errkind"
)

// budget is the ingest memory budget (Config.MaxMemory): the estimated
// memory of what uploads hold while they are read, inflated, decoded and
// stored — bodies, decompressed data, decoded profiles — drawn from as it
// is needed, so that uploads at once, honest or gzip bombs, cannot hold
// more together.
type budget struct {
	mu       sync.Mutex
	limit    int64
	used     int64
	peak     int64              // the most used at once
	arriving map[*Body]struct{} // the bodies ReadBody is reading
	now      func() time.Time
}

// newBudget returns a budget of limit bytes.
func newBudget(limit int64) *budget {
	return &budget{limit: limit, arriving: map[*Body]struct{}{}, now: time.Now}
}

// budgetRetry is how long a sender refused for a spent budget is told to
// wait: uploads in progress take milliseconds to tens of them.
const budgetRetry = 2 * time.Second

// decodeFactor estimates the memory a profile holds while it is decoded,
// as a multiple of its decompressed size: the live heap of decoding the
// corpus's JFR recordings was 3.7 to 12.6 times their size
// (BENCHMARKS.md, "Ingest memory").
const decodeFactor = 8

// reservation is memory drawn from a budget, returned by free.
type reservation struct {
	b *budget
	n int64
}

// reserve draws n bytes more into r. Past the budget it fails with an
// errkind.Unavailable error that says when to retry, or errkind.TooLarge
// when the whole budget would not hold what r would hold: what is the
// whole budget cannot ever be had.
func (r *reservation) reserve(n int64, what string) error {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.n+n > b.limit {
		return errkind.Errorf(errkind.TooLarge, "%s needs %s of memory with what this upload holds already, more than the server's ingest memory (%s, serve --ingest-memory)",
			what, english.Bytes(r.n+n), english.Bytes(b.limit))
	}
	if b.used+n > b.limit {
		return &errkind.Error{Kind: errkind.Unavailable, RetryAfter: budgetRetry,
			Err: fmt.Errorf("%s needs %s of memory, and the uploads in progress hold the server's ingest memory (%s of %s, serve --ingest-memory); retry in %v",
				what, english.Bytes(n), english.Bytes(b.used), english.Bytes(b.limit), budgetRetry)}
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	r.n += n
	return nil
}

// resize makes r hold n bytes, whatever the budget's use: what is already
// allocated (a decoded profile's actual size) is counted as it is.
func (r *reservation) resize(n int64) {
	r.b.mu.Lock()
	r.b.used += n - r.n
	r.b.peak = max(r.b.peak, r.b.used)
	r.n = n
	r.b.mu.Unlock()
}

// free returns what r holds to the budget.
func (r *reservation) free() { r.resize(0) }

// inUse returns the bytes reserved now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Memory returns the ingest memory (Config.MaxMemory) reserved now, the
// most reserved at once since the pipeline started, and the limit.
func (p *Pipeline) Memory() (inUse, peak, limit int64) {
	p.mem.mu.Lock()
	defer p.mem.mu.Unlock()
	return p.mem.used, p.mem.peak, p.mem.limit
}
