package eventlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// errSpent is the error of a spent testMemory.
var errSpent = errors.New("memory spent")

// testMemory is a Memory of limit bytes that counts what is drawn.
type testMemory struct{ used, limit int64 }

func (m *testMemory) Reserve(n int64, what string) error {
	if m.used+n > m.limit {
		return errSpent
	}
	m.used += n
	return nil
}

// writeLog writes a log of a short line, a line of n bytes and a short
// line, and returns its path.
func writeLog(t *testing.T, n int) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"Event":"SparkListenerLogStart"}` + "\n")
	b.Write(bytes.Repeat([]byte("x"), n))
	b.WriteString("\n" + `{"Event":"SparkListenerApplicationEnd"}` + "\n")
	path := filepath.Join(t.TempDir(), "events")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A reader draws what it allocates from its Memory, long lines included,
// and fails with the Memory's error when it is spent, instead of taking
// the part for cut short; Head reads no more of a long line than it asks.
func TestReaderMemory(t *testing.T) {
	path := writeLog(t, 8<<20)
	read := func(mem *testMemory, blocks bool) error {
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.Memory = mem
		for {
			if blocks {
				_, err = r.NextBlock(nil, 1<<20)
			} else {
				_, _, err = r.Next()
			}
			if err == io.EOF {
				if len(r.Truncations) > 0 {
					t.Errorf("truncations %v", r.Truncations)
				}
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	for _, blocks := range []bool{false, true} {
		plenty := &testMemory{limit: 1 << 30}
		if err := read(plenty, blocks); err != nil {
			t.Fatalf("blocks %v: %v", blocks, err)
		}
		if plenty.used < 8<<20 {
			t.Errorf("blocks %v: %d bytes drawn for a line of 8 MiB", blocks, plenty.used)
		}
		little := &testMemory{limit: 4 << 20}
		if err := read(little, blocks); !errors.Is(err, errSpent) {
			t.Errorf("blocks %v, 4 MiB of memory: %v, want the memory's error", blocks, err)
		}
		if little.used > little.limit {
			t.Errorf("blocks %v: %d bytes drawn of %d", blocks, little.used, little.limit)
		}
	}

	long := writeLog(t, 0)
	if err := os.WriteFile(long, append(bytes.Repeat([]byte("x"), 8<<20), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	head, err := Head(long, 100, nil)
	if err != nil || len(head) != 100 {
		t.Errorf("Head: %d bytes, %v; want 100", len(head), err)
	}
}
