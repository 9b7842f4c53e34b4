package readall

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadAll(t *testing.T) {
	data := bytes.Repeat([]byte("sparkprof"), 10_000)
	for _, c := range []struct {
		name string
		size int64
	}{
		{"exact", int64(len(data))},
		{"too small", 1000},
		{"too large", 10 * int64(len(data))},
		{"unknown", -1},
		{"absurd", 1 << 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadAll(iotest.HalfReader(bytes.NewReader(data)), c.size)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("ReadAll = %d bytes, %v; want %d bytes", len(got), err, len(data))
			}
		})
	}
	boom := errors.New("boom")
	got, err := ReadAll(io.MultiReader(bytes.NewReader(data[:100]), iotest.ErrReader(boom)), int64(len(data)))
	if !errors.Is(err, boom) || !bytes.Equal(got, data[:100]) {
		t.Errorf("a failing reader: %d bytes, %v; want the 100 read and the error", len(got), err)
	}
}

func BenchmarkReadAll(b *testing.B) {
	data := make([]byte, 700<<10)
	b.Run("io.ReadAll", func(b *testing.B) {
		for b.Loop() {
			io.ReadAll(bytes.NewReader(data))
		}
	})
	b.Run("sized", func(b *testing.B) {
		for b.Loop() {
			ReadAll(bytes.NewReader(data), int64(len(data)))
		}
	})
}

func TestIntoReusesBuffer(t *testing.T) {
	data := bytes.Repeat([]byte("sparkprof"), 1_000)
	for _, c := range []struct {
		name  string
		buf   []byte
		reuse bool
	}{
		{"room", make([]byte, 5, len(data)+1), true},
		{"no room", make([]byte, 0, len(data)), false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Into(c.buf, bytes.NewReader(data), int64(len(data)))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("Into = %d bytes, %v; want %d bytes", len(got), err, len(data))
			}
			if reused := cap(c.buf) > 0 && &got[:1][0] == &c.buf[:1][0]; reused != c.reuse {
				t.Errorf("buffer reused = %v, want %v", reused, c.reuse)
			}
		})
	}
}
