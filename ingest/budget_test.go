package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/errkind"
)

// newBudgetPipeline returns a pipeline of maxMemory bytes of ingest
// memory, into a new store.
func newBudgetPipeline(t *testing.T, maxMemory int64) *Pipeline {
	t.Helper()
	_, db, apps := newTestPipeline(t)
	return New(Config{Store: db, Apps: apps, MaxMemory: maxMemory, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// gzipped returns data gzipped.
func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// randomStacks returns folded stacks of n bytes or a little more, of
// frame names that compress about twofold.
func randomStacks(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "main;f%x;g%x;h%x %d\n", r.Uint64(), r.Uint32(), r.Uint32(), 1+r.IntN(9))
	}
	return b.Bytes()
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

// A gzip stream cut short is refused as such, holding what it inflated,
// not the size its last four bytes, taken for its trailer, would say (B5:
// a 100-byte body reserved up to 512 MiB, or was answered "empty body").
func TestTruncatedGzip(t *testing.T) {
	p := newBudgetPipeline(t, 1<<30)
	gz := gzipped(t, randomStacks(1<<20))
	cut := 0
	for n := 100; n < len(gz); n++ {
		if binary.LittleEndian.Uint32(gz[n-4:n]) > 64<<20 {
			cut = n // its last four bytes read as more than 64 MiB
			break
		}
	}
	if cut == 0 {
		t.Fatal("no cut of the stream whose last four bytes say more than 64 MiB")
	}
	_, err := p.Decode(Profile{Source: "upload", Format: "folded", Data: gz[:cut]})
	if errkind.Of(err) != errkind.Unprocessable || !strings.Contains(err.Error(), "gzip stream is truncated") {
		t.Errorf("a gzip stream cut at %d of its %d bytes: %v, want unprocessable, saying it is truncated", cut, len(gz), err)
	}
	if _, peak, _ := p.Memory(); peak > 1<<20 {
		t.Errorf("decoding a %d-byte stream cut short reserved %d KiB at its peak, want at most 1 MiB", cut, peak>>10)
	}
}

// An upload that the whole ingest memory could never hold, its body
// counted with its inflating and decoding, is too large (413), not to be
// retried (B4: it was answered 503 with Retry-After on an idle server, so
// an agent retried it for ever).
func TestUploadThatCanNeverFit(t *testing.T) {
	stacks := randomStacks(1 << 20)
	gz := gzipped(t, stacks)
	// The inflated stacks and their decoding (decodeFactor times them)
	// fit, the body beside them does not.
	limit := int64(decodeFactor+1)*int64(len(stacks)) + int64(len(gz))/2
	p := newBudgetPipeline(t, limit)
	body, err := p.ReadBody(bytes.NewReader(gz), int64(len(gz)), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Free()
	_, err = p.Ingest("", Profile{Source: "upload", Format: "folded", Data: body.Data, Body: body, SampleRate: 100}, time.Now())
	if errkind.Of(err) != errkind.TooLarge || errkind.RetryAfter(err) != 0 {
		t.Errorf("%d bytes of gzip inflating to %d, with %d bytes of ingest memory: %v (retry after %v), want too large, not to retry",
			len(gz), len(stacks), limit, err, errkind.RetryAfter(err))
	}
}
