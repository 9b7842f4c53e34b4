package ingest

import (
	"bytes"
	"errors"
	"io"
	"runtime"

	"github.com/klauspost/compress/gzip"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/errkind"
)

// maxGzipLayers bounds the gzip layers inflate takes off: a .jfr.gz sent
// with Content-Encoding: gzip has two.
const maxGzipLayers = 3

// inflateStart is the buffer inflating starts with; it doubles as the
// data comes.
const inflateStart = 64 << 10

// inflate returns data decompressed when it is gzipped, layer after layer,
// drawing the memory it fills into res as it inflates: the size a gzip
// trailer claims is not believed, so that a bomb, or a stream cut short
// whose last bytes are taken for its size, holds what it inflated, and
// is refused once that passes the size limit (errkind.TooLarge) or the
// ingest memory (errkind.TooLarge when even the whole of it would not
// hold the upload, else errkind.Unavailable). A stream cut short or
// corrupt is errkind.Unprocessable, saying so.
func (p *Pipeline) inflate(res *reservation, data []byte, source string) ([]byte, error) {
	return inflateLimit(res, data, p.cfg.MaxDecodedBytes, source)
}

// Inflate is inflate for a request's body b, or part of it, of at most
// limit bytes inflated, drawing into b's reservation until b is freed.
func (p *Pipeline) Inflate(b *Body, data []byte, limit int64, source string) ([]byte, error) {
	return inflateLimit(b.res, data, limit, source)
}

// inflateLimit is inflate with a limit of the inflated size.
func inflateLimit(res *reservation, data []byte, limit int64, source string) ([]byte, error) {
	held := res.n
	for layer := 0; format.IsGzip(data); layer++ {
		if layer == maxGzipLayers {
			res.resize(held)
			return nil, errkind.Errorf(errkind.Unprocessable, "%s: more than %d nested gzip layers", source, maxGzipLayers)
		}
		out, err := gunzip(res, data, limit, source)
		if err != nil {
			res.resize(held)
			return nil, err
		}
		// The layer before is garbage (or the caller's own bytes).
		res.resize(held + int64(cap(out)))
		data = out
	}
	return data, nil
}

// gunzip inflates one gzip layer, reserving into res each buffer it grows
// to before it fills it, and keeping those it grew out of reserved: they
// are garbage the runtime has not collected yet.
func gunzip(res *reservation, data []byte, limit int64, source string) (_ []byte, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, errkind.Errorf(errkind.Unprocessable, "%s: bad gzip header: %v", source, err)
	}
	var buf []byte
	var inflated int64 // the buffers allocated
	defer func() { collectRefused(inflated, err) }()
	grow := func() error {
		n := min(max(2*int64(cap(buf)), inflateStart), limit+1)
		if err := res.reserve(n, "inflating "+source); err != nil {
			return err
		}
		next := make([]byte, len(buf), n)
		copy(next, buf)
		buf = next // the old buffer is garbage, and stays reserved until the layer ends
		inflated += n
		return nil
	}
	for {
		if len(buf) == cap(buf) {
			if err = grow(); err != nil {
				return nil, err
			}
		}
		var n int
		n, err = zr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case int64(len(buf)) > limit:
			return nil, errkind.Errorf(errkind.TooLarge, "%s: decompresses to more than %s (a gzip bomb, or past the server's limit): %w",
				source, english.Bytes(limit), format.ErrTooLarge)
		case err == io.EOF:
			return buf, nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errkind.Errorf(errkind.Unprocessable, "%s: the gzip stream is truncated: its %d bytes end after %d bytes inflated, before the stream's end; send it whole",
				source, len(data), len(buf))
		case err != nil:
			return nil, errkind.Errorf(errkind.Unprocessable, "%s: corrupt gzip stream, after %d bytes inflated: %v", source, len(buf), err)
		}
	}
}

// collectRefused collects the garbage of an inflating the ingest memory
// refused (a gzip bomb) once it allocated more than collectAfter bytes,
// so that the memory it gives back is memory again before other
// requests reserve it: bombs one after another then hold no more than
// the budget, where the garbage of each would otherwise add up until
// the runtime collected it.
func collectRefused(allocated int64, err error) {
	if k := errkind.Of(err); allocated > collectAfter && (k == errkind.TooLarge || k == errkind.Unavailable) {
		runtime.GC()
	}
}

// collectAfter is how much an inflating refused must have allocated for
// collectRefused to collect it.
const collectAfter = 4 << 20
