package eventlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

func readAll(t testing.TB, path string) (lines [][]byte, r *Reader) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		l, _, err := r.Next()
		if err == io.EOF {
			return lines, r
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, append([]byte(nil), l...))
	}
}

// TestCorpus checks line and TaskEnd counts against the corpus README.
func TestCorpus(t *testing.T) {
	tests := []struct {
		rel              []string
		lines, taskEnds  int
		parts, truncated int
	}{
		{[]string{"eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"}, 17717, 8630, 1, 0},
		{[]string{"eventlogs", "nvidia", "nds_q88_photon_db_13_3.zstd"}, 10141, 4896, 1, 0},
		{[]string{"eventlogs", "nvidia", "eventlog_v2_local-1623876083964"}, 5621, 2801, 2, 0},
		{[]string{"eventlogs", "nvidia", "db_sim_eventlog"}, 5621, 2801, 2, 0},
		{[]string{"eventlogs", "nvidia", "spark2-eventlog.zstd"}, 58, 6, 1, 0},
		{[]string{"eventlogs", "nvidia", "truncated_eventlog"}, 62, 21, 1, 0},
		{[]string{"eventlogs", "nvidia", "malformed_json_eventlog.zstd"}, 477, 217, 1, 0},
		{[]string{"eventlogs", "nvidia", "java_udf_eventlog"}, 27, 2, 1, 0},
		{[]string{"eventlogs", "apache", "local-1642039451826"}, 115, 35, 1, 0},
		{[]string{"eventlogs", "apache", "local-1430917381535_1"}, 5, 0, 1, 0},
		{[]string{"eventlogs", "apache", "eventlog_v2_local-1766844910796"}, 15, 2, 1, 0},
	}
	for _, tt := range tests {
		t.Run(filepath.Join(tt.rel...), func(t *testing.T) {
			path := corpus.Path(t, tt.rel...)
			parts, err := Parts(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != tt.parts {
				t.Errorf("parts = %d, want %d", len(parts), tt.parts)
			}
			lines, r := readAll(t, path)
			if len(lines) != tt.lines {
				t.Errorf("lines = %d, want %d", len(lines), tt.lines)
			}
			n := 0
			for _, l := range lines {
				if bytes.Contains(l, []byte(`"Event":"SparkListenerTaskEnd"`)) {
					n++
				}
			}
			if n != tt.taskEnds {
				t.Errorf("TaskEnd lines = %d, want %d", n, tt.taskEnds)
			}
			if len(r.Truncations) != tt.truncated {
				t.Errorf("truncations = %v, want %d", r.Truncations, tt.truncated)
			}
		})
	}
}

// TestDatabricksOrder checks that the timestamped gzip part precedes the
// un-suffixed "eventlog" part, which is the newest.
func TestDatabricksOrder(t *testing.T) {
	parts, err := Parts(corpus.Path(t, "eventlogs", "nvidia", "db_sim_eventlog"))
	if err != nil {
		t.Fatal(err)
	}
	if got := filepath.Base(parts[0]); got != "eventlog-2021-06-15--15-00.gz" {
		t.Errorf("first part = %s", got)
	}
	if got := filepath.Base(parts[1]); got != "eventlog" {
		t.Errorf("second part = %s", got)
	}
}

// TestZstdFrames writes the log the way Spark does with
// setCloseFrameOnFlush (one zstd frame per flush; the corpus has no such
// file), then cuts it at every offset: the lines of complete data must come
// back in order and the cut must be reported.
func TestZstdFrames(t *testing.T) {
	plain := corpus.Read(t, "eventlogs", "nvidia", "spark2-eventlog.zstd")
	want := bytes.Split(bytes.TrimSuffix(plain, []byte("\n")), []byte("\n"))
	var comp bytes.Buffer
	for _, l := range want {
		w, err := zstd.NewWriter(&comp)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(l)
		w.Write([]byte("\n"))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	full := comp.Bytes()
	for _, cut := range []int{len(full), len(full) - 1, len(full) / 2, len(full) / 3, 5, 1} {
		path := filepath.Join(dir, "app.zstd.inprogress")
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		got, r := readAll(t, path)
		if len(got) > len(want) {
			t.Fatalf("cut %d: %d lines, want at most %d", cut, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) && i != len(got)-1 {
				t.Fatalf("cut %d: line %d differs", cut, i+1)
			}
		}
		if cut == len(full) {
			if len(got) != len(want) || len(r.Truncations) != 0 {
				t.Errorf("whole log: %d lines, truncations %v", len(got), r.Truncations)
			}
		} else if len(r.Truncations) != 1 {
			t.Errorf("cut %d: truncations = %v, want 1", cut, r.Truncations)
		}
	}
}

// TestGzipTruncated cuts a gzip log and expects the complete lines and one
// reported truncation.
func TestGzipTruncated(t *testing.T) {
	plain := corpus.Read(t, "eventlogs", "nvidia", "truncated_eventlog")
	var comp bytes.Buffer
	w := gzip.NewWriter(&comp)
	w.Write(plain)
	w.Close()
	path := filepath.Join(t.TempDir(), "app.gz")
	if err := os.WriteFile(path, comp.Bytes()[:comp.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	got, r := readAll(t, path)
	if len(got) == 0 || len(got) >= 62 {
		t.Errorf("lines = %d, want a partial count", len(got))
	}
	if len(r.Truncations) != 1 || !ErrTruncated(r.Truncations[0].Err) {
		t.Errorf("truncations = %v", r.Truncations)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		head []byte
		want Codec
	}{
		{"a.zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}, Zstd},
		{"a", []byte{0x28, 0xb5, 0x2f, 0xfd}, Zstd},
		{"a", []byte{0x1f, 0x8b, 8, 0}, Gzip},
		{"a.gz", []byte(`{"Ev`), Plain},
		{"a.zstd.inprogress", nil, Zstd},
		{"a.gz", nil, Gzip},
		{"a", nil, Plain},
	}
	for _, tt := range tests {
		if got := Detect(tt.name, tt.head); got != tt.want {
			t.Errorf("Detect(%q, %x) = %s, want %s", tt.name, tt.head, got, tt.want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Error("empty dir: no error")
	}
}

func FuzzReader(f *testing.F) {
	f.Add(corpus.Read(f, "eventlogs", "nvidia", "truncated_eventlog")[:4000])
	raw, _ := os.ReadFile(corpus.Path(f, "eventlogs", "nvidia", "spark2-eventlog.zstd"))
	f.Add(raw)
	f.Add([]byte{0x1f, 0x8b})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for i := 0; i < 1<<16; i++ {
			if _, _, err := r.Next(); err != nil {
				return
			}
		}
	})
}

// BenchmarkNext measures decompression and line splitting of a 36.5 MB
// (uncompressed) zstd log; MB/s is of uncompressed bytes.
func BenchmarkNext(b *testing.B) {
	path := corpus.Path(b, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")
	b.SetBytes(36555789)
	for b.Loop() {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, _, err := r.Next(); err != nil {
				break
			}
		}
		r.Close()
	}
}

// TestZstdWindowTooLarge: a zstd log whose frame asks for a window past
// the zstd command's default limit is refused without that memory, and
// the error says how to read it.
func TestZstdWindowTooLarge(t *testing.T) {
	plain := corpus.Read(t, "eventlogs", "nvidia", "truncated_eventlog")
	var comp bytes.Buffer
	w, err := zstd.NewWriter(&comp, zstd.WithWindowSize(256<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(plain)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "app.zstd")
	if err := os.WriteFile(path, comp.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, r := readAll(t, path)
	runtime.ReadMemStats(&after)
	if len(got) != 0 || len(r.Truncations) != 1 || !strings.Contains(r.Truncations[0].Err.Error(), "zstd -d --memory") {
		t.Errorf("%d lines, truncations %v; want none and an error saying how to decompress it", len(got), r.Truncations)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("reading allocated %d MB", n>>20)
	}
}
