package store

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store/block"
)

// TestCorruptBlock: a damaged block meta stops the start, a damaged part
// fails the queries that read it; both errors name the file.
func TestCorruptBlock(t *testing.T) {
	load := func(u *Upload) error { _, err := u.Load(); return err }
	for _, c := range []struct {
		name   string
		offset func(b *block.Block) int64 // of the flipped byte
		atOpen bool
		read   func(u *Upload) error
	}{
		{"meta", func(*block.Block) int64 { return int64(len(block.Magic)) + 8 + 2 }, true, nil},
		{"samples", func(b *block.Block) int64 { return b.Parts[block.PartSamples].Off + 2 }, false, load},
		{"series", func(b *block.Block) int64 { return b.Parts[block.PartSeries].Off + 2 }, false, func(u *Upload) error {
			_, err := u.LoadSeries()
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db, _ := Open(dir, Options{})
			db.Append("t", upload(t, "1"))
			db.Compact()
			db.Close()
			blk := files(t, dir, "*.block")[0]
			b, err := block.Read(blk)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(blk)
			data[c.offset(b)] ^= 0xff
			os.WriteFile(blk, data, 0o644)
			named := func(err error) bool {
				return err != nil && strings.Contains(err.Error(), filepath.Base(blk)) &&
					(strings.Contains(err.Error(), "checksum") || strings.Contains(err.Error(), "meta"))
			}
			db, err = Open(dir, Options{})
			if c.atOpen {
				if !named(err) {
					t.Errorf("open with a damaged block meta: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("open with a damaged block part: %v", err)
			}
			defer db.Close()
			err = db.Select("t", Query{}, c.read)
			if !named(err) {
				t.Errorf("query of a damaged block: %v", err)
			}
		})
	}
}

// TestBlockCache: blocks stay on disk until a query reads them; what is
// read is cached within the budget, and a
// replaced block's parts leave the cache.
func TestBlockCache(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	hour := int64(time.Hour)
	for i := range 3 {
		u := upload(t, "1")
		u.From, u.Until = int64(10+i)*hour, int64(10+i)*hour+int64(10*time.Second)
		db.Append("t", u)
	}
	_, want := count(t, db, "t", Query{})
	db.Compact()
	db.Close()

	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Blocks != 3 || st.CacheBytes != 0 || st.CacheMisses != 0 {
		t.Fatalf("after open: %+v, want 3 blocks and nothing read", st)
	}
	count(t, db, "t", Query{})
	one := db.Stats().CacheBytes / 3 // the blocks hold the same samples
	db.Close()

	// A budget smaller than a block's samples keeps none of them.
	db, err = Open(dir, Options{CacheBytes: one / 2})
	if err != nil {
		t.Fatal(err)
	}
	count(t, db, "t", Query{From: 12 * hour})
	count(t, db, "t", Query{From: 12 * hour})
	if st := db.Stats(); st.CacheBytes != 0 || st.CacheMisses < 1 {
		t.Errorf("a block larger than the budget, read twice: %+v, want nothing kept", st)
	}
	db.Close()

	db, err = Open(dir, Options{CacheBytes: one * 3 / 2}) // one block's samples fit, not two
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 2 {
		if _, total := count(t, db, "t", Query{}); total != want {
			t.Errorf("round %d: total %d, want %d", round, total, want)
		}
	}
	st := db.Stats()
	if st.CacheMisses+st.CacheHits != 6 || st.CacheMisses < 3 || st.CacheBytes > one*3/2 || st.CacheBytes == 0 {
		t.Errorf("two rounds over three blocks that do not fit: %+v, want 6 reads, the first 3 misses, a block kept, at most %d bytes", st, one*3/2)
	}
	// The block the cache kept is a hit when read again.
	keys := db.cache.Keys()
	if len(keys) != 1 {
		t.Fatalf("the cache holds %v, want one block's samples", keys)
	}
	var kept Query
	db.mu.RLock()
	blocks := db.tenants["t"].blocks
	db.mu.RUnlock()
	for _, b := range blocks {
		if b.Path == keys[0].Path {
			kept = Query{From: b.Meta.From, Until: b.Meta.Until}
		}
	}
	hits := st.CacheHits
	if n, total := count(t, db, "t", kept); n != 1 || total != want/3 {
		t.Errorf("the kept block: %d with %d, want 1 with %d", n, total, want/3)
	}
	if st := db.Stats(); st.CacheHits != hits+1 {
		t.Errorf("reading the cached block again: %+v, want a hit", st)
	}

	// A late upload replaces the last block: the old block's parts go.
	u := upload(t, "2")
	u.From, u.Until = 12*hour, 12*hour+int64(time.Second)
	db.Append("t", u)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	// The new block comes in cached; the old one's parts are gone.
	for _, k := range db.cache.Keys() {
		if _, err := os.Stat(k.Path); err != nil {
			t.Errorf("the cache holds %s part %d of a replaced block", k.Path, k.Part)
		}
	}
	misses := db.Stats().CacheMisses
	var rollups int
	db.Select("t", Query{From: 12 * hour}, func(u *Upload) error {
		if _, err := u.LoadRollup(); err != nil {
			t.Fatal(err)
		}
		rollups++
		return nil
	})
	if st := db.Stats(); rollups != 1 || st.CacheMisses != misses {
		t.Errorf("reading the rollup of the block compaction just wrote: %d misses, want none", st.CacheMisses-misses)
	}
	if _, total := count(t, db, "t", Query{From: 12 * hour}); total != want/3+want/3 {
		t.Errorf("after the late upload: total %d, want %d", total, want/3+want/3)
	}
	if _, total := count(t, db, "t", Query{}); total != want+want/3 {
		t.Errorf("after the late upload: total %d, want %d", total, want+want/3)
	}
}

// TestBlockGoneDuringQuery: a block file removed between a query's
// selection and its read gives an error that says to run the query again.
func TestBlockGoneDuringQuery(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	db.Append("t", upload(t, "1"))
	db.Compact()
	db.Close()
	db, _ = Open(dir, Options{}) // nothing cached
	defer db.Close()
	err := db.Select("t", Query{}, func(u *Upload) error {
		os.Remove(files(t, dir, "*.block")[0])
		_, err := u.Load()
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "run it again") {
		t.Errorf("reading a removed block: %v", err)
	}
}

// TestSelectBySampleValues: Select skips the uploads, in the head and
// in blocks, whose samples carry no value of a label a sample matcher
// needs, and keeps those it cannot rule out.
func TestSelectBySampleValues(t *testing.T) {
	db, err := Open(t.TempDir(), Options{Partition: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Executor 1's samples carry an app id in their label sets (as a JFR's
	// contexts give them); executor 2's, a partition later, none at all.
	a, b := upload(t, "1"), upload(t, "2")
	a.Profile.OwnLabelSets()
	for i := range a.Profile.Samples {
		s := &a.Profile.Samples[i]
		s.Labels = a.Profile.AddLabels(a.Profile.LabelSet(s.Labels).Merge(profile.Labels{{Name: profile.LabelAppID, Value: "app-a"}}))
	}
	b.From, b.Until = int64(time.Hour)+1, int64(time.Hour)+2
	for _, u := range []*Upload{a, b} {
		if err := db.Append("t", u); err != nil {
			t.Fatal(err)
		}
	}
	execs := func(ms ...profile.Matcher) []string {
		t.Helper()
		var out []string
		if err := db.Select("t", Query{SampleMatchers: ms}, func(u *Upload) error {
			p, err := u.Load()
			if err != nil {
				return err
			}
			exec, _ := u.Labels.Get(profile.LabelExecutorID)
			if exec == "" { // a block: its upload labels are on its samples
				exec = p.Label(p.Samples[0], profile.LabelExecutorID)
			}
			out = append(out, exec)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	eq := func(name, v string) profile.Matcher {
		return profile.Matcher{Name: name, Op: profile.MatchEqual, Value: v}
	}
	for _, when := range []string{"head", "blocks"} {
		if when == "blocks" {
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if st := db.Stats(); st.Blocks != 2 || st.HeadUploads != 0 || st.HeadBytes != 0 {
				t.Fatalf("after compaction: %+v, want two blocks, an empty head and no head memory", st)
			}
		}
		for _, c := range []struct {
			m    profile.Matcher
			want []string
		}{
			{eq(profile.LabelAppID, "app-a"), []string{"1"}},
			{eq(profile.LabelAppID, "app-b"), nil},
			{profile.Matcher{Name: profile.LabelAppID, Op: profile.MatchNotEqual, Value: "app-a"}, []string{"1", "2"}}, // "" matches
			{eq(profile.LabelThreadName, "pool-2-thread-1"), []string{"1", "2"}},                                       // dump1's contexts
			{eq(profile.LabelThreadName, "no such thread"), nil},
			{eq(profile.LabelExecutorID, "2"), []string{"2"}}, // an upload label
		} {
			if got := execs(c.m); !slices.Equal(got, c.want) {
				t.Errorf("%s: %s selects executors %q, want %q", when, c.m, got, c.want)
			}
		}
		if when == "head" && db.Stats().HeadBytes <= a.memSize+b.memSize {
			t.Errorf("head memory %d: the uploads' label values are not counted", db.Stats().HeadBytes)
		}
	}
}

// TestBlockSeries: an upload's metric series come back with its labels,
// from the head, from a block's series part (its samples part, which
// every slice query decodes, holds none), and when that block is merged
// with a later upload of its partition.
func TestBlockSeries(t *testing.T) {
	dir := t.TempDir()
	db, _ := Open(dir, Options{})
	defer db.Close()
	withSeries := func(exec string, points ...profile.Point) *Upload {
		u := upload(t, exec)
		u.Profile.Labels = u.Profile.Labels.Merge(u.Labels)
		u.Profile.Series = append(u.Profile.Series, profile.Series{
			Name: "jvm.gc.pause", Unit: "nanoseconds", Labels: profile.Labels{{Name: "gc", Value: "G1 Young Generation"}}, Points: points,
		})
		return u
	}
	want := map[string][]profile.Point{"7": {{Time: 1700000000e9, Value: 4e6}, {Time: 1700000002e9, Value: 7e6}}}
	if err := db.Append("t", withSeries("7", want["7"]...)); err != nil {
		t.Fatal(err)
	}
	if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("head: %v, want %v", got, want)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("block: %v, want %v", got, want)
	}
	b, err := block.Read(files(t, dir, "*.block")[0])
	if err != nil {
		t.Fatal(err)
	}
	if p, err := b.Load(block.PartSamples, db.dec); err != nil || len(p.Series) != 0 {
		t.Errorf("the samples part holds %d series (%v), want none", len(p.Series), err)
	}
	want["8"] = []profile.Point{{Time: 1700000003e9, Value: 5e6}}
	mergeIntoBlock(t, db, dir, withSeries("8", want["8"]...))
	if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("merged block: %v, want %v", got, want)
	}
}

// TestLegacyBlockSeries reads blocks written before their samples part
// left the series out (testdata, written by that version): with a series
// part, and from before blocks had one. Their series come back once,
// also when a later upload of the partition is merged into them.
func TestLegacyBlockSeries(t *testing.T) {
	for _, name := range []string{"series-in-samples-and-part.block", "series-in-samples.block"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, TenantDir("t")), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, TenantDir("t"), "01699999800000000000-0000000000.block"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			want := map[string][]profile.Point{"7": {{Time: 1700000000e9, Value: 4e6}, {Time: 1700000002e9, Value: 7e6}}}
			if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%v, want %v", got, want)
			}
			u := upload(t, "8")
			u.From, u.Until = 1700000003e9, 1700000004e9
			mergeIntoBlock(t, db, dir, u)
			if got := gcPoints(t, db); !maps.EqualFunc(got, want, slices.Equal) {
				t.Errorf("merged: %v, want %v", got, want)
			}
		})
	}
}

// mergeIntoBlock appends u to tenant t of db (in dir) and compacts it into
// the partition's one block.
func mergeIntoBlock(t *testing.T, db *DB, dir string, u *Upload) {
	t.Helper()
	if err := db.Append("t", u); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if n := len(files(t, dir, "*.block")); n != 1 {
		t.Fatalf("%d blocks, want the upload merged into one", n)
	}
}

// gcPoints returns the points of tenant t's jvm.gc.pause series of G1's
// young collections, by executor.
func gcPoints(t *testing.T, db *DB) map[string][]profile.Point {
	t.Helper()
	out := map[string][]profile.Point{}
	err := db.Select("t", Query{}, func(u *Upload) error {
		ss, err := u.LoadSeries()
		for _, s := range ss {
			exec, _ := s.Labels.Get(profile.LabelExecutorID)
			gc, _ := s.Labels.Get("gc")
			if s.Name == "jvm.gc.pause" && gc == "G1 Young Generation" {
				out[exec] = append(out[exec], s.Points...)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
