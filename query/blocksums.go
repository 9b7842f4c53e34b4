package query

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/maypok86/otter/v2"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// blockSums keeps compacted blocks' rollups and timelines summed over
// every label a request does not name. A block's rollup has a row per
// stack and label set of every upload it holds (an executor's, and one
// per allocation class), its timeline one per second and label set; a
// flame graph needs one per stack, type and state, a series one per
// second, type, state and value of the labels it names. A dashboard
// rendering the last minutes every second then sums a few thousand rows a
// block, not hundreds of thousands. Blocks do not change once written, so
// an entry is right as long as its block is there; those of replaced
// blocks are never read again, and the cache's policy evicts them.
type blockSums struct {
	c *otter.Cache[sumsKey, *profile.Profile]
}

// sumsKey names a block's rollup (or timeline) summed: the block (or time
// slice of one) and the labels kept, sorted and joined by commas.
type sumsKey struct {
	u        *store.Upload
	timeline bool
	labels   string
}

// newBlockSums returns a cache of budget bytes (estimated), nil for none.
func newBlockSums(budget int64) *blockSums {
	if budget <= 0 {
		return nil
	}
	return &blockSums{c: otter.Must(&otter.Options[sumsKey, *profile.Profile]{
		MaximumWeight: uint64(budget),
		Weigher: func(_ sumsKey, p *profile.Profile) uint32 {
			return uint32(min(p.MemSize(), math.MaxUint32))
		},
	})}
}

// errNoPart is a block without the part its sum is made of.
var errNoPart = errors.New("no such part")

// get returns part (a block's rollup or timeline, which load reads)
// summed over threads and the labels other than names; nil when load
// returns nil.
func (b *blockSums) get(ctx context.Context, u *store.Upload, timeline bool, names []string, load func() (*profile.Profile, error)) (*profile.Profile, error) {
	k := sumsKey{u: u, timeline: timeline, labels: strings.Join(names, ",")}
	p, err := b.c.Get(ctx, k, otter.LoaderFunc[sumsKey, *profile.Profile](func(context.Context, sumsKey) (*profile.Profile, error) {
		r, err := load()
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, errNoPart
		}
		opts := profile.MergeOptions{Aggregate: true, DropThreads: true, Relabel: func(ls profile.Labels) profile.Labels {
			return ls.Only(names...)
		}}
		if timeline {
			opts.Resolution = 1 // the times as they are
		}
		m := profile.NewMerger(opts)
		m.Add(r)
		out := m.Profile()
		out.Labels = r.Labels // the labels every sample has, which Only dropped
		return out, nil
	}))
	if errors.Is(err, errNoPart) {
		return nil, nil
	}
	return p, err
}

// namedLabels returns the names of the labels req matches and by, sorted.
func namedLabels(req Request, by []string) []string {
	names := slices.Clone(by)
	for _, m := range req.Filter.Labels {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// summable reports whether the sums of u's parts answer req as the parts
// do: u is a compacted block, and req has no thread filter or matcher on a
// thread's name, which read threads, and no matcher on a stage label,
// which the join to task windows may change.
func (b *blockSums) summable(u *store.Upload, req Request) bool {
	return b != nil && u.Compacted() && req.Filter.Thread == nil && !matchesStage(req) &&
		!matchesAny(req.Filter, []string{profile.LabelThreadName})
}

// flameSource returns the sourceFunc of a flame graph (KeepNone): a
// compacted block's rollup (or thread rollup) summed over the labels req
// does not match (get), where it serves, else what source does. The
// filter eachUpload applies then selects from it what it would from the
// rollup.
func (b *blockSums) flameSource(ctx context.Context) sourceFunc {
	return func(u *store.Upload, req Request, tasksOf attribution.TasksOf) (*profile.Profile, error) {
		if req.Keep != KeepNone || !b.summable(u, req) || !(rollupMayServe(u, req) || threadRollupMayServe(u, req)) {
			return source(u, req, tasksOf)
		}
		return b.get(ctx, u, false, namedLabels(req, nil), func() (*profile.Profile, error) { return source(u, req, tasksOf) })
	}
}

// timeline returns u's timeline for a series per value of the labels by,
// summed over the other labels req does not match where that answers as
// the timeline does (no stage label in by either), else u's timeline.
func (b *blockSums) timeline(ctx context.Context, u *store.Upload, req Request, by []string) (*profile.Profile, error) {
	if !b.summable(u, req) || slices.ContainsFunc(by, isStageLabel) {
		return u.LoadTimeline()
	}
	return b.get(ctx, u, true, namedLabels(req, by), u.LoadTimeline)
}
