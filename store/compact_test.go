package store

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
)

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(time.Hour)
	for i, e := range []string{"1", "2", "3"} {
		u := upload(t, e)
		u.From, u.Until = 10*hour+int64(i)*int64(10*time.Second), 10*hour+int64(i+1)*int64(10*time.Second)
		if err := db.Append("acme", u); err != nil {
			t.Fatal(err)
		}
	}
	u := upload(t, "1")
	u.From, u.Until = 11*hour, 11*hour+int64(10*time.Second)
	db.Append("acme", u)
	_, want := count(t, db, "acme", Query{})
	checkDiskBytes(t, db, dir, "in the log")

	// Not ready: the uploads were received just now.
	if err := db.compact(time.Now().UnixNano(), false); err != nil {
		t.Fatal(err)
	}
	if n, _ := count(t, db, "acme", Query{}); n != 4 {
		t.Fatalf("a quiet period has not passed, yet %d uploads remain of 4", n)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	n, total := count(t, db, "acme", Query{})
	if n != 2 || total != want {
		t.Errorf("after compaction %d blocks with %d, want 2 with %d", n, total, want)
	}
	if b, w := files(t, dir, "*.block"), files(t, dir, "*.wal"); len(b) != 2 || len(w) != 0 {
		t.Errorf("files after compaction: blocks %v, segments %v", b, w)
	}
	checkDiskBytes(t, db, dir, "compacted")
	m, _ := profile.ParseMatcher(`spark_executor_id="9"`)
	if n, _ := count(t, db, "acme", Query{Matchers: []profile.Matcher{m}}); n != 0 {
		t.Errorf("executor 9 is in no upload, yet %d blocks are selected", n)
	}
	m, _ = profile.ParseMatcher(`spark_executor_id="2"`)
	if n, _ := count(t, db, "acme", Query{Matchers: []profile.Matcher{m}}); n != 1 {
		t.Errorf("executor 2: %d blocks, want 1", n)
	}
	db.Close()

	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, total := count(t, db, "acme", Query{}); n != 2 || total != want {
		t.Errorf("reopened: %d blocks with %d, want 2 with %d", n, total, want)
	}
	late := upload(t, "4")
	late.From, late.Until = 10*hour+int64(time.Minute), 10*hour+int64(time.Minute+10*time.Second)
	if err := db.Append("acme", late); err != nil {
		t.Fatal(err)
	}
	if late.ID != 5 {
		t.Errorf("the upload after compaction got id %d, want 5", late.ID)
	}
	checkDiskBytes(t, db, dir, "reopened, a late upload in the log")
	db.Compact()
	var uploads []int
	db.Select("acme", Query{}, func(u *Upload) error { uploads = append(uploads, u.Uploads); return nil })
	if !slices.Equal(uploads, []int{4, 1}) || len(files(t, dir, "*.block")) != 2 {
		t.Errorf("after a late upload: blocks of %v uploads, files %v", uploads, files(t, dir, "*.block"))
	}
}

