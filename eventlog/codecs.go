package eventlog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/klauspost/compress/snappy"
	"github.com/pierrec/lz4/v4"
)

// Spark's lz4, snappy and lzf codecs wrap their block compressors in
// framings of the Java libraries they use (lz4-java's LZ4BlockOutputStream,
// snappy-java's SnappyOutputStream, compress-lzf's LZFOutputStream). No Go
// library reads these framings, so they are written here from the formats;
// the block codecs come from pierrec/lz4 and klauspost/compress, and LZF's
// block format, which no maintained Go library decodes, is written here too.

var (
	lz4Magic    = []byte("LZ4Block")
	snappyMagic = []byte("\x82SNAPPY\x00")
)

// errCorrupt marks data that is not what its framing promises.
var errCorrupt = errors.New("corrupt data")

// blockReader turns a block-by-block decoder into an io.Reader.
type blockReader struct {
	next func() ([]byte, error) // returns the next decompressed block
	buf  []byte
	err  error
}

func (b *blockReader) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.buf, b.err = b.next()
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

// readFull reads len(p) bytes; a stream ending inside them is cut short,
// one ending before them is a clean end when atStart.
func readFull(r io.Reader, p []byte, atStart bool) error {
	n, err := io.ReadFull(r, p)
	switch {
	case err == nil:
		return nil
	case n == 0 && errors.Is(err, io.EOF) && atStart:
		return io.EOF
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return io.ErrUnexpectedEOF
	}
	return err
}

// lz4Block reads lz4-java's LZ4BlockOutputStream: blocks of a 21-byte
// header ("LZ4Block", a token with the method in its high nibble, then
// little-endian compressed length, decompressed length and xxhash32
// checksum masked to 28 bits) and the block; an empty block ends a stream,
// and several streams may follow each other.
func lz4Block(r *bufio.Reader, reserve func(int) error) io.Reader {
	var off int64
	hdr := make([]byte, 21)
	var src, dst []byte
	return &blockReader{next: func() ([]byte, error) {
		for {
			if err := readFull(r, hdr, true); err != nil {
				return nil, err
			}
			if string(hdr[:8]) != string(lz4Magic) {
				return nil, fmt.Errorf("lz4 block at offset %d: bad magic %q: %w", off, hdr[:8], errCorrupt)
			}
			method := hdr[8] & 0xf0
			clen := int(binary.LittleEndian.Uint32(hdr[9:]))
			ulen := int(binary.LittleEndian.Uint32(hdr[13:]))
			sum := binary.LittleEndian.Uint32(hdr[17:])
			if clen < 0 || ulen < 0 || clen > 1<<26 || ulen > 1<<26 {
				return nil, fmt.Errorf("lz4 block at offset %d: lengths %d/%d: %w", off, clen, ulen, errCorrupt)
			}
			off += 21
			if ulen == 0 {
				continue // end of one stream; another may follow
			}
			var err error
			if src, err = readBlock(r, src, clen, reserve); err != nil {
				return nil, err
			}
			off += int64(clen)
			if method == 0x20 && ulen > 255*clen+16 {
				return nil, fmt.Errorf("lz4 block at offset %d: %d bytes cannot hold %d: %w", off, clen, ulen, errCorrupt)
			}
			if dst, err = grow(dst, ulen, reserve); err != nil {
				return nil, err
			}
			switch method {
			case 0x10: // raw
				if clen != ulen {
					return nil, fmt.Errorf("lz4 raw block at offset %d: lengths differ: %w", off, errCorrupt)
				}
				copy(dst, src)
			case 0x20: // lz4
				n, err := lz4.UncompressBlock(src, dst)
				if err != nil || n != ulen {
					return nil, fmt.Errorf("lz4 block at offset %d: %v: %w", off, err, errCorrupt)
				}
			default:
				return nil, fmt.Errorf("lz4 block at offset %d: unknown method %#x: %w", off, method, errCorrupt)
			}
			if got := xxh32(dst, lz4Seed) & 0x0fffffff; got != sum {
				return nil, fmt.Errorf("lz4 block at offset %d: checksum %#x, want %#x: %w", off, got, sum, errCorrupt)
			}
			return dst, nil
		}
	}}
}

