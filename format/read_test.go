package format

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
)

func gz(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDecompress(t *testing.T) {
	plain := []byte("a;b;c 1\n")
	bomb := gz(t, make([]byte, 1<<20))
	// Random-ish text, so that half the compressed stream holds data.
	var long bytes.Buffer
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&long, "frame%d;frame%d %d\n", i*7919%1000, i*104729%997, i)
	}
	full := gz(t, long.Bytes())
	tests := []struct {
		name    string
		in      []byte
		max     int64
		want    []byte
		wantErr string
	}{
		{"plain", plain, 0, plain, ""},
		{"gzip", gz(t, plain), 0, plain, ""},
		{"double gzip", gz(t, gz(t, plain)), 0, plain, ""},
		{"bomb", bomb, 1 << 16, nil, "decompresses to more than 65536 bytes"},
		{"truncated keeps prefix", full[:len(full)/2], 0, nil, ""},
		{"bad header", []byte{0x1f, 0x8b, 0, 0}, 0, nil, "bad gzip header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decompress(tt.in, "in.gz", tt.max)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "in.gz") {
					t.Fatalf("err = %v, want one naming in.gz and containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && !bytes.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tt.want == nil && (len(got) == 0 || !bytes.HasPrefix(long.Bytes(), got)) {
				t.Errorf("truncated stream gave %d bytes, want a non-empty prefix", len(got))
			}
		})
	}
}
