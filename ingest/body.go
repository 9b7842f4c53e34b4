package ingest

import (
	"errors"
	"io"
	"sync"

	"github.com/sparkprof/sparkprof/internal/errkind"
)

// Body is an upload's body read into memory drawn from the ingest memory
// (Config.MaxMemory); Free gives the memory back.
type Body struct {
	Data []byte
	res  *reservation
	buf  *[]byte // the pooled buffer Data is in
}

// Free returns the body's memory to the ingest memory and its buffer to
// the pool; Data must not be used after.
func (b *Body) Free() {
	if b.buf != nil {
		*b.buf = b.Data[:0]
		if cap(b.Data) <= maxKeptBody {
			bodyBuffers.Put(b.buf)
		}
		b.buf = nil
	}
	b.res.free()
	b.Data = nil
}

// ErrBodyTooLarge is the error of a body past ReadBody's limit, as
// errkind.TooLarge.
var ErrBodyTooLarge = errors.New("body too large")

// bodyBuffers holds upload bodies' buffers between uploads: a fresh buffer
// costs its pages' faults on every upload. Nothing decoded from a body
// refers to its bytes.
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxKeptBody bounds the buffers bodyBuffers keeps: a rare huge upload's is
// dropped.
const maxKeptBody = 16 << 20

// firstRead bounds the memory a body's reading reserves before its bytes
// come: a sender that announces a large body and sends it slowly holds
// what it sent, not what it announced.
const firstRead = 1 << 20

// ReadBody reads a body of at most limit bytes from r, of size bytes if
// size is known (a Content-Length; else -1), drawing the memory it fills
// from the ingest memory as the bytes arrive. Errors: errkind.TooLarge
// past limit (wrapping ErrBodyTooLarge), errkind.Unavailable when the
// ingest memory is spent (retry), else errkind.BadInput for a body that
// broke off.
func (p *Pipeline) ReadBody(r io.Reader, size, limit int64) (*Body, error) {
	if size > limit {
		return nil, errkind.Errorf(errkind.TooLarge, "body of %d bytes, larger than %d: %w", size, limit, ErrBodyTooLarge)
	}
	b := &Body{res: &reservation{b: p.mem}, buf: bodyBuffers.Get().(*[]byte)}
	want := int64(firstRead)
	if size >= 0 {
		want = min(size+1, firstRead) // one byte more, so that the EOF is seen without growing
	}
	buf := (*b.buf)[:0]
	if int64(cap(buf)) < want || int64(cap(buf)) > 2*max(want, size+1) {
		buf = nil // a buffer of the wrong size: a fresh one
	}
	if err := b.grow(&buf, want); err != nil {
		b.Free()
		return nil, err
	}
	for {
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			b.Data = buf
			b.Free()
			return nil, errkind.Errorf(errkind.TooLarge, "body larger than %d bytes: %w", limit, ErrBodyTooLarge)
		}
		if err == io.EOF {
			b.Data = buf
			return b, nil
		}
		if err != nil {
			b.Data = buf
			b.Free()
			return nil, errkind.Errorf(errkind.BadInput, "reading body: %w", err)
		}
		if len(buf) == cap(buf) {
			if err := b.grow(&buf, min(2*int64(cap(buf)), limit+1)); err != nil {
				b.Data = buf
				b.Free()
				return nil, err
			}
		}
	}
}

// grow makes *buf's capacity at least n bytes, and reserves its capacity
// from the ingest memory.
func (b *Body) grow(buf *[]byte, n int64) error {
	c := max(int64(cap(*buf)), n)
	if err := b.res.reserve(c-b.res.n, "reading the body"); err != nil {
		return err
	}
	if int64(cap(*buf)) < n {
		next := make([]byte, len(*buf), n)
		copy(next, *buf)
		*buf = next
	}
	return nil
}
