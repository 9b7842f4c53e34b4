package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"

	"github.com/sparkprof/sparkprof/internal/readall"
	"github.com/sparkprof/sparkprof/profile"
)

// DefaultMaxSize bounds the decompressed size of one input file, so that a
// gzip bomb fails with a clear error instead of exhausting memory.
const DefaultMaxSize = 2 << 30

var gzipMagic = []byte{0x1f, 0x8b}

// IsGzip reports whether data starts with gzip's magic bytes.
func IsGzip(data []byte) bool { return bytes.HasPrefix(data, gzipMagic) }

// ErrTooLarge is wrapped by the errors of inputs over the size limit.
var ErrTooLarge = errors.New("input over the size limit")

// ReadFile returns the contents of the file at path, gunzipped when it
// starts with the gzip magic (whatever its name), failing when the result
// would exceed max bytes (DefaultMaxSize when max <= 0).
func ReadFile(path string, max int64) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Decompress(data, path, max)
}

// Decompress gunzips data when it starts with the gzip magic, possibly
// several times (a .jfr.gz uploaded with Content-Encoding: gzip), and
// returns it unchanged otherwise. source names the data in errors.
func Decompress(data []byte, source string, max int64) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxSize
	}
	for layer := 0; IsGzip(data); layer++ {
		if layer == 3 {
			return nil, &profile.DecodeError{Source: source, Offset: 0, Msg: "more than 3 nested gzip layers"}
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, &profile.DecodeError{Source: source, Offset: 0, Msg: "bad gzip header", Err: err}
		}
		// A gzip stream ends with its size (mod 4 GiB): the buffer's size.
		var size int64
		if len(data) >= 4 {
			size = int64(binary.LittleEndian.Uint32(data[len(data)-4:]))
		}
		out, err := readall.ReadAll(io.LimitReader(zr, max+1), min(size, max+1))
		switch {
		case int64(len(out)) > max:
			return nil, &profile.DecodeError{Source: source, Offset: -1,
				Msg: fmt.Sprintf("decompresses to more than %d bytes (a gzip bomb, or raise the limit)", max), Err: ErrTooLarge}
		case errors.Is(err, io.ErrUnexpectedEOF):
			// A truncated gzip stream: decode what arrived; the decoder
			// reports where its data ends.
			data = out
			continue
		case err != nil:
			return nil, &profile.DecodeError{Source: source, Offset: int64(len(out)),
				Msg: "corrupt gzip stream (offset is in the decompressed data)", Err: err}
		}
		data = out
	}
	if int64(len(data)) > max {
		return nil, &profile.DecodeError{Source: source, Offset: -1, Msg: fmt.Sprintf("larger than %d bytes", max), Err: ErrTooLarge}
	}
	return data, nil
}
