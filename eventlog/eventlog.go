// Package eventlog reads Apache Spark event logs as a stream of JSON lines.
//
// Open accepts a single log file in any codec Spark writes (plain, gzip,
// zstd, lz4, snappy, lzf; detected by magic bytes, then by suffix), a
// rolling "eventlog_v2_" directory, a Databricks-style rolled directory, or
// a zip as the History Server's download serves, and returns a Reader that
// yields the lines of every part in order together with their position.
package eventlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// maxZstdWindow is the largest zstd window accepted: the zstd command's
// own default limit. Databricks logs such as nds_q88_photon_db_13_3 are
// written with a 128 MiB window. The decoder allocates the window a frame
// asks for before it decodes a byte, so a few bytes asking for more would
// cost the reader that much memory.
const maxZstdWindow = 128 << 20

// maxLine bounds a single event line; EnvironmentUpdate lines reach a few MB.
const maxLine = 512 << 20

// Pos is the position of a line in an event log.
type Pos struct {
	File   string // path of the part holding the line
	Part   int    // index of the part in the log, from 0
	Line   int    // line number within the part, from 1
	Offset int64  // byte offset of the line start in the uncompressed part
}

// String formats p as file:line (offset n).
func (p Pos) String() string {
	return fmt.Sprintf("%s:%d (offset %d)", p.File, p.Line, p.Offset)
}

// Truncation describes a part whose data ended early: a compressed stream
// cut mid-frame or a last line without its end.
type Truncation struct {
	Pos Pos   // position where the complete data stopped
	Err error // the decoder's error, or io.ErrUnexpectedEOF for a cut line
}

// Reader streams the lines of an event log, part after part.
type Reader struct {
	parts []string
	part  int
	dec   io.Reader
	close func()
	br    *bufio.Reader
	line  int
	off   int64
	buf   []byte
	carry []byte // NextBlock: the partial line left over from the last block
	// headOnly, if above 0, makes readLine return no more than the first
	// headOnly bytes of a longer line (Head).
	headOnly int
	// buffered is the most the decoders' buffers took (bufferBytes).
	buffered int64

	// Truncations lists every part whose data ended early, in order.
	Truncations []Truncation
	// Memory, if not nil, is drawn from as the reader allocates: its
	// buffers, the decompressed blocks of its codecs, and the lines and
	// blocks it returns. It is never given back by the reader: the
	// reader's owner gives it all back once done with what it read.
	Memory Memory
}

// Memory is what a Reader draws the memory it allocates from. Reserve
// takes n bytes more for what, or fails when there is not that much left;
// the read then fails with its error, wrapped.
type Memory interface {
	Reserve(n int64, what string) error
}

// Reserve draws n bytes of the reader's Memory, if it has one, for what
// its caller holds of what it read (a line's decoding). Its errors wrap
// the Memory's.
func (r *Reader) Reserve(n int64, what string) error {
	if r.Memory == nil || n <= 0 {
		return nil
	}
	if err := r.Memory.Reserve(n, what); err != nil {
		return &refusedError{err}
	}
	return nil
}

// refusedError is the error of memory the reader's Memory refused: it
// fails the read, where a decoder's other errors end a part as cut
// short.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// Refused reports whether err is, or wraps, a refusal of a Reader's
// Memory.
func Refused(err error) bool {
	var e *refusedError
	return errors.As(err, &e)
}

// grew reserves what a buffer that grew from capacity from to to took,
// for what.
func (r *Reader) grew(from, to int, what string) error {
	return r.Reserve(int64(to-from), what)
}

// Open opens the event log at path: a file or a rolling directory.
func Open(path string) (*Reader, error) {
	parts, err := Parts(path)
	if err != nil {
		return nil, err
	}
	return &Reader{parts: parts, part: -1}, nil
}

// Parts returns the files making up the event log at path, in the order
// their lines must be read.
func Parts(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	if !st.IsDir() {
		if isZip(path) {
			return zipParts(path)
		}
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	ordered, err := orderParts(path, names)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ordered))
	for i, n := range ordered {
		out[i] = filepath.Join(path, n)
	}
	return out, nil
}

// orderParts picks the event-log parts among the file names of dir and
// returns them in reading order.
func orderParts(dir string, names []string) ([]string, error) {
	type part struct {
		key  string
		n    int
		name string
	}
	path := dir
	var ps []part
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, "events_"):
			// Spark 3.0+ rolling log: events_<N>_<appid>[.<codec>].
			rest := name[len("events_"):]
			i := strings.IndexByte(rest, '_')
			if i <= 0 {
				return nil, fmt.Errorf("eventlog: %s: part %q has no index", path, name)
			}
			n, err := strconv.Atoi(rest[:i])
			if err != nil {
				return nil, fmt.Errorf("eventlog: %s: part %q: index: %w", path, name, err)
			}
			ps = append(ps, part{n: n, name: name})
		case name == "eventlog":
			// Databricks: the un-suffixed part is the newest.
			ps = append(ps, part{key: "\xff", name: name})
		case strings.HasPrefix(name, "eventlog-"):
			// Databricks: eventlog-YYYY-MM-DD--HH-MM[.gz], ordered by time.
			key := strings.TrimSuffix(name[len("eventlog-"):], ".gz")
			ps = append(ps, part{key: key, name: name})
		}
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("eventlog: %s: directory holds no events_<N>_* or eventlog* parts", path)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].n != ps[j].n {
			return ps[i].n < ps[j].n
		}
		return ps[i].key < ps[j].key
	})
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return out, nil
}