// TestCompactionCrash keeps the log a compaction made obsolete, as a crash
// before its deletion would: reopening counts every upload once.
func TestCompactionCrash(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	for _, e := range []string{"1", "2"} {
		db.Append("t", upload(t, e))
	}
	_, want := count(t, db, "t", Query{})
	seg := files(t, dir, "*.wal")[0]
	saved, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	db.Compact()
	db.Close()
	if err := os.WriteFile(seg, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n, total := count(t, db, "t", Query{}); n != 1 || total != want {
		t.Errorf("after a crash mid-compaction: %d uploads with %d, want 1 block with %d", n, total, want)
	}
	db.Compact()
	if w := files(t, dir, "*.wal"); len(w) != 0 {
		t.Errorf("the obsolete segment stays: %v", w)
	}
}

func TestRetentionDropsBlocks(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	defer db.Close()
	db.Append("t", upload(t, "1"))
	db.Compact()
	db.Append("t", upload(t, "2"))
	db.dropOld(time.Now().Add(time.Hour).UnixNano())
	if n, _ := count(t, db, "t", Query{}); n != 0 {
		t.Errorf("%d uploads past retention remain", n)
	}
	if f := append(files(t, dir, "*.block"), files(t, dir, "*.wal")...); len(f) != 0 {
		t.Errorf("files past retention remain: %v", f)
	}
}

// TestHeadBudget fills the head past its budget: the background compacts
// its oldest uploads into blocks of the still-open partition at once,
// without waiting for the partition to end, and merges those blocks in runs
// that fit the budget once it is quiet.
func TestHeadBudget(t *testing.T) {
	dir := t.TempDir()
	want, largest := fillPastBudget(t, dir)

	// Once the partition is quiet, its blocks and the rest of the head are
	// merged in runs that fit the budget, until no two fit together: with
	// a budget of one and a half early blocks, none do.
	quiet := time.Now().Add(time.Hour).UnixNano()
	mergeQuiet(t, dir, largest*3/2, quiet, want)

	// With room for the whole partition, it becomes one block.
	db, err := Open(dir, Options{HeadBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	if err := db.compact(quiet, false); err != nil {
		t.Fatal(err)
	}
	if n, total := count(t, db, "acme", Query{}); n != 1 || total != want {
		t.Errorf("with a large budget %d blocks with %d, want 1 with %d", n, total, want)
	}
	if b, w := files(t, dir, "*.block"), files(t, dir, "*.wal"); len(b) != 1 || len(w) != 0 {
		t.Errorf("files: blocks %v, segments %v", b, w)
	}
}

// windowUploads returns n uploads of consecutive ten-second windows, whose
// samples a block cannot sum, and the memory of the largest.
func windowUploads(t *testing.T, n int) (ups []*Upload, largest int64) {
	t.Helper()
	// The uploads' sizes differ a little: a decoder sizes a recording's
	// tables by the one it read before.
	for i := range n {
		u := upload(t, strconv.Itoa(i))
		shift := int64(i) * int64(10*time.Second)
		u.From, u.Until = u.From+shift, u.Until+shift
		for j := range u.Profile.Samples {
			u.Profile.Samples[j].Time += shift
		}
		ups = append(ups, u)
		largest = max(largest, u.Profile.MemSize())
	}
	return ups, largest
}

// fillPastBudget appends six uploads to tenant acme of a store in dir
// whose head holds two and a half: after each, the background brings the
// head under its budget by compacting its oldest uploads early, one a
// block. It returns the total of the uploads' samples and the memory of
// the largest block, and closes the store.
func fillPastBudget(t *testing.T, dir string) (want, largest int64) {
	t.Helper()
	ups, one := windowUploads(t, 6)
	db, err := Open(dir, Options{HeadBytes: 2*one + one/2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, u := range ups {
		for _, s := range u.Profile.Samples {
			want += s.Value
		}
		if err := db.Append("acme", u); err != nil {
			t.Fatal(err)
		}
		if st := db.Stats(); st.HeadBytes > db.opts.HeadBytes+one {
			t.Fatalf("after upload %d the head holds %d bytes; the budget is %d", i, st.HeadBytes, db.opts.HeadBytes)
		}
		// Wait for the background to bring the head under its budget again,
		// sooner than its once-a-minute round would.
		for deadline := time.Now().Add(30 * time.Second); db.Stats().HeadBytes > db.opts.HeadBytes; {
			if time.Now().After(deadline) {
				t.Fatalf("after upload %d the head stays at %d bytes, over its budget of %d", i, db.Stats().HeadBytes, db.opts.HeadBytes)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	st := db.Stats()
	if st.Blocks < 2 || st.BlockUploads+st.HeadUploads != 6 {
		t.Errorf("after six uploads over a budget of 2.5: %d blocks with %d uploads, %d in the head", st.Blocks, st.BlockUploads, st.HeadUploads)
	}
	if _, total := count(t, db, "acme", Query{}); total != want {
		t.Errorf("total %d, want %d", total, want)
	}
	// A quarter of the budget at a time: one upload per early block.
	db.Select("acme", Query{}, func(u *Upload) error {
		if u.Compacted() && u.Uploads != 1 {
			t.Errorf("an early block of %d uploads; a quarter of the budget holds one", u.Uploads)
		}
		return nil
	})
	for _, b := range db.tenants["acme"].blocks {
		largest = max(largest, b.Meta.MemSize)
	}
	return want, largest
}

// mergeQuiet opens the store in dir with a head budget of budget bytes and
// compacts tenant acme's partition as quiet at now: its blocks and the
// rest of its head, whose samples total want, are merged in runs that fit
// the budget, until no two blocks fit together, and a second compaction
// finds nothing to do.
func mergeQuiet(t *testing.T, dir string, budget, now, want int64) {
	t.Helper()
	db, err := Open(dir, Options{HeadBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.compact(now, false); err != nil {
		t.Fatal(err)
	}
	n, total := count(t, db, "acme", Query{})
	if st := db.Stats(); n < 2 || total != want || st.HeadUploads != 0 || st.HeadBytes != 0 || st.BlockUploads != 6 {
		t.Errorf("after the quiet compaction: %d blocks with %d (want several with %d), head %d uploads of %d bytes, blocks hold %d uploads",
			n, total, want, st.HeadUploads, st.HeadBytes, st.BlockUploads)
	}
	db.mu.RLock()
	blocks := slices.Clone(db.tenants["acme"].blocks)
	db.mu.RUnlock()
	for i := 1; i < len(blocks); i++ {
		if a, b := blocks[i-1].Meta.MemSize, blocks[i].Meta.MemSize; a+b <= db.opts.HeadBytes {
			t.Errorf("blocks %d and %d of %d and %d bytes fit the budget of %d together, yet stay apart", i-1, i, a, b, db.opts.HeadBytes)
		}
	}
	done := db.Stats().Compactions
	if err := db.compact(now, false); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Compactions != done {
		t.Errorf("a second quiet compaction wrote %d blocks; no two fit the budget together", st.Compactions-done)
	}
}

// TestRollup checks a block's rollup against the same sums made by a
// Merger, which interns every stack again: per stack, label set, type and
// state, over uploads of several executors with per-sample task and thread
// labels and times.
func TestRollup(t *testing.T) {
	var ups []*Upload
	for i := range 3 {
		u := upload(t, strconv.Itoa(i))
		p := u.Profile
		for j := range p.Samples {
			s := &p.Samples[j]
			s.Time += int64(i) * int64(10*time.Second)
			s.Labels = p.AddLabels(profile.Labels{
				{Name: profile.LabelTaskID, Value: strconv.Itoa(j % 5)},
				{Name: profile.LabelStageID, Value: strconv.Itoa(j % 2)},
				{Name: profile.LabelThreadName, Value: "t" + strconv.Itoa(j%3)},
			})
		}
		ups = append(ups, u)
	}
	merged, _ := block.Merge(0, nil, nil, inputs(ups), int64(time.Second))

	// The reference: a Merger over the block with the labels dropped.
	cp := *merged
	cp.OwnLabelSets()
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, DropThreads: true})
	m.AddFunc(&cp, func(s *profile.Sample) bool {
		s.Labels = cp.AddLabels(cp.LabelSet(s.Labels).Without(RollupDropped...))
		return true
	})
	want, got := rows(m.Profile()), rows(block.Rollup(merged))
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Errorf("rollup has %d rows, the merger's %d; they differ", len(got), len(want))
	}
	if r := block.Rollup(merged); len(r.Samples) != len(want) {
		t.Errorf("rollup has %d samples for %d distinct rows", len(r.Samples), len(want))
	}
}

// TestThreadRollup checks a block's thread rollup as TestRollup checks its
// rollup: the same sums, per thread, as a Merger keeping threads makes.
func TestThreadRollup(t *testing.T) {
	var ups []*Upload
	for i := range 3 {
		u := upload(t, strconv.Itoa(i))
		p := u.Profile
		for j := range p.Samples {
			s := &p.Samples[j]
			s.Time += int64(i) * int64(10*time.Second)
			s.Labels = p.AddLabels(profile.Labels{
				{Name: profile.LabelTaskID, Value: strconv.Itoa(j % 5)},
				{Name: profile.LabelPartition, Value: strconv.Itoa(j % 7)},
				{Name: profile.LabelStageID, Value: strconv.Itoa(j % 2)},
				{Name: profile.LabelThreadName, Value: "t" + strconv.Itoa(j%3)},
			})
		}
		ups = append(ups, u)
	}
	merged, _ := block.Merge(0, nil, nil, inputs(ups), int64(time.Second))
	if len(merged.Threads) < 2 {
		t.Fatalf("the block has %d threads; the test needs several", len(merged.Threads))
	}

	cp := *merged
	cp.OwnLabelSets()
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true})
	m.AddFunc(&cp, func(s *profile.Sample) bool {
		s.Labels = cp.AddLabels(cp.LabelSet(s.Labels).Without(ThreadRollupDropped...))
		s.Time = 0
		return true
	})
	r := block.ThreadRollup(merged)
	want, got := rows(m.Profile()), rows(r)
	if len(want) == 0 || !maps.Equal(got, want) {
		t.Errorf("thread rollup has %d rows, the merger's %d; they differ", len(got), len(want))
	}
	if len(r.Samples) != len(want) {
		t.Errorf("thread rollup has %d samples for %d distinct rows", len(r.Samples), len(want))
	}
	if len(r.Samples) <= len(block.Rollup(merged).Samples) {
		t.Errorf("thread rollup has %d samples, the rollup %d: no sum was split by thread", len(r.Samples), len(block.Rollup(merged).Samples))
	}
}

// A block writes a thread rollup only when it has at most half the rows
// of the samples: dump1's samples, each on a thread of its own (as Spark
// names a task's thread after it), sum to as many rows by thread, and a
// block of them has an empty part; its samples over ten windows sum to far
// fewer.
func TestThreadRollupWrittenWhenItSaves(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	for _, c := range []struct {
		name    string
		windows int
		threads bool
		want    bool
	}{
		{"a thread per sample", 1, true, false},
		{"ten windows", 10, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ups []*Upload
			for w := range c.windows {
				u := upload(t, "1")
				p := u.Profile
				for j := range p.Samples {
					s := &p.Samples[j]
					s.Time += int64(w) * int64(10*time.Second)
					if c.threads {
						s.Thread = p.AddThread(profile.Thread{ID: int64(j), Name: "task " + strconv.Itoa(j)})
					}
				}
				ups = append(ups, u)
			}
			p, meta := block.Merge(0, nil, nil, inputs(ups), int64(time.Second))
			b, _, err := block.Write(filepath.Join(t.TempDir(), "b.block"), meta, p, enc, 0)
			if err != nil {
				t.Fatal(err)
			}
			if b.Has(block.PartThreads) != c.want {
				t.Errorf("thread rollup written: %v, want %v (%d samples, %d rows by thread)", b.Has(block.PartThreads), c.want, len(p.Samples), len(block.ThreadRollup(p).Samples))
			}
			if _, err := block.Read(b.Path); err != nil {
				t.Errorf("reopen: %v", err)
			}
		})
	}
}

// rows sums p's samples by stack (its frames in full), label set, type,
// state and thread (its id and name), with every sample's labels in full.
func rows(p *profile.Profile) map[string]int64 {
	out := map[string]int64{}
	var buf []profile.FrameID
	for _, s := range p.Samples {
		var b strings.Builder
		buf = p.Stack(s.Stack, buf[:0])
		for _, f := range buf {
			fmt.Fprintf(&b, "%v;", p.Frames[f])
		}
		var thread profile.Thread
		if s.Thread != profile.NoThread {
			thread = p.Threads[s.Thread]
		}
		fmt.Fprintf(&b, "|%v|%s|%d|%d %s", p.SampleLabels(s), p.Types[s.Type], s.State, thread.ID, thread.Name)
		out[b.String()] += s.Value
	}
	return out
}
