package lake

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/format"
)

// TestCheckPagesBoundsHeaderLengths: a page header whose statistics claim
// a gigabyte of bytes, in a chunk of a few, is refused without the
// gigabyte being allocated.
func TestCheckPagesBoundsHeaderLengths(t *testing.T) {
	header := []byte{
		0x15, 0x00, // type: DATA_PAGE
		0x15, 0xc8, 0x01, // uncompressed_page_size: 100
		0x15, 0x14, // compressed_page_size: 10
		0x2c,                                           // data_page_header
		0x15, 0x02, 0x15, 0x00, 0x15, 0x00, 0x15, 0x00, // num_values 1, encodings
		0x1c,                               // statistics
		0x18, 0x80, 0x80, 0x80, 0x80, 0x04, // max: binary of 1 GiB
	}
	chunk := append(header, make([]byte, 16)...)
	meta := format.ColumnMetaData{NumValues: 1, TotalCompressedSize: int64(len(chunk))}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := checkPages(chunk, 0, int64(len(chunk)), meta)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Errorf("a page header claiming 1 GiB of statistics in %d bytes was accepted", len(chunk))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("checking a %d-byte chunk allocated %d MB", len(chunk), n>>20)
	}
}

// TestCheckFooterBoundsLength: a Parquet file whose footer length claims
// more than the file holds is refused before parquet-go allocates it.
func TestCheckFooterBoundsLength(t *testing.T) {
	for _, tc := range []struct {
		footer uint32
		ok     bool
	}{{8, true}, {9, false}, {1 << 30, false}} {
		file := []byte("PAR1" + strings.Repeat("x", 8) + "....PAR1")
		binary.LittleEndian.PutUint32(file[len(file)-8:], tc.footer)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadSamples("0-1.samples.parquet", bytes.NewReader(file), int64(len(file)), -1, nil)
		runtime.ReadMemStats(&after)
		if err := checkFooter(bytes.NewReader(file), int64(len(file))); (err == nil) != tc.ok {
			t.Errorf("footer of %d bytes in %d: %v", tc.footer, len(file), err)
		}
		if err == nil {
			t.Errorf("footer of %d bytes: read a file of no row groups", tc.footer)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
			t.Errorf("footer of %d bytes in %d: reading allocated %d MB", tc.footer, len(file), n>>20)
		}
	}
}
