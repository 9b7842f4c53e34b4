package eventlog

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

// The corpus has no event log written by Spark with the lz4, snappy or lzf
// codec. These tests generate such files from a real log, following the
// framings of lz4-java (LZ4BlockOutputStream), snappy-java
// (SnappyOutputStream) and compress-lzf (LZFOutputStream) as Spark uses
// them, and check that every line reads back.

// realLog returns the decompressed bytes of a real Spark 3.1 event log.
func realLog(t testing.TB) []byte {
	t.Helper()
	raw := corpus.Read(t, "eventlogs", "nvidia", "rp_sql_eventlog.zstd")
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := d.DecodeAll(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// encodeLZ4Block writes data as lz4-java's LZ4BlockOutputStream does with
// Spark's 32 KiB blocks, ending with the empty block.
func encodeLZ4Block(data []byte) []byte {
	var out bytes.Buffer
	block := func(method byte, payload []byte, ulen int, sum uint32) {
		out.WriteString("LZ4Block")
		out.WriteByte(method | 0x0a)
		var n [12]byte
		binary.LittleEndian.PutUint32(n[0:], uint32(len(payload)))
		binary.LittleEndian.PutUint32(n[4:], uint32(ulen))
		binary.LittleEndian.PutUint32(n[8:], sum)
		out.Write(n[:])
		out.Write(payload)
	}
	for len(data) > 0 {
		chunk := data[:min(32<<10, len(data))]
		data = data[len(chunk):]
		dst := make([]byte, lz4.CompressBlockBound(len(chunk)))
		n, err := lz4.CompressBlock(chunk, dst, nil)
		sum := xxh32(chunk, lz4Seed) & 0x0fffffff
		if err != nil || n == 0 || n >= len(chunk) {
			block(0x10, chunk, len(chunk), sum) // incompressible: raw, as lz4-java does
		} else {
			block(0x20, dst[:n], len(chunk), sum)
		}
	}
	block(0x10, nil, 0, 0)
	return out.Bytes()
}

// encodeSnappyStream writes data as snappy-java's SnappyOutputStream does
// (32 KiB chunks).
func encodeSnappyStream(data []byte) []byte {
	var out bytes.Buffer
	out.Write(snappyMagic)
	out.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
	for len(data) > 0 {
		chunk := data[:min(32<<10, len(data))]
		data = data[len(chunk):]
		enc := snappy.Encode(nil, chunk)
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(enc)))
		out.Write(n[:])
		out.Write(enc)
	}
	return out.Bytes()
}

// encodeLZF writes data as compress-lzf's LZFOutputStream does: 64 KiB
// chunks, compressed with a greedy LZF matcher (3-byte hash, back
// references up to 8 KiB), stored raw when that does not help.
func encodeLZF(data []byte) []byte {
	var out bytes.Buffer
	for len(data) > 0 {
		chunk := data[:min(0xffff, len(data))]
		data = data[len(chunk):]
		comp := lzfCompress(chunk)
		if len(comp) >= len(chunk) {
			out.Write([]byte{'Z', 'V', 0, byte(len(chunk) >> 8), byte(len(chunk))})
			out.Write(chunk)
			continue
		}
		out.Write([]byte{'Z', 'V', 1, byte(len(comp) >> 8), byte(len(comp)), byte(len(chunk) >> 8), byte(len(chunk))})
		out.Write(comp)
	}
	return out.Bytes()
}

func lzfCompress(in []byte) []byte {
	var out, lit []byte
	flush := func() {
		for len(lit) > 0 {
			n := min(32, len(lit))
			out = append(out, byte(n-1))
			out = append(out, lit[:n]...)
			lit = lit[n:]
		}
	}
	table := map[[3]byte]int{}
	for i := 0; i < len(in); {
		if i+3 <= len(in) {
			k := [3]byte{in[i], in[i+1], in[i+2]}
			if ref, ok := table[k]; ok && i-ref-1 < 8192 {
				n := 0
				for i+n < len(in) && n < 264 && in[ref+n] == in[i+n] {
					n++
				}
				if n >= 3 {
					flush()
					dist := i - ref - 1
					l := n - 2
					if l < 7 {
						out = append(out, byte(l<<5|dist>>8), byte(dist))
					} else {
						out = append(out, byte(7<<5|dist>>8), byte(l-7), byte(dist))
					}
					table[k] = i
					i += n
					continue
				}
			}
			table[k] = i
		}
		lit = append(lit, in[i])
		i++
	}
	flush()
	return out
}