// snappyStream reads snappy-java's SnappyOutputStream: the 8-byte magic,
// two big-endian version ints, then chunks of a big-endian length and a
// snappy block.
func snappyStream(r *bufio.Reader, reserve func(int) error) io.Reader {
	var off int64
	started := false
	var lenBuf [4]byte
	var src, dst []byte
	return &blockReader{next: func() ([]byte, error) {
		if !started {
			hdr := make([]byte, 16)
			if err := readFull(r, hdr, false); err != nil {
				return nil, err
			}
			if string(hdr[:8]) != string(snappyMagic) {
				return nil, fmt.Errorf("snappy stream: bad magic: %w", errCorrupt)
			}
			started, off = true, 16
		}
		for {
			err := readFull(r, lenBuf[:], true)
			if err != nil {
				return nil, err
			}
			// A stream may be followed by another one (appended output).
			if lenBuf == [4]byte{0x82, 'S', 'N', 'A'} {
				rest := make([]byte, 12)
				if err := readFull(r, rest, false); err != nil {
					return nil, err
				}
				off += 16
				continue
			}
			n := int(binary.BigEndian.Uint32(lenBuf[:]))
			if n < 0 || n > 1<<26 {
				return nil, fmt.Errorf("snappy chunk at offset %d: length %d: %w", off, n, errCorrupt)
			}
			if src, err = readBlock(r, src, n, reserve); err != nil {
				return nil, err
			}
			ulen, err := snappy.DecodedLen(src)
			if err != nil || ulen > 1<<26 {
				return nil, fmt.Errorf("snappy chunk at offset %d: %v: %w", off, err, errCorrupt)
			}
			if dst, err = grow(dst, ulen, reserve); err != nil {
				return nil, err
			}
			dst, err = snappy.Decode(dst, src)
			if err != nil {
				return nil, fmt.Errorf("snappy chunk at offset %d: %v: %w", off, err, errCorrupt)
			}
			off += 4 + int64(n)
			return dst, nil
		}
	}}
}

// lzfStream reads compress-lzf's chunks: "ZV", a type byte, then for type 0
// a big-endian length and the raw bytes, for type 1 the compressed and the
// uncompressed length and an LZF block.
func lzfStream(r *bufio.Reader, reserve func(int) error) io.Reader {
	var off int64
	hdr := make([]byte, 5)
	var src, dst []byte
	return &blockReader{next: func() ([]byte, error) {
		if err := readFull(r, hdr[:3], true); err != nil {
			return nil, err
		}
		if hdr[0] != 'Z' || hdr[1] != 'V' {
			return nil, fmt.Errorf("lzf chunk at offset %d: bad magic %q: %w", off, hdr[:2], errCorrupt)
		}
		switch hdr[2] {
		case 0:
			if err := readFull(r, hdr[3:5], false); err != nil {
				return nil, err
			}
			n := int(binary.BigEndian.Uint16(hdr[3:]))
			var err error
			if dst, err = grow(dst, n, reserve); err != nil {
				return nil, err
			}
			if err := readFull(r, dst, false); err != nil {
				return nil, err
			}
			off += 5 + int64(n)
			return dst, nil
		case 1:
			var lens [4]byte
			if err := readFull(r, lens[:], false); err != nil {
				return nil, err
			}
			clen, ulen := int(binary.BigEndian.Uint16(lens[:2])), int(binary.BigEndian.Uint16(lens[2:]))
			var err error
			if src, err = grow(src, clen, reserve); err != nil {
				return nil, err
			}
			if err := readFull(r, src, false); err != nil {
				return nil, err
			}
			if dst, err = grow(dst, ulen, reserve); err != nil {
				return nil, err
			}
			if err := lzfDecompress(src, dst); err != nil {
				return nil, fmt.Errorf("lzf chunk at offset %d: %v: %w", off, err, errCorrupt)
			}
			off += 7 + int64(clen)
			return dst, nil
		}
		return nil, fmt.Errorf("lzf chunk at offset %d: unknown type %d: %w", off, hdr[2], errCorrupt)
	}}
}