// Next returns the next non-empty line, without its line end, and its
// position. The returned slice is valid until the following call. At the end
// of the log Next returns io.EOF. A part cut short is recorded in
// Truncations and reading goes on with the next part.
func (r *Reader) Next() ([]byte, Pos, error) {
	for {
		if r.br == nil {
			if r.part+1 >= len(r.parts) {
				return nil, Pos{}, io.EOF
			}
			r.part++
			if err := r.openPart(); err != nil {
				return nil, Pos{}, err
			}
		}
		line, err, fail := r.readLine()
		if fail == nil && Refused(err) {
			fail = err
		}
		if fail != nil {
			return nil, Pos{}, fmt.Errorf("eventlog: %w", fail)
		}
		start := r.off - int64(len(line))
		if err == nil {
			start-- // the '\n' readLine consumed
		}
		pos := Pos{File: r.parts[r.part], Part: r.part, Line: r.line, Offset: start}
		if err == nil {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			return trimCR(line), pos, nil
		}
		// End of this part, clean or not.
		cut := err != io.EOF
		if len(line) > 0 && !cut {
			// Last line without newline: complete only if it is a whole
			// JSON object; the caller's decoder decides, so yield it.
			r.closePart()
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			return trimCR(line), pos, nil
		}
		if cut {
			r.Truncations = append(r.Truncations, Truncation{Pos: pos, Err: err})
		}
		r.closePart()
	}
}

// zstdReader says what to do with a zstd frame whose window is past
// maxZstdWindow.
type zstdReader struct{ d *zstd.Decoder }

func (z zstdReader) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		err = fmt.Errorf("%w: the log was compressed with a window over %d MiB; decompress it with `zstd -d --memory=2048MB` and read the plain file", err, maxZstdWindow>>20)
	}
	return n, err
}

func trimCR(b []byte) []byte {
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// readLine reads one line, growing r.buf as needed. It returns the line
// without '\n' and nil, or any partial data and the error ending the part;
// fail is a failure of the read itself: no memory for the line.
func (r *Reader) readLine() (line []byte, end, fail error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.off += int64(len(chunk))
		if err == nil {
			if len(r.buf) == 0 {
				r.line++
				return chunk[:len(chunk)-1], nil, nil
			}
			if fail := r.appendLine(chunk[:len(chunk)-1]); fail != nil {
				return nil, nil, fail
			}
			r.line++
			return r.buf, nil, nil
		}
		if fail := r.appendLine(chunk); fail != nil {
			return nil, nil, fail
		}
		if r.headOnly > 0 && len(r.buf) >= r.headOnly {
			r.line++
			return r.buf[:r.headOnly], nil, nil
		}
		if err == bufio.ErrBufferFull {
			if len(r.buf) > maxLine {
				return nil, fmt.Errorf("line %d longer than %d bytes", r.line+1, maxLine), nil
			}
			continue
		}
		if len(r.buf) > 0 {
			r.line++
		}
		return r.buf, err, nil
	}
}

// appendLine appends b to the line in r.buf, reserving what r.buf grows
// by.
func (r *Reader) appendLine(b []byte) error {
	had := cap(r.buf)
	r.buf = append(r.buf, b...)
	return r.grew(had, cap(r.buf), r.lineName(r.line+1))
}

// lineName names line n of the open part, for the memory it takes.
func (r *Reader) lineName(n int) string {
	return fmt.Sprintf("line %d of %s", n, r.parts[r.part])
}

// Head returns the start of the first non-empty line of the event log at
// path, at most n bytes of it: enough to tell what a file is without
// reading a line that may be very long. What it allocates is drawn from
// mem, if not nil (Reader.Memory).
func Head(path string, n int, mem Memory) ([]byte, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.headOnly, r.Memory = n, mem
	line, _, err := r.Next()
	return line, err
}

// readerBuffer is the size of the buffer lines are read through.
const readerBuffer = 1 << 20

