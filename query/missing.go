package query

import (
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/sparkprof/sparkprof/store"
)

// Missing collects the blocks of a bucket a query could not read (the
// bucket is down, or the block went away): the query answers from the
// rest, and its answer names them.
type Missing struct {
	mu    sync.Mutex
	names []string
}

// Names returns the objects of the blocks that could not be read, sorted,
// each once; nil when every block was read.
func (m *Missing) Names() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.names)
	slices.Sort(out)
	return slices.Compact(out)
}

// skip reports whether err, reading an upload of a query that collects
// into m, is a block of the bucket that could not be read, and records it:
// the query goes on without it.
func (m *Missing) skip(err error, log *slog.Logger) bool {
	var ue *store.UnreachableError
	if m == nil || !errors.As(err, &ue) {
		return false
	}
	m.mu.Lock()
	m.names = append(m.names, ue.Object)
	m.mu.Unlock()
	log.Warn("query: a block of the bucket could not be read; the answer leaves it out", "object", ue.Object, "err", ue.Err)
	return true
}
