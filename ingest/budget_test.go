package ingest

import (
	"bytes"
	"io"
	"log/slog"
	"testing"

	"github.com/sparkprof/sparkprof/internal/errkind"
)

// newBudgetPipeline returns a pipeline of maxMemory bytes of ingest
// memory, into a new store.
func newBudgetPipeline(t *testing.T, maxMemory int64) *Pipeline {
	t.Helper()
	_, db, apps := newTestPipeline(t)
	return New(Config{Store: db, Apps: apps, MaxMemory: maxMemory, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// stalledBody is a reader that says when it is first read, and then
// blocks until it is closed: a sender that sent its headers only.
type stalledBody struct {
	reading chan struct{}
	closed  chan struct{}
}

func (f *stalledBody) Read([]byte) (int, error) {
	select {
	case f.reading <- struct{}{}:
	default:
	}
	<-f.closed
	return 0, io.ErrUnexpectedEOF
}

// Senders that announce large bodies and send nothing hold no more of the
// ingest memory than a first read's buffer each, even when the pool has
// a buffer of their announced size (B3: 80 such connections held 1.07 GB).
func TestBodyReservedAsItArrives(t *testing.T) {
	p := newBudgetPipeline(t, 1<<30)
	big := bytes.Repeat([]byte("x"), 16<<20)
	b, err := p.ReadBody(bytes.NewReader(big), int64(len(big)), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	b.Free() // its buffer goes to the pool
	const senders = 8
	stalled := &stalledBody{reading: make(chan struct{}), closed: make(chan struct{})}
	errs := make(chan error, senders)
	for range senders {
		go func() {
			_, err := p.ReadBody(stalled, int64(len(big)), 64<<20)
			errs <- err
		}()
	}
	for range senders {
		<-stalled.reading
	}
	inUse, _, _ := p.Memory()
	close(stalled.closed)
	for range senders {
		if err := <-errs; errkind.Of(err) != errkind.BadInput {
			t.Errorf("a body that broke off: %v, want a bad-input error", err)
		}
	}
	if inUse > senders*minBuffer {
		t.Errorf("%d senders that sent no byte of their 16 MiB hold %d KiB of ingest memory, want at most %d KiB", senders, inUse>>10, senders*minBuffer>>10)
	}
	if inUse, _, _ := p.Memory(); inUse != 0 {
		t.Errorf("%d bytes still reserved after every body ended", inUse)
	}
}