func readLines(t *testing.T, path string) ([]string, *Reader) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lines []string
	for {
		line, _, err := r.Next()
		if errors.Is(err, io.EOF) {
			return lines, r
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(line))
	}
}

func TestSparkCodecs(t *testing.T) {
	plain := realLog(t)
	want := bytes.Split(bytes.TrimRight(plain, "\n"), []byte("\n"))
	tests := []struct {
		name   string
		encode func([]byte) []byte
		codec  Codec
	}{
		{"app.lz4", encodeLZ4Block, LZ4},
		{"app.snappy", encodeSnappyStream, Snappy},
		{"app.lzf", encodeLZF, LZF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := tt.encode(plain)
			if got := Detect("no-suffix", enc[:8]); got != tt.codec {
				t.Errorf("Detect by magic = %s, want %s", got, tt.codec)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, enc, 0o644); err != nil {
				t.Fatal(err)
			}
			lines, r := readLines(t, path)
			if len(lines) != len(want) || len(r.Truncations) != 0 {
				t.Fatalf("%d lines, %d truncations; want %d lines", len(lines), len(r.Truncations), len(want))
			}
			for i := range lines {
				if lines[i] != string(want[i]) {
					t.Fatalf("line %d differs", i+1)
				}
			}
			// Cut the file in the middle of a block: every line before
			// the cut reads back and the truncation is reported.
			cut := filepath.Join(dir, "cut-"+tt.name)
			if err := os.WriteFile(cut, enc[:len(enc)*2/3], 0o644); err != nil {
				t.Fatal(err)
			}
			lines, r = readLines(t, cut)
			if len(r.Truncations) != 1 || len(lines) == 0 || len(lines) >= len(want) {
				t.Errorf("cut file: %d lines, truncations %v", len(lines), r.Truncations)
			}
			for i := range lines[:max(len(lines)-1, 0)] {
				if lines[i] != string(want[i]) {
					t.Fatalf("cut file: line %d differs", i+1)
				}
			}
		})
	}
}

func TestLZ4ChecksumMismatch(t *testing.T) {
	enc := encodeLZ4Block(realLog(t)[:100_000])
	enc[17] ^= 0xff // first block's checksum
	path := filepath.Join(t.TempDir(), "bad.lz4")
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		_, _, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(r.Truncations) != 1 || !errors.Is(r.Truncations[0].Err, errCorrupt) {
		t.Errorf("truncations %v, want one checksum error", r.Truncations)
	}
}

func TestXXH32(t *testing.T) {
	for _, tt := range []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0, 0x02cc5d05},
		{"a", 0, 0x550d7456},
		{"abc", 0, 0x32d153ff},
		{"Nobody inspects the spammish repetition", 0, 0xe2293b2f},
	} {
		if got := xxh32([]byte(tt.in), tt.seed); got != tt.want {
			t.Errorf("xxh32(%q) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
}

// TestHistoryServerZip reads sparklint's History Server download (a zip
// holding one Spark 1.6 log).
func TestHistoryServerZip(t *testing.T) {
	lines, _ := readLines(t, corpus.Path(t, "eventlogs", "sparklint", "eventLogs-application_1489705648216_1600.zip"))
	if len(lines) != 289 {
		t.Errorf("%d lines, want 289", len(lines))
	}
}

// TestZipRolling reads a zip of a rolling log directory, as the History
// Server serves one.
func TestZipRolling(t *testing.T) {
	dir := corpus.Path(t, "eventlogs", "nvidia", "eventlog_v2_local-1623876083964")
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"events_2_local-1623876083964.zstd", "appstatus_local-1623876083964", "events_1_local-1623876083964.zstd"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create("eventlog_v2_local-1623876083964/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	zw.Close()
	path := filepath.Join(t.TempDir(), "logs.zip")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	zipped, _ := readLines(t, path)
	direct, _ := readLines(t, dir)
	if len(zipped) != len(direct) || len(direct) < 5000 || zipped[0] != direct[0] {
		t.Errorf("zip: %d lines, directory: %d", len(zipped), len(direct))
	}
}

func FuzzCodecs(f *testing.F) {
	plain := realLog(f)[:20_000]
	f.Add(encodeLZ4Block(plain))
	f.Add(encodeSnappyStream(plain))
	f.Add(encodeLZF(plain))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, dec := range []func(*bufio.Reader, func(int) error) io.Reader{lz4Block, snappyStream, lzfStream} {
			r := dec(newBufioReader(data), func(int) error { return nil })
			io.Copy(io.Discard, io.LimitReader(r, 1<<24))
		}
	})
}

func newBufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
