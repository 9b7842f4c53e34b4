package query

import (
	"context"
	"slices"
	"sort"
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// LabelValues collects the values of label name ("" for every label) over
// the tenant's uploads and samples that q selects. A compacted block
// answers from the values its meta lists; its samples are read only for a
// label with too many values to list. With matchers, the values of one
// label are those among the samples the matchers select; label names are
// those of the uploads they select.
func (e *Engine) LabelValues(ctx context.Context, tenant string, name string, q store.Query) (map[string]map[string]bool, error) {
	vals := map[string]map[string]bool{}
	add := func(n string, vs ...string) {
		if vals[n] == nil {
			vals[n] = map[string]bool{}
		}
		for _, v := range vs {
			vals[n][v] = true
		}
	}
	err := e.store.Select(tenant, q, func(u *store.Upload) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		// A time slice reads its block's label sets: the slice's bounds
		// leave out values of other slices.
		addSet := func(ls profile.Labels) {
			for _, l := range ls {
				if (name == "" || l.Name == name) && withinBounds(u, l) {
					add(l.Name, l.Value)
				}
			}
		}
		if name != "" && len(q.Matchers) > 0 {
			return selectedValues(u, name, q.Matchers, addSet)
		}
		addSet(u.Labels)
		if values := u.LabelValues(); values != nil {
			listed := true
			for n, vs := range values {
				if name == "" || n == name {
					add(n, vs...)
					listed = listed && (vs != nil || name == "")
				}
			}
			if listed {
				return nil
			}
		}
		p, err := u.LoadLabelSets()
		if err != nil {
			return err
		}
		addSet(p.Labels)
		eachLabelSet(p, nil, addSet)
		return nil
	})
	return vals, err
}

// withinBounds reports whether label l can be on a sample of u as its
// bounds of integer values tell (store.Upload.Bounds).
func withinBounds(u *store.Upload, l profile.Label) bool {
	b, ok := u.Bounds[l.Name]
	if !ok {
		return true
	}
	v, err := strconv.ParseInt(l.Value, 10, 64)
	return err != nil || v >= b[0] && v <= b[1]
}

// selectedValues passes to add the label sets of u's samples that all of
// ms match (a label a set lacks matches as ""), each with u's upload
// labels: the values of label name among the samples a selector selects.
// A block's rollup answers (labelSource) unless the label or a matcher's
// is one the rollup drops (task, partition, thread name); then its samples
// do.
func selectedValues(u *store.Upload, name string, ms []profile.Matcher, add func(profile.Labels)) error {
	source := labelSource
	if slices.Contains(store.RollupDropped, name) || slices.ContainsFunc(ms, func(m profile.Matcher) bool {
		return slices.Contains(store.RollupDropped, m.Name)
	}) {
		source = (*store.Upload).LoadLabelSets
	}
	p, err := source(u)
	if err != nil || p == nil {
		return err
	}
	eachLabelSet(p, u.Labels.Merge(p.Labels), func(ls profile.Labels) {
		if !slices.ContainsFunc(ms, func(m profile.Matcher) bool { v, _ := ls.Get(m.Name); return !m.Matches(v) }) {
			add(ls)
		}
	})
	return nil
}

// eachLabelSet calls fn once with each distinct label set of p's samples,
// merged into base; a profile of label sets without samples (a sliced
// block's tables, Upload.LoadLabelSets) with each of its non-empty sets.
func eachLabelSet(p *profile.Profile, base profile.Labels, fn func(profile.Labels)) {
	call := func(ls profile.Labels) {
		if len(base) > 0 {
			fn(base.Merge(ls))
		} else {
			fn(ls)
		}
	}
	if len(p.Samples) == 0 {
		for i := 1; i < p.NumLabelSets(); i++ {
			call(p.LabelSet(profile.LabelSetID(i)))
		}
		return
	}
	seen := make([]bool, p.NumLabelSets())
	for _, smp := range p.Samples {
		if !seen[smp.Labels] {
			seen[smp.Labels] = true
			call(p.LabelSet(smp.Labels))
		}
	}
}

// LabelNames lists, sorted, the label names of the tenant's uploads and
// samples in q's range.
func (e *Engine) LabelNames(ctx context.Context, tenant string, q store.Query) ([]string, error) {
	vals, err := e.LabelValues(ctx, tenant, "", q)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(vals))
	for n := range vals {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// labelSource returns the profile of u that holds its sample types and
// label sets: a compacted block's rollup (read from disk or the cache), an
// upload's profile.
func labelSource(u *store.Upload) (*profile.Profile, error) {
	if u.Compacted() {
		return u.LoadRollup()
	}
	return u.Profile, nil
}

// StoredTypes lists the sample types with samples in the tenant's uploads
// of q's range.
func (e *Engine) StoredTypes(ctx context.Context, tenant string, q store.Query) ([]profile.SampleType, error) {
	var types []profile.SampleType
	err := e.store.Select(tenant, q, func(u *store.Upload) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := labelSource(u)
		if err != nil || p == nil {
			return err
		}
		for _, t := range PresentTypes(p) {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		return nil
	})
	return types, err
}
