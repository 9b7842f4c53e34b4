package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
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

// stalledBody is a reader that says when it is read, and then blocks
// until it is closed: senders that sent their headers only.
type stalledBody struct {
	reading chan struct{}
	closed  chan struct{}
}

func (f *stalledBody) Read([]byte) (int, error) {
	f.reading <- struct{}{} // once per sender: ReadBody returns the error below
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
	stalled := &stalledBody{reading: make(chan struct{}, senders), closed: make(chan struct{})}
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

// slowBody is a body that sends n bytes, says so, and then waits until it
// is interrupted: a sender at the least rate the server takes.
type slowBody struct {
	left        int
	sent        chan struct{}
	interrupted chan struct{}
}

func newSlowBody(n int) *slowBody {
	return &slowBody{left: n, sent: make(chan struct{}), interrupted: make(chan struct{})}
}

func (s *slowBody) Read(b []byte) (int, error) {
	if s.left > 0 {
		n := min(len(b), s.left)
		s.left -= n
		return n, nil
	}
	close(s.sent)
	<-s.interrupted
	return 0, errors.New("read interrupted")
}

func (s *slowBody) Interrupt() { close(s.interrupted) }

// Bodies that arrive slowly yield the ingest memory to one that arrives
// faster, and are answered unavailable, to retry (B3: 100 bodies at the
// least rate the server takes filled the 1 GiB ingest memory after four
// minutes, and every other upload got 503). The budget's clock is the
// test's, so that the slow ones have been arriving long enough without
// the test waiting.
func TestSlowBodiesYield(t *testing.T) {
	const budget = 1 << 20
	p := newBudgetPipeline(t, budget)
	now := time.Now()
	p.mem.mu.Lock()
	p.mem.now = func() time.Time { return now }
	p.mem.mu.Unlock()
	// Each slow body holds a buffer of 128 KiB, and the one of 64 KiB it
	// grew out of: five hold all but 64 KiB of the budget.
	const slowBodies = 5
	var slow []*slowBody
	var errs []chan error
	for range slowBodies {
		s, e := newSlowBody(100<<10), make(chan error, 1)
		slow, errs = append(slow, s), append(errs, e)
		go func() {
			_, err := p.ReadBody(s, -1, 64<<20)
			e <- err
		}()
		select {
		case <-s.sent:
		case err := <-e:
			t.Fatalf("slow body %d: %v", len(slow), err)
		}
	}
	if inUse, _, _ := p.Memory(); inUse != slowBodies*192<<10 {
		t.Fatalf("%d slow bodies hold %d KiB, want %d", slowBodies, inUse>>10, slowBodies*192)
	}
	p.mem.mu.Lock()
	now = now.Add(time.Minute) // they have been arriving for a minute
	p.mem.mu.Unlock()
	fast := randomStacks(100 << 10)
	b, err := p.ReadBody(bytes.NewReader(fast), int64(len(fast)), 64<<20)
	if err != nil {
		t.Fatalf("a body sent at once while slow ones hold the ingest memory: %v", err)
	}
	if !bytes.Equal(b.Data, fast) {
		t.Error("the body read is not the one sent")
	}
	b.Free()
	yielded := 0
	for i, s := range slow {
		select {
		case <-s.interrupted:
			yielded++
			if err := <-errs[i]; errkind.Of(err) != errkind.Unavailable || errkind.RetryAfter(err) == 0 {
				t.Errorf("a slow body that yielded: %v, want unavailable with a time to retry", err)
			}
		default:
			s.Interrupt()
			<-errs[i]
		}
	}
	if yielded == 0 || yielded == len(slow) {
		t.Errorf("%d of %d slow bodies yielded, want some, as many as the fast one needed", yielded, len(slow))
	}
	if inUse, peak, _ := p.Memory(); inUse != 0 || peak > budget {
		t.Errorf("ingest memory after: %d in use, peak %d, want 0 and at most %d", inUse, peak, budget)
	}
}
