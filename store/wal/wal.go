// Package wal is the format of the store's write-ahead log: the log
// record of an upload, and the segment files records are appended to
// (docs/storage-format.md, "Write-ahead log"). A record is a length, a
// CRC-32C and a payload: an S2 block of a uvarint length, the record's
// header as JSON, then its profile (profile.MarshalBinary).
package wal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
)

// Record is an upload as its log record holds it.
type Record struct {
	Header
	Profile *profile.Profile
}

// Header is what a record says of its upload besides its profile, as JSON.
type Header struct {
	ID          uint64
	ReceivedNs  int64
	From, Until int64
	Labels      profile.Labels
	Agent       string
	Bytes       int
	Key         string `json:",omitempty"`
}

// Segment is a log file and the range of upload ids it holds.
type Segment struct {
	Path   string
	Lo, Hi uint64 // 0, 0 when it holds none
	Size   int64  // bytes of its records
}

// Add records that the segment holds upload id.
func (s *Segment) Add(id uint64) {
	if s.Lo == 0 || id < s.Lo {
		s.Lo = id
	}
	s.Hi = max(s.Hi, id)
}

// Span is where a log record is: its segment file, offset and length.
type Span struct {
	Path string
	Off  int64
	N    int64
}

// SegmentFile is a log segment open for appending.
type SegmentFile interface {
	Write(b []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Close() error
}

// OpenSegment opens a log segment for appending; a variable so that tests
// can make its writes fail as a full disk does.
var OpenSegment = func(path string) (SegmentFile, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// SegmentSize is when a new segment file is started.
const SegmentSize = 64 << 20

// castagnoli is the CRC-32C table of the records' checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the checksum of a record's payload.
func Checksum(payload []byte) uint32 { return crc32.Checksum(payload, castagnoli) }

// MaxKeptBuffer bounds the buffers an Encoder keeps between records.
const MaxKeptBuffer = 16 << 20

// Encoder encodes log records in buffers kept for the next one: a record
// is hundreds of KiB that a fresh buffer would reach through a dozen
// growths, and on a virtual machine the fresh pages cost more than the
// encoding. Its zero value is ready to use; it is not safe for
// concurrent use.
type Encoder struct {
	raw, rec []byte
}

// Encode returns the log record of r (length, checksum, payload), in a
// buffer the next call reuses.
func (e *Encoder) Encode(r Record) ([]byte, error) {
	hdr, err := json.Marshal(r.Header)
	if err != nil {
		return nil, err
	}
	raw := binary.AppendUvarint(e.raw[:0], uint64(len(hdr)))
	raw, err = r.Profile.AppendBinary(append(raw, hdr...))
	if err != nil {
		return nil, err
	}
	e.raw = raw
	// S2 rather than zstd: a record lives only until its partition is
	// compacted into a zstd block, and S2 compresses a plain JFR upload's
	// record in a third of the time zstd's fastest level takes, 12 % larger.
	need := 8 + s2.MaxEncodedLen(len(raw)) // the length and checksum go first
	if need < 0 {
		return nil, fmt.Errorf("record of %d bytes too large to compress", len(raw))
	}
	if cap(e.rec) < need {
		e.rec = make([]byte, need)
	}
	payload := s2.Encode(e.rec[8:need], raw)
	rec := e.rec[:8+len(payload)]
	binary.LittleEndian.PutUint32(rec[:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], Checksum(payload))
	return rec, nil
}

// Trim drops the encoder's buffers when a rare huge record grew them past
// MaxKeptBuffer.
func (e *Encoder) Trim() {
	if cap(e.raw) > MaxKeptBuffer {
		e.raw, e.rec = nil, nil
	}
}

// zstdMagic starts the payload of log records written before records were
// S2 blocks. An S2 block starts with its decoded length as a varint, and a
// record is longer than 127 bytes, so its first byte has the high bit set:
// it never starts like a zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxRecordBytes bounds the decoded size of a log record.
const maxRecordBytes = 1 << 30

// Decode decodes a record's payload; dec decodes the zstd payloads of
// records written before records were S2.
func Decode(payload []byte, dec *zstd.Decoder) (*Record, error) {
	var raw []byte
	if bytes.HasPrefix(payload, zstdMagic) {
		var err error
		if raw, err = dec.DecodeAll(payload, nil); err != nil {
			return nil, err
		}
	} else {
		n, err := s2.DecodedLen(payload)
		if err != nil {
			return nil, err
		}
		if n > maxRecordBytes {
			return nil, fmt.Errorf("record claims %d bytes decoded, more than %d", n, maxRecordBytes)
		}
		if raw, err = s2.Decode(nil, payload); err != nil {
			return nil, err
		}
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)-k) {
		return nil, fmt.Errorf("record header length")
	}
	r := &Record{Profile: new(profile.Profile)}
	if err := json.Unmarshal(raw[k:k+int(n)], &r.Header); err != nil {
		return nil, fmt.Errorf("record header: %w", err)
	}
	if err := r.Profile.UnmarshalBinary(raw[k+int(n):]); err != nil {
		return nil, err
	}
	return r, nil
}

// Payload is a log record's payload and its offset in its segment.
type Payload struct {
	Off  int64
	Data []byte
}

// Split returns the payloads of the records data holds, whole: a shipped
// segment. name names it in errors.
func Split(name string, data []byte) ([]Payload, error) {
	var out []Payload
	for off := 0; off < len(data); {
		if len(data)-off < 8 {
			return nil, fmt.Errorf("%s: offset %d: %d bytes left, not a record", name, off, len(data)-off)
		}
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n > len(data)-off-8 {
			return nil, fmt.Errorf("%s: offset %d: record of %d bytes runs past the end", name, off, n)
		}
		payload := data[off+8 : off+8+n]
		if Checksum(payload) != binary.LittleEndian.Uint32(data[off+4:]) {
			return nil, fmt.Errorf("%s: offset %d: checksum", name, off)
		}
		out = append(out, Payload{int64(off), payload})
		off += 8 + n
	}
	return out, nil
}

// DecodeAll decodes payloads on every core, returning their records in
// order.
func DecodeAll(payloads []Payload, dec *zstd.Decoder) ([]*Record, error) {
	recs := make([]*Record, len(payloads))
	errs := make([]error, len(payloads))
	workers := min(runtime.GOMAXPROCS(0), len(payloads))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(payloads); i += workers {
				recs[i], errs[i] = Decode(payloads[i].Data, dec)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			// The checksum holds, so this is no torn write to leave unread: the
			// record is in a format this version does not read.
			return nil, fmt.Errorf("record at offset %d: %w; the data directory was written by another sparkprof version: move it away (or use another --data) and import the data again", payloads[i].Off, err)
		}
	}
	return recs, nil
}