func (r *Reader) openPart() error {
	name := r.parts[r.part]
	var src io.Reader
	var closeSrc func()
	if archive, entry, ok := splitZipPart(name); ok {
		rc, closeZip, err := openZipEntry(archive, entry)
		if err != nil {
			return err
		}
		src, closeSrc = rc, closeZip
	} else {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("eventlog: %w", err)
		}
		src, closeSrc = f, func() { f.Close() }
	}
	dec, closeDec, err := r.decoder(name, src)
	if err != nil {
		closeSrc()
		return err
	}
	r.dec = dec
	r.close = func() {
		if closeDec != nil {
			closeDec()
		}
		closeSrc()
	}
	r.br = bufio.NewReaderSize(dec, readerBuffer)
	r.line, r.off = 0, 0
	return nil
}

func (r *Reader) closePart() {
	if r.close != nil {
		r.close()
	}
	r.dec, r.close, r.br = nil, nil, nil
}

// Close releases the open part, if any.
func (r *Reader) Close() error {
	r.closePart()
	r.part = len(r.parts)
	return nil
}

// Codec names a compression format of an event log file.
type Codec string

// Codecs recognised by Detect.
const (
	Plain  Codec = "plain"
	Gzip   Codec = "gzip"
	Zstd   Codec = "zstd"
	LZ4    Codec = "lz4"    // lz4-java's LZ4BlockOutputStream, as Spark writes it
	Snappy Codec = "snappy" // snappy-java's SnappyOutputStream
	LZF    Codec = "lzf"    // compress-lzf's LZFOutputStream
)

// Detect returns the codec of a file from its magic bytes, falling back to
// its name's suffix when the head is too short to tell.
func Detect(name string, head []byte) Codec {
	switch {
	case bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return Zstd
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return Gzip
	case bytes.HasPrefix(head, lz4Magic[:min(len(head), 8)]) && len(head) >= 4:
		return LZ4
	case bytes.HasPrefix(head, snappyMagic[:min(len(head), 8)]) && len(head) >= 4:
		return Snappy
	case len(head) >= 4 && head[0] == 'Z' && head[1] == 'V' && head[2] <= 1:
		return LZF
	case len(head) >= 4:
		return Plain
	}
	n := strings.TrimSuffix(name, ".inprogress")
	switch {
	case strings.HasSuffix(n, ".zstd"), strings.HasSuffix(n, ".zst"):
		return Zstd
	case strings.HasSuffix(n, ".gz"):
		return Gzip
	case strings.HasSuffix(n, ".lz4"):
		return LZ4
	case strings.HasSuffix(n, ".snappy"):
		return Snappy
	case strings.HasSuffix(n, ".lzf"):
		return LZF
	}
	return Plain
}

// decoderBuffer is the size of the buffer a part is read through before
// it is decompressed.
const decoderBuffer = 256 << 10

// decoder returns the decompressed stream of the part name read from f,
// reserving the memory of its buffers and of its codec's window
// (bufferBytes), and then of its codec's blocks as they grow.
func (r *Reader) decoder(name string, f io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(f, decoderBuffer)
	head, _ := br.Peek(zstd.HeaderMaxSize)
	codec := Detect(name, head)
	buffers := int64(readerBuffer + decoderBuffer)
	if codec == Zstd {
		buffers += zstdWindow(head)
	}
	if err := r.bufferBytes(buffers, name); err != nil {
		return nil, nil, err
	}
	reserve := func(n int) error { return r.Reserve(int64(n), "decompressing "+name) }
	switch codec {
	case LZ4:
		return lz4Block(br, reserve), nil, nil
	case Snappy:
		return snappyStream(br, reserve), nil, nil
	case LZF:
		return lzfStream(br, reserve), nil, nil
	case Zstd:
		d, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(maxZstdWindow), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("eventlog: %s: zstd: %w", name, err)
		}
		return zstdReader{d}, d.Close, nil
	case Gzip:
		if len(head) < 2 {
			return eofReader{io.ErrUnexpectedEOF}, nil, nil
		}
		d, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("eventlog: %s: gzip: %w", name, err)
		}
		return d, func() { d.Close() }, nil
	}
	return br, nil, nil
}

// bufferBytes reserves the memory of a part's buffers and codec window,
// n bytes, for the reader: one part is open at a time, so the reader
// holds the most any part took.
func (r *Reader) bufferBytes(n int64, name string) error {
	if n <= r.buffered {
		return nil
	}
	if err := r.Reserve(n-r.buffered, "reading "+name); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	r.buffered = n
	return nil
}

// zstdWindow is the memory a zstd decoder takes for the frame whose
// header starts head: its window, and a MiB of blocks.
func zstdWindow(head []byte) int64 {
	var h zstd.Header
	window := uint64(maxZstdWindow)
	if h.Decode(head) == nil {
		window = h.WindowSize
		if h.SingleSegment {
			window = h.FrameContentSize
		}
	}
	return int64(min(window, maxZstdWindow)) + 1<<20
}

type eofReader struct{ err error }

func (e eofReader) Read([]byte) (int, error) { return 0, e.err }

// ErrTruncated reports whether err is a cut-short stream error.
func ErrTruncated(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF)
}
