package ingest

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/errkind"
)

// yieldAfter is how long a body must have been arriving before it may be
// made to yield its memory (yieldSlowest): an upload on a sound network
// arrives in less.
const yieldAfter = time.Second

// arrival is what the budget knows of a body still arriving: since when,
// how much of it came, and how to stop its reading.
type arrival struct {
	start   time.Time
	read    atomic.Int64
	yielded atomic.Bool
	// interrupt, if not nil, makes the body's blocked read return (the
	// reader's Interrupt method).
	interrupt func()
}

// Interrupter is a body reader whose blocked Read can be made to return
// at once, with an error: a server's request body, whose connection's
// read deadline it moves to now. ReadBody interrupts a body that yields
// its memory.
type Interrupter interface {
	Interrupt()
}

// arrive notes that b is arriving, read from r.
func (m *budget) arrive(b *Body, r any) {
	b.arrival = &arrival{start: m.now()}
	if i, ok := r.(Interrupter); ok {
		b.arrival.interrupt = i.Interrupt
	}
	m.mu.Lock()
	m.arriving[b] = struct{}{}
	m.mu.Unlock()
}

// arrived notes that b is no longer arriving.
func (m *budget) arrived(b *Body) {
	m.mu.Lock()
	delete(m.arriving, b)
	m.mu.Unlock()
}

// yieldSlowest makes the body that arrives the most slowly, of those
// arriving for yieldAfter at least, other than except, give back the
// memory it holds: its reading is interrupted, and it is answered as
// unavailable, to retry. It reports whether a body yielded. So bodies
// sent slowly, at the least rate the server takes, cannot hold the
// ingest memory for the minutes they take and refuse every other
// upload: a body that arrives faster takes their place.
func (m *budget) yieldSlowest(except *Body) bool {
	now := m.now()
	m.mu.Lock()
	var slowest *Body
	var rate float64
	for b := range m.arriving {
		age := now.Sub(b.arrival.start)
		if b == except || b.res.n == 0 || age < yieldAfter {
			continue
		}
		if r := float64(b.arrival.read.Load()) / age.Seconds(); slowest == nil || r < rate {
			slowest, rate = b, r
		}
	}
	if slowest != nil {
		delete(m.arriving, slowest)
		slowest.arrival.yielded.Store(true)
		m.used -= slowest.res.n
		slowest.res.n = 0
	}
	m.mu.Unlock()
	if slowest == nil {
		return false
	}
	if slowest.arrival.interrupt != nil {
		slowest.arrival.interrupt()
	}
	return true
}

// yieldedError is the error of a body that yielded its memory.
func (b *Body) yieldedError() error {
	age := time.Since(b.arrival.start)
	return &errkind.Error{Kind: errkind.Unavailable, RetryAfter: budgetRetry,
		Err: fmt.Errorf("the body arrived too slowly for the server's ingest memory (%s in %v), which a faster upload needed; retry in %v",
			english.Bytes(b.arrival.read.Load()), age.Round(time.Millisecond), budgetRetry)}
}
