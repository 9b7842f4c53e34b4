package ingest

import (
	"context"
	"errors"
	"io"
	"math/bits"
	"sync"

	"github.com/sparkprof/sparkprof/internal/errkind"
)

// Body is an upload's body read into memory drawn from the ingest memory
// (Config.MaxMemory), as the bytes arrive; what its upload's decoding
// holds is drawn with it (Profile.Body). Free gives it all back.
type Body struct {
	Data    []byte
	res     *reservation
	arrival *arrival // while ReadBody reads it
}

// Free returns the body's memory, and that of what was decoded from it,
// to the ingest memory, and its buffer to the pool; Data must not be
// used after.
func (b *Body) Free() {
	putBuffer(b.Data)
	b.res.free()
	b.Data = nil
}

// Reserve draws n bytes more of the ingest memory for what the body's
// request holds beside it (a message unmarshalled from it), until Free.
// Errors are those of ReadBody's.
func (b *Body) Reserve(n int64, what string) error { return b.res.reserve(n, what) }

// ErrBodyTooLarge is the error of a body past ReadBody's limit, as
// errkind.TooLarge.
var ErrBodyTooLarge = errors.New("body too large")

// Body buffers come in classes of powers of two, from minBuffer to
// maxKeptBody, each class with a pool: a fresh buffer costs its pages'
// faults on every upload. Nothing decoded from a body refers to its
// bytes.
const (
	minBuffer     = 64 << 10
	bufferClasses = 9 // minBuffer to 16 MiB
	maxKeptBody   = minBuffer << (bufferClasses - 1)
)

var bodyBuffers [bufferClasses]sync.Pool

// bufferClass returns the class of buffers of capacity n, false when n is
// no class's size.
func bufferClass(n int) (int, bool) {
	if n < minBuffer || n > maxKeptBody || n&(n-1) != 0 {
		return 0, false
	}
	return bits.TrailingZeros(uint(n / minBuffer)), true
}

// getBuffer returns an empty buffer of capacity n, a pooled one when n is
// a class's size.
func getBuffer(n int64) []byte {
	if c, ok := bufferClass(int(n)); ok {
		if b, ok := bodyBuffers[c].Get().(*[]byte); ok {
			return (*b)[:0]
		}
	}
	return make([]byte, 0, n)
}

// putBuffer gives b to its class's pool, if it is of one.
func putBuffer(b []byte) {
	if c, ok := bufferClass(cap(b)); ok {
		b = b[:0]
		bodyBuffers[c].Put(&b)
	}
}

// ReadBody reads a body of at most limit bytes from r, of size bytes if
// size is known (a Content-Length; else -1), drawing the memory it fills
// from the ingest memory as the bytes arrive: a buffer of minBuffer
// bytes (or size, when smaller) before the first, and each doubling of
// it once it is full (so a body holds about twice its size while it is
// read: the buffers it grew out of are garbage not yet collected). A
// sender that announces a large body, or none, and sends it slowly,
// holds what it sent. Errors: errkind.TooLarge past limit (wrapping
// ErrBodyTooLarge), errkind.Unavailable when the ingest memory is spent
// or a faster body needed the memory of this slow one (retry), else
// errkind.BadInput for a body that broke off.
func (p *Pipeline) ReadBody(r io.Reader, size, limit int64) (*Body, error) {
	if size > limit {
		return nil, errkind.Errorf(errkind.TooLarge, "body of %d bytes, larger than %d: %w", size, limit, ErrBodyTooLarge)
	}
	b := &Body{res: &reservation{b: p.mem}}
	p.mem.arrive(b, r)
	defer p.mem.arrived(b)
	first := int64(minBuffer)
	if size >= 0 {
		first = min(size+1, first) // one byte more, so that the EOF is seen without growing
	}
	if err := b.grow(first); err != nil {
		b.Free()
		return nil, err
	}
	for {
		n, err := r.Read(b.Data[len(b.Data):cap(b.Data)])
		b.Data = b.Data[:len(b.Data)+n]
		b.arrival.read.Add(int64(n))
		switch {
		case b.arrival.yielded.Load():
			b.Free()
			return nil, b.yieldedError()
		case int64(len(b.Data)) > limit:
			b.Free()
			return nil, errkind.Errorf(errkind.TooLarge, "body larger than %d bytes: %w", limit, ErrBodyTooLarge)
		case err == io.EOF:
			return b, nil
		case err != nil:
			b.Free()
			if errkind.Of(err) != errkind.Internal {
				return nil, err
			}
			return nil, errkind.Errorf(errkind.BadInput, "reading body: %w", err)
		}
		if len(b.Data) == cap(b.Data) {
			if err := b.grow(min(2*int64(cap(b.Data)), limit+1)); err != nil {
				b.Free()
				return nil, err
			}
		}
	}
}

// grow moves the body into a buffer of capacity n, reserving it from the
// ingest memory first; when the ingest memory is spent, bodies arriving
// slowly yield theirs (yieldSlowest). The buffer it grew out of is
// garbage, and stays reserved until the body is freed: memory the
// runtime has not collected is memory still.
func (b *Body) grow(n int64) error {
	for {
		err := b.res.reserve(n, "reading the body")
		if err == nil {
			break
		}
		if errkind.Of(err) != errkind.Unavailable || !b.res.b.yieldSlowest(b) {
			return err
		}
	}
	if b.arrival.yielded.Load() {
		return b.yieldedError()
	}
	b.Data = append(getBuffer(n), b.Data...)
	return nil
}

// bodyKey is the context key of a request's body (WithBody).
type bodyKey struct{}

// WithBody returns ctx carrying the body of its request, read by
// ReadBody: Push draws the memory of the push's decoding with it.
func WithBody(ctx context.Context, b *Body) context.Context {
	return context.WithValue(ctx, bodyKey{}, b)
}

// bodyOf returns the body ctx carries (WithBody), nil if none.
func bodyOf(ctx context.Context) *Body {
	b, _ := ctx.Value(bodyKey{}).(*Body)
	return b
}
