package ingest

import (
	"github.com/sparkprof/sparkprof/internal/synth"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/errkind"
)

// allocated returns the bytes the runtime allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Event-log import bombs (B2: 4 imports of 2.3 MB reached 6.65 GB): a line
// the whole ingest memory could not hold, in bytes or in what decoding it
// costs, or a zstd window it could not, is refused as too large, naming the file and the limit, having
// allocated no more than about the limit; one that would fit but for the
// imports in progress is unavailable, to retry, and then imported.
func TestEventLogImportBudgeted(t *testing.T) {
	const limit = 16 << 20
	p := newBudgetPipeline(t, limit)
	for _, tc := range []struct {
		name string
		log  []byte
	}{
		{"a line of 24 MiB", gzipped(t, synth.EventLogBomb(synth.LongJSONString(24<<20)))},
		{"a line of 256 KiB of values", gzipped(t, synth.EventLogBomb(synth.ManyJSONValues(256<<10)))},
		{"a zstd window of 128 MiB", corpus.Read(t, "eventlogs", "nvidia", "nds_q88_photon_db_13_3.zstd")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			alloc := allocated(func() { _, err = p.Import("", File{Name: "spark-events/bomb.gz", Kind: "eventlog", Data: tc.log}) })
			if errkind.Of(err) != errkind.TooLarge {
				t.Fatalf("import: %v (kind %v), want too large", err, errkind.Of(err))
			}
			for _, want := range []string{"bomb.gz", "16.0 MiB", "--ingest-memory"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if alloc > 2*limit {
				t.Errorf("the refused import allocated %d bytes, more than twice the ingest memory (%d)", alloc, limit)
			}
			if inUse, peak, _ := p.Memory(); inUse != 0 || peak > limit {
				t.Errorf("ingest memory after: %d in use, peak %d; want 0 and at most %d", inUse, peak, limit)
			}
		})
	}

	// A log that fits alone, while other imports hold most of the memory.
	fits := gzipped(t, synth.EventLogBomb(synth.LongJSONString(2<<20)))
	held := &reservation{b: p.mem}
	if err := held.reserve(12<<20, "another import"); err != nil {
		t.Fatal(err)
	}
	_, err := p.Import("", File{Name: "fits.gz", Kind: "eventlog", Data: fits})
	if errkind.Of(err) != errkind.Unavailable || errkind.RetryAfter(err) <= 0 {
		t.Fatalf("import while the memory is held: %v (kind %v, retry after %v), want unavailable with a retry", err, errkind.Of(err), errkind.RetryAfter(err))
	}
	held.free()
	if _, err := p.Import("", File{Name: "fits.gz", Kind: "eventlog", Data: fits}); err != nil {
		t.Fatalf("import once the memory is free: %v", err)
	}
	res, err := p.Import("", File{Name: "local-1642039451826", Kind: "eventlog", Data: corpus.Read(t, "eventlogs", "apache", "local-1642039451826")})
	if err != nil || res.App == nil || res.App.ID == "" {
		t.Fatalf("a real event log: %+v, %v", res, err)
	}
	if inUse, peak, _ := p.Memory(); inUse != 0 || peak == 0 || peak > limit {
		t.Errorf("ingest memory after: %d in use, peak %d; want 0 and a peak of at most %d", inUse, peak, limit)
	}
}

// A watched directory's bomb is not analysed, and costs no more than the
// ingest memory; a log refused while the memory is spent is analysed at
// the next scan.
func TestWatchedEventLogBudgeted(t *testing.T) {
	const limit = 16 << 20
	p := newBudgetPipeline(t, limit)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bomb.gz"), gzipped(t, synth.EventLogBomb(synth.ManyJSONValues(256<<10))), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newLogWatch()
	var n int
	if alloc := allocated(func() { n = p.scanEventLogs("", dir, w) }); alloc > 2*limit {
		t.Errorf("the scan allocated %d bytes, more than twice the ingest memory (%d)", alloc, limit)
	}
	if n != 0 {
		t.Errorf("the bomb was analysed (%d logs)", n)
	}
	if inUse, peak, _ := p.Memory(); inUse != 0 || peak > limit {
		t.Errorf("ingest memory after: %d in use, peak %d; want 0 and at most %d", inUse, peak, limit)
	}

	log := filepath.Join(dir, "local-1642039451826")
	if err := os.WriteFile(log, corpus.Read(t, "eventlogs", "apache", "local-1642039451826"), 0o644); err != nil {
		t.Fatal(err)
	}
	held := &reservation{b: p.mem}
	if err := held.reserve(limit-1<<20, "another import"); err != nil {
		t.Fatal(err)
	}
	if n := p.scanEventLogs("", dir, w); n != 0 {
		t.Fatalf("analysed %d logs with the memory spent, want 0", n)
	}
	held.free()
	os.Chtimes(filepath.Join(dir, "bomb.gz"), time.Now(), time.Now()) // touched, and refused again
	if n := p.scanEventLogs("", dir, w); n != 1 {
		t.Fatalf("analysed %d logs once the memory is free, want 1", n)
	}
}