// lzfDecompress decodes one LZF block into dst, which must be exactly the
// uncompressed size: a control byte below 32 starts a literal run of
// ctrl+1 bytes; otherwise its top 3 bits (7 meaning "add the next byte")
// plus 2 are a match length and its low 5 bits with the next byte the
// distance back, minus one.
func lzfDecompress(src, dst []byte) error {
	var i, o int
	for i < len(src) {
		ctrl := int(src[i])
		i++
		if ctrl < 32 {
			n := ctrl + 1
			if i+n > len(src) || o+n > len(dst) {
				return errors.New("literal run past the end")
			}
			copy(dst[o:], src[i:i+n])
			i, o = i+n, o+n
			continue
		}
		n := ctrl >> 5
		if n == 7 {
			if i >= len(src) {
				return errors.New("match length past the end")
			}
			n += int(src[i])
			i++
		}
		n += 2
		if i >= len(src) {
			return errors.New("match distance past the end")
		}
		ref := o - ((ctrl&0x1f)<<8 | int(src[i])) - 1
		i++
		if ref < 0 || o+n > len(dst) {
			return errors.New("match out of range")
		}
		for k := 0; k < n; k++ { // overlapping copies repeat bytes
			dst[o+k] = dst[ref+k]
		}
		o += n
	}
	if o != len(dst) {
		return fmt.Errorf("decoded %d bytes, want %d", o, len(dst))
	}
	return nil
}

// readBlock reads n bytes into buf's storage, reserving what it grows by.
// It grows the buffer as data arrives rather than trusting n up front, so
// a corrupt length costs only the data that is really there.
func readBlock(r io.Reader, buf []byte, n int, reserve func(int) error) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), 1<<20)
		if had := cap(buf); had-len(buf) < step {
			buf = append(buf, make([]byte, step)...)[:len(buf)]
			if err := reserve(cap(buf) - had); err != nil {
				return nil, err
			}
		}
		if err := readFull(r, buf[len(buf):len(buf)+step], false); err != nil {
			return buf, err
		}
		buf = buf[:len(buf)+step]
	}
	return buf, nil
}

// grow returns b resized to n bytes, in new memory, reserved, when its
// capacity is less.
func grow(b []byte, n int, reserve func(int) error) ([]byte, error) {
	if cap(b) < n {
		if err := reserve(n); err != nil {
			return nil, err
		}
		return make([]byte, n), nil
	}
	return b[:n], nil
}

// lz4Seed is the xxhash32 seed lz4-java's block stream uses.
const lz4Seed = 0x9747b28c

// xxh32 is xxHash32, which lz4-java uses for its block checksums; pierrec/lz4
// keeps its implementation internal, so this is the 30-line algorithm.
func xxh32(b []byte, seed uint32) uint32 {
	const (
		p1 uint32 = 2654435761
		p2 uint32 = 2246822519
		p3 uint32 = 3266489917
		p4 uint32 = 668265263
		p5 uint32 = 374761393
	)
	round := func(acc, in uint32) uint32 { return bits.RotateLeft32(acc+in*p2, 13) * p1 }
	n := len(b)
	var h uint32
	if n >= 16 {
		v1, v2, v3, v4 := seed+p1+p2, seed+p2, seed, seed-p1
		for len(b) >= 16 {
			v1 = round(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		h = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		h = seed + p5
	}
	h += uint32(n)
	for len(b) >= 4 {
		h = bits.RotateLeft32(h+binary.LittleEndian.Uint32(b)*p3, 17) * p4
		b = b[4:]
	}
	for _, c := range b {
		h = bits.RotateLeft32(h+uint32(c)*p5, 11) * p1
	}
	h ^= h >> 15
	h *= p2
	h ^= h >> 13
	h *= p3
	h ^= h >> 16
	return h
}
