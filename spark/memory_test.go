package spark

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sparkprof/sparkprof/eventlog"
)

// errSpent is the error of a spent limitMemory.
var errSpent = errors.New("memory spent")

// limitMemory is an eventlog.Memory of limit bytes, drawn from by the
// build's goroutines.
type limitMemory struct {
	mu          sync.Mutex
	used, limit int64
}

func (m *limitMemory) Reserve(n int64, what string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.limit {
		return errSpent
	}
	m.used += n
	return nil
}

// A line whose parse would take more than the reader's memory has left
// fails the build with the memory's error, whether the builder or a
// worker parses it, and with batches still in flight after it; the same
// log builds with memory enough, which the build draws on.
func TestBuildMemory(t *testing.T) {
	values := bytes.Repeat([]byte("0,"), 128<<10)
	var normal bytes.Buffer
	normal.WriteString(`{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":1}` + "\n")
	for i := range 20000 {
		fmt.Fprintf(&normal, `{"Event":"SparkListenerJobStart","Job ID":%d,"Submission Time":%d,"Stage Infos":[],"Stage IDs":[]}`+"\n", i, i)
	}
	for _, tc := range []struct {
		name, bomb string
	}{
		{"the builder's", `{"Event":"SparkListenerBomb","x":[` + string(values) + `0]}`},
		{"a worker's", `{"Event":"SparkListenerTaskEnd","x":[` + string(values) + `0]}`},
	} {
		log := append(append(bytes.Clone(normal.Bytes()), tc.bomb+"\n"...), normal.Bytes()...)
		path := filepath.Join(t.TempDir(), "events")
		if err := os.WriteFile(path, log, 0o644); err != nil {
			t.Fatal(err)
		}
		build := func(m *limitMemory) error {
			r, err := eventlog.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			r.Memory = m
			_, _, err = BuildWith(r, Options{})
			return err
		}
		little := &limitMemory{limit: 32 << 20}
		if err := build(little); !errors.Is(err, errSpent) {
			t.Errorf("%s parse, 32 MiB: %v, want the memory's error", tc.name, err)
		}
		plenty := &limitMemory{limit: 1 << 30}
		if err := build(plenty); err != nil || plenty.used < 64<<20 {
			t.Errorf("%s parse, 1 GiB: %v, %d bytes drawn", tc.name, err, plenty.used)
		}
	}
}
