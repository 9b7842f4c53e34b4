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

// blockFlames keeps the flame graphs of compacted blocks: a block's rollup
// summed over what a flame graph drops (labels, threads), keeping the
// labels its request matches. A block's rollup has a row per stack and
// label set of every upload it holds (an executor's, and one per
// allocation class); its flame graph one per stack, type and state. A
// dashboard rendering the last minutes every second then merges a few
// thousand rows a block, not hundreds of thousands. Blocks do not change
// once written, so an entry is right until the block is gone; those of
// replaced blocks are never read again, and the cache's policy evicts
// them.
type blockFlames struct {
	c *otter.Cache[flameKey, *profile.Profile]
}

// flameKey names a block's flame graph: the block (or time slice of one)
// and the labels kept, sorted and joined by commas.
type flameKey struct {
	u      *store.Upload
	labels string
}

// newBlockFlames returns a cache of budget bytes (estimated), nil for
// none.
func newBlockFlames(budget int64) *blockFlames {
	if budget <= 0 {
		return nil
	}
	return &blockFlames{c: otter.Must(&otter.Options[flameKey, *profile.Profile]{
		MaximumWeight: uint64(budget),
		Weigher: func(_ flameKey, p *profile.Profile) uint32 {
			return uint32(min(p.MemSize(), math.MaxUint32))
		},
	})}
}

// errNoRollup is a block without the rollup its flame graph is made of.
var errNoRollup = errors.New("no rollup")

// source returns the sourceFunc of a flame graph (KeepNone): a compacted
// block's cached flame graph where its rollup serves, else what source
// does. The flame graph keeps the labels req matches, so that the filter
// eachUpload applies selects from it what it would from the rollup: req
// must have no thread filter or matcher on a thread's name, which read
// threads, and no matcher on a stage label, which the join to task
// windows may change.
func (f *blockFlames) source(ctx context.Context) sourceFunc {
	return func(u *store.Upload, req Request, tasksOf attribution.TasksOf) (*profile.Profile, error) {
		if f == nil || !u.Compacted() || req.Keep != KeepNone || req.Filter.Thread != nil || matchesStage(req) ||
			matchesAny(req.Filter, []string{profile.LabelThreadName}) ||
			!(rollupMayServe(u, req) || threadRollupMayServe(u, req)) {
			return source(u, req, tasksOf)
		}
		var names []string
		for _, m := range req.Filter.Labels {
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
		slices.Sort(names)
		k := flameKey{u: u, labels: strings.Join(names, ",")}
		p, err := f.c.Get(ctx, k, otter.LoaderFunc[flameKey, *profile.Profile](func(context.Context, flameKey) (*profile.Profile, error) {
			r, err := source(u, req, tasksOf)
			if err != nil {
				return nil, err
			}
			if r == nil {
				return nil, errNoRollup
			}
			m := profile.NewMerger(profile.MergeOptions{Aggregate: true, DropThreads: true, Relabel: func(ls profile.Labels) profile.Labels {
				return ls.Only(names...)
			}})
			m.Add(r)
			out := m.Profile()
			out.Labels = r.Labels // the labels every sample has, which Only dropped
			return out, nil
		}))
		if errors.Is(err, errNoRollup) {
			return nil, nil
		}
		return p, err
	}
}
