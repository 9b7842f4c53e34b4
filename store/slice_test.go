package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
	"github.com/sparkprof/sparkprof/store/lake"
)

// slicedStore opens a store in a new directory with one-minute partitions
// whose blocks are cut into time slices however few samples they hold,
// and returns it with its directory and options, to reopen it, and the
// start of a partition.
func slicedStore(t *testing.T) (db *DB, dir string, opts Options, start int64) {
	t.Helper()
	n := block.MinSlicedSamples
	t.Cleanup(func() { block.MinSlicedSamples = n })
	block.MinSlicedSamples = 1
	dir = t.TempDir()
	opts = Options{Partition: time.Minute}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db, dir, opts, time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).UnixNano()
}

// sliceData is the minute of uploads TestTimeSlices stores from start.
type sliceData struct {
	start int64
	all   []profile.Sample // the uploads' samples
	heap  []profile.Point  // the uploads' metric points
}

// sec returns the time s seconds after the start.
func (d *sliceData) sec(s int) int64 { return d.start + int64(s)*int64(time.Second) }

// appendUploads appends to tenant t of db six ten-second windows of
// uploads of executors 1 and 2, whose samples are at whole seconds, as
// compacted samples keep them, and of one whose samples have no time;
// executor 1's uploads hold one metric point each.
func (d *sliceData) appendUploads(t *testing.T, db *DB) {
	t.Helper()
	for w := range 6 {
		for _, exec := range []string{"1", "2", "untimed"} {
			u := upload(t, exec)
			p := u.Profile
			p.Start, p.End = d.sec(10*w), d.sec(10*w+10)
			if exec == "untimed" {
				// Samples without a time stand for their upload's window,
				// here the block's.
				p.Start, p.End = d.sec(0), d.sec(60)
			}
			u.From, u.Until = p.Start, p.End
			p.Series = nil
			for i := range p.Samples {
				// Whole seconds, as compacted samples keep them.
				p.Samples[i].Time = d.sec(10*w + i%10)
				if exec == "untimed" {
					p.Samples[i].Time = 0
				}
			}
			if exec == "1" {
				pt := profile.Point{Time: d.sec(10*w) + 7e8, Value: float64(w)}
				p.Series = []profile.Series{{Name: "jvm.heap.used", Unit: "bytes", Points: []profile.Point{pt}}}
				d.heap = append(d.heap, pt)
			}
			d.all = append(d.all, p.Samples...)
			if err := db.Append("t", u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// want returns the total of the samples in range r, the untimed ones
// counting in any range that overlaps the block, and the number of metric
// points in r.
func (d *sliceData) want(r [2]int64) (total int64, points int) {
	overlaps := (r[0] == 0 || r[0] < d.sec(60)) && (r[1] == 0 || r[1] > d.sec(0))
	for _, s := range d.all {
		in := (r[0] == 0 || s.Time >= r[0]) && (r[1] == 0 || s.Time < r[1])
		if (s.Time == 0 && overlaps) || (s.Time != 0 && in) {
			total += s.Value
		}
	}
	for _, pt := range d.heap {
		if (r[0] == 0 || pt.Time >= r[0]) && (r[1] == 0 || pt.Time < r[1]) {
			points++
		}
	}
	return total, points
}

// rangeAnswer is what a query over a range of tenant t reads: the uploads
// selected, the total of their samples in range, the same from their
// rollups where those serve and from their timelines, and their metric
// points in range.
type rangeAnswer struct {
	uploads                 int
	total, rolled, timeline int64
	points                  int
}

// answer queries range r of tenant t of db.
func answer(db *DB, r [2]int64) (rangeAnswer, error) {
	var a rangeAnswer
	err := db.Select("t", Query{From: r[0], Until: r[1]}, func(u *Upload) error { return a.add(u, r) })
	return a, err
}

// add adds what upload u holds in range r to a.
func (a *rangeAnswer) add(u *Upload, r [2]int64) error {
	f := profile.Filter{From: r[0], Until: r[1]}
	a.uploads++
	p, err := u.Load()
	if err != nil {
		return err
	}
	keep := f.Selector(p)
	for i := range p.Samples {
		if keep(&p.Samples[i]) {
			a.total += p.Samples[i].Value
		}
	}
	// A rollup stands for the samples when the range covers
	// them (as the server's rollupMayServe decides).
	lo, hi := u.SampleSpan()
	if u.HasRollup() && lo != 0 && (r[0] == 0 || r[0] <= lo) && (r[1] == 0 || r[1] > hi) {
		roll, err := u.LoadRollup()
		if err != nil {
			return err
		}
		for _, s := range roll.Samples {
			a.rolled += s.Value
		}
	} else {
		for i := range p.Samples {
			if keep(&p.Samples[i]) {
				a.rolled += p.Samples[i].Value
			}
		}
	}
	// A timeline stands for the samples in any range.
	tl, err := u.LoadTimeline()
	if err != nil {
		return err
	}
	if tl == nil {
		tl = p
	}
	keepRow := f.Selector(tl)
	for i := range tl.Samples {
		if keepRow(&tl.Samples[i]) {
			a.timeline += tl.Samples[i].Value
		}
	}
	series, err := u.LoadSeries()
	for _, sr := range series {
		for _, pt := range sr.Points {
			if (r[0] == 0 || pt.Time >= r[0]) && (r[1] == 0 || pt.Time < r[1]) {
				a.points++
			}
		}
	}
	return err
}

// TestTimeSlices compacts a minute of uploads into a block cut into ten
// slices of six seconds: a range that covers the block reads the block,
// one that cuts it reads only the slices it overlaps, and either way the
// samples in range, their rollups, their timelines and the metric points
// are those of the uploads, before and after a restart. A damaged slice is an error that
// names the file.
func TestTimeSlices(t *testing.T) {
	db, dir, opts, start := slicedStore(t)
	var err error
	defer func() { db.Close() }()
	d := &sliceData{start: start}
	d.appendUploads(t, db)
	sec := d.sec
	ranges := [][2]int64{{0, 0}, {sec(0), sec(60)}, {sec(15), sec(42)}, {sec(17), sec(31)}, {sec(30), sec(36)},
		{sec(59), 0}, {0, sec(6)}, {sec(-30), sec(-1)}, {sec(61), sec(70)}}
	check := func(db *DB, when string, wantUploads []int) {
		t.Helper()
		for i, r := range ranges {
			a, err := answer(db, r)
			if err != nil {
				t.Fatal(err)
			}
			total, points := d.want(r)
			if a.total != total || a.rolled != total || a.timeline != total || a.points != points {
				t.Errorf("%s, %v–%v s: samples %d, rollups where they serve %d, timelines %d, metric points %d; want %d, %d", when,
					(r[0]-start)/1e9, (r[1]-start)/1e9, a.total, a.rolled, a.timeline, a.points, total, points)
			}
			if wantUploads != nil && a.uploads != wantUploads[i] {
				t.Errorf("%s, %v–%v s: %d uploads selected, want %d", when, (r[0]-start)/1e9, (r[1]-start)/1e9, a.uploads, wantUploads[i])
			}
		}
	}
	check(db, "head", nil)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	blocks := files(t, dir, "*.block")
	if len(blocks) != 1 {
		t.Fatalf("blocks: %v", blocks)
	}
	b, err := block.Read(blocks[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Meta.Slices) != 11 {
		t.Fatalf("%d time slices, want ten of six seconds and the untimed samples'", len(b.Meta.Slices))
	}
	// The block when the range covers it; else the slices the range
	// overlaps, and the untimed samples' when it overlaps the block.
	selected := []int{1, 1, 6, 5, 2, 2, 2, 0, 0}
	check(db, "block", selected)
	db.Close()
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	check(db, "block after a restart", selected)
	db.Close()
	checkDamagedSlice(t, dir, opts, b, sec)
}

// checkDamagedSlice damages the samples of slice 3 (seconds 18 to 24) of
// block b of the closed store in dir, which holds tenant t's samples, and
// opens the store with opts: the queries that read the slice fail, naming
// the file, and no other does.
func checkDamagedSlice(t *testing.T, dir string, opts Options, b *block.Block, sec func(int) int64) {
	t.Helper()
	damageRowGroup(t, lake.SamplesPath(b.Path), 3, lake.ColStack)
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	load := func(from, until int) error {
		return db.Select("t", Query{From: sec(from), Until: sec(until)}, func(u *Upload) error {
			_, err := u.Load()
			return err
		})
	}
	if err := load(19, 23); err == nil || !strings.Contains(err.Error(), lake.BlockID(b.Path)) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("a range in the damaged slice: %v", err)
	}
	if err := load(31, 35); err != nil {
		t.Errorf("a range in another slice: %v", err)
	}
}

// TestSlicedBlockOpen checks a block file's slices against its size: a
// file cut short, or longer than its parts, is refused at open with its
// name, never read past its end.
func TestSlicedBlockOpen(t *testing.T) {
	blk := oneUploadBlock(t, 1)
	data, err := os.ReadFile(blk)
	if err != nil {
		t.Fatal(err)
	}
	if string(data[:len(block.Magic4)]) != block.Magic4 {
		t.Fatalf("block starts %q, want %q", data[:len(block.Magic4)], block.Magic4)
	}
	old, err := os.ReadFile(filepath.Join("testdata", "spblock3-sliced.block"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"cut short", data[:len(data)-5], "time slice"},
		{"longer", append(data[:len(data):len(data)], 0, 0, 0), "bytes after the last part"},
		{"unsliced magic", append([]byte(block.Magic), data[len(block.Magic):]...), "time slices under"},
		{"magic without Parquet files", append([]byte(block.Magic3), data[len(block.Magic3):]...), "Parquet files under"},
		{"SPBLOCK3 cut short", old[:len(old)-5], "time slice"},
		{"SPBLOCK3 longer", append(old[:len(old):len(old)], 0, 0, 0), "bytes after the last part"},
		{"SPBLOCK3 with the magic of Parquet files", append([]byte(block.Magic4), old[len(block.Magic4):]...), "Parquet files under"},
		// A sliced block without a thread rollup would take the thread
		// rollup for the first slice's part.
		{"SPBLOCK3 without a thread rollup", append([]byte(block.Magic2), old[len(block.Magic2):]...), "bytes after the last part"},
	} {
		if err := os.WriteFile(blk, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := block.Read(blk)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(blk)) {
			t.Errorf("%s: %v, want an error naming the file and %q", c.name, err, c.want)
		}
	}
}

// TestOlderBlocks opens blocks written before blocks had a thread rollup
// part, and before that a timeline part: they have none, and their samples
// still read.
func TestOlderBlocks(t *testing.T) {
	for _, c := range []struct {
		name     string
		truncate int // at the part
		timeline bool
	}{
		{"without a timeline", block.PartTimeline, false},
		{"without a thread rollup", block.PartThreads, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			blk := oldBlock(t, "spblock3.block")
			b, err := block.Read(blk)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(blk, b.Parts[c.truncate].Off-8); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(blk, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteAt([]byte(block.Magic), 0) // unsliced, as these were
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			db, err := Open(filepath.Dir(filepath.Dir(blk)), Options{Partition: time.Minute})
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer db.Close()
			n := 0
			err = db.Select("t", Query{}, func(u *Upload) error {
				n++
				if tl, err := u.LoadTimeline(); (tl != nil) != c.timeline || err != nil {
					t.Errorf("timeline: %v, %v; want one: %v", tl, err, c.timeline)
				}
				if r, err := u.LoadThreadRollup(); r != nil || err != nil {
					t.Errorf("thread rollup of a block without one: %v, %v", r, err)
				}
				p, err := u.Load()
				if err == nil && len(p.Samples) == 0 {
					t.Error("no samples")
				}
				return err
			})
			if err != nil || n != 1 {
				t.Errorf("%d uploads: %v", n, err)
			}
		})
	}
}

// appendTaskUploads appends to tenant t of db six ten-second windows from
// start of uploads of executors 1 and 2, whose samples carry task ids (12
// an upload, 144 in all) and thread names of their own.
func appendTaskUploads(t *testing.T, db *DB, start int64) {
	t.Helper()
	for w := range 6 {
		for e, exec := range []string{"1", "2"} {
			u := upload(t, exec)
			p := u.Profile
			p.Start, p.End = start+int64(10*w)*int64(time.Second), start+int64(10*w+10)*int64(time.Second)
			u.From, u.Until = p.Start, p.End
			p.OwnLabelSets()
			for i := range p.Samples {
				task := w*100 + e*20 + i%12
				p.Samples[i].Time = p.Start + int64(i%10)*int64(time.Second)
				p.Samples[i].Labels = p.AddLabels(profile.Labels{
					{Name: profile.LabelTaskID, Value: strconv.Itoa(task)},
					{Name: profile.LabelThreadName, Value: fmt.Sprintf("worker %d", task)},
				})
			}
			if err := db.Append("t", u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// selectedSamples sums the samples m selects of the uploads q selects of
// tenant t of db, whose one block spans the minute from start, and counts
// those uploads: the whole block, or its time slices.
func selectedSamples(t *testing.T, db *DB, start int64, q Query, m profile.Matcher) (blocks, slices int, total int64) {
	t.Helper()
	f := profile.Filter{Labels: []profile.Matcher{m}}
	err := db.Select("t", q, func(u *Upload) error {
		if u.Uploads != 12 {
			t.Fatalf("%v: an upload of %d uploads, not of the block", m, u.Uploads)
		}
		if u.FirstSample == start && u.LastSample == start+int64(59*time.Second) {
			blocks++
		} else {
			slices++
		}
		p, err := u.Load()
		if err != nil {
			return err
		}
		keep := f.Selector(p)
		for _, s := range p.Samples {
			if keep(&s) {
				total += s.Value
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return blocks, slices, total
}

// TestSampleRanges compacts a minute of uploads whose samples carry task
// ids (144 of them, too many for the meta to list) into a block of ten
// time slices: a query for some tasks reads only the slices whose bounds
// of task ids hold one, and none of the block when no bound does, and
// selects the samples a read of every slice does, before and after a
// restart. A label with values that are not integers has no bounds.
func TestSampleRanges(t *testing.T) {
	db, dir, opts, start := slicedStore(t)
	var err error
	defer func() { db.Close() }()
	appendTaskUploads(t, db, start)
	matcher := func(name string, op profile.MatchOp, v string) profile.Matcher {
		m, err := profile.NewMatcher(name, op, v)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := func(db *DB) {
		t.Helper()
		for _, c := range []struct {
			m      profile.Matcher
			slices int // slices read, -1 for the whole block
			found  bool
		}{
			{matcher(profile.LabelTaskID, profile.MatchEqual, "225"), 2, true},             // window 2 (seconds 20–29): two slices
			{matcher(profile.LabelTaskID, profile.MatchRegexp, "5|225|99999"), 4, true},    // windows 0 and 2
			{matcher(profile.LabelTaskID, profile.MatchEqual, "99999"), 0, false},          // above every bound
			{matcher(profile.LabelTaskID, profile.MatchEqual, "115"), 3, false},            // within the bounds of the slices window 1 is in, not a task
			{matcher(profile.LabelTaskID, profile.MatchEqual, "abc"), 0, false},            // not an integer
			{matcher(profile.LabelTaskID, profile.MatchRegexp, "2[0-9]+"), -1, true},       // not literals: no bounds used
			{matcher(profile.LabelThreadName, profile.MatchEqual, "worker 225"), -1, true}, // not integers: no bounds
			{matcher(profile.LabelTaskID, profile.MatchRegexp, "|225"), -1, true},          // matches samples without a task
		} {
			blocks, slices, total := selectedSamples(t, db, start, Query{Matchers: []profile.Matcher{c.m}, SampleMatchers: []profile.Matcher{c.m}}, c.m)
			if wantBlocks := map[bool]int{true: 1}[c.slices < 0]; blocks != wantBlocks || slices != max(c.slices, 0) {
				t.Errorf("%v: read the block %d times and %d slices, want %d and %d", c.m, blocks, slices, wantBlocks, max(c.slices, 0))
			}
			// The whole block, read without bounds.
			if _, _, all := selectedSamples(t, db, start, Query{}, c.m); total != all || (all > 0) != c.found {
				t.Errorf("%v: %d selected, %d in the block; found %v", c.m, total, all, c.found)
			}
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	b := db.tenants["t"].blocks[0]
	if got := b.Meta.SampleRanges; len(got) != 1 || got[profile.LabelTaskID] != [2]int64{0, 531} {
		t.Errorf("block bounds %v, want the task ids' 0–531 alone", got)
	}
	if len(b.Meta.Slices) != block.SlicesPerBlock {
		t.Fatalf("%d slices, want %d", len(b.Meta.Slices), block.SlicesPerBlock)
	}
	check(db)
	db.Close()
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	check(db)
}
