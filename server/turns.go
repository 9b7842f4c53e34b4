package server

import (
	"context"
	"runtime"

	"github.com/sparkprof/sparkprof/internal/errkind"
)

// queryClass says whether an endpoint is a query, and how heavy.
type queryClass int

const (
	notQuery queryClass = iota
	// quickQuery is a flame graph, a render, labels: quick, and what a
	// dashboard waits for.
	quickQuery
	// heavyQuery is an export, a diff, a series: it may read every sample
	// of its range, and takes at most half the turns.
	heavyQuery
)

// queryTurns bounds the queries answered at once: a query waits for one
// of all's turns, a heavy one first for one of heavy's, so that heavy
// queries never hold every turn and quick ones always find one soon.
type queryTurns struct {
	all, heavy chan struct{}
}

func newQueryTurns(n int) *queryTurns {
	if n <= 0 {
		n = 2 * runtime.GOMAXPROCS(0)
	}
	return &queryTurns{all: make(chan struct{}, n), heavy: make(chan struct{}, max(1, n/2))}
}

// take waits for a turn, and returns the function that gives it back. It
// fails with errkind.Unavailable when ctx ends first (the client gave
// up).
func (q *queryTurns) take(ctx context.Context, heavy bool) (release func(), err error) {
	if heavy {
		select {
		case q.heavy <- struct{}{}:
		case <-ctx.Done():
			return nil, errkind.Errorf(errkind.Unavailable, "waited for a turn among the heavy queries in progress: %w", ctx.Err())
		}
	}
	select {
	case q.all <- struct{}{}:
	case <-ctx.Done():
		if heavy {
			<-q.heavy
		}
		return nil, errkind.Errorf(errkind.Unavailable, "waited for a turn among the queries in progress: %w", ctx.Err())
	}
	return func() {
		<-q.all
		if heavy {
			<-q.heavy
		}
	}, nil
}
