package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// Tree merges the stacks req selects, keeping only stacks, types and
// thread states, which bounds the merge by the unique stacks however many
// threads and tasks the selection spans, and returns the call tree of the
// type req asks for (SampleType) with the merged profile. With maxNodes
// > 0 the tree is bounded as profile.Tree.Trim bounds it, and folded
// counts the nodes folded away.
func (e *Engine) Tree(ctx context.Context, tenant string, req Request, maxNodes int) (t *profile.Tree, folded int, p *profile.Profile, err error) {
	req.Keep = KeepNone
	if p, err = e.Merge(ctx, tenant, req); err != nil {
		return nil, 0, nil, err
	}
	t, folded = profile.NewTrimmedTree(p, SampleType(p, req.Type), maxNodes)
	return t, folded, p, nil
}

// Diff returns the diff tree of base against next in the type typ asks for
// (SampleType of next, else of base); neither having samples of it is an
// errkind.NotFound error.
func Diff(base, next *profile.Profile, typ string) (*profile.Tree, error) {
	t := SampleType(next, typ)
	if !HasType(next, t) {
		t = SampleType(base, typ)
	}
	if !HasType(next, t) && !HasType(base, t) {
		return nil, errkind.Errorf(errkind.NotFound, "no %s samples in either selection", t.Name)
	}
	return profile.Diff(base, next, t), nil
}

// Stats returns the times of the oldest and newest uploads of the tenant
// (Unix ms), and whether it has any.
func (e *Engine) Stats(tenant string) (oldest, newest int64, any bool, err error) {
	err = e.store.Select(tenant, store.Query{}, func(u *store.Upload) error {
		from, until := u.From/int64(time.Millisecond), u.Until/int64(time.Millisecond)
		if !any || from < oldest {
			oldest = from
		}
		newest = max(newest, until)
		any = true
		return nil
	})
	return oldest, newest, any, err
}

// LabelSets lists the distinct label sets of the samples the queries qs
// select, each
// with its profile type (pyroscope.TypeLabel, and pyroscope.NameLabel its
// first part), restricted to the label names keep keeps, in the order met.
func (e *Engine) LabelSets(ctx context.Context, tenant string, qs []store.Query, keep func(name string) bool) ([]profile.Labels, error) {
	seen := map[string]bool{}
	var out []profile.Labels
	add := func(ls profile.Labels, t profile.SampleType) {
		id := pyroscope.TypeID(t)
		name, _, _ := strings.Cut(id, ":")
		ls = ls.Merge(profile.Labels{{Name: pyroscope.NameLabel, Value: name}, {Name: pyroscope.TypeLabel, Value: id}})
		var set profile.Labels
		var key strings.Builder
		for _, l := range ls {
			if keep(l.Name) {
				set = append(set, l)
				fmt.Fprintf(&key, "%s=%q,", l.Name, l.Value)
			}
		}
		if !seen[key.String()] {
			seen[key.String()] = true
			out = append(out, set)
		}
	}
	for _, q := range qs {
		if err := e.store.Select(tenant, q, func(u *store.Upload) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			p, err := labelSource(u)
			if err != nil || p == nil {
				return err
			}
			base := p.Labels.Merge(u.Labels)
			type setType struct {
				set profile.LabelSetID
				typ profile.TypeID
			}
			done := map[setType]bool{}
			for _, smp := range p.Samples {
				if k := (setType{smp.Labels, smp.Type}); !done[k] {
					done[k] = true
					add(base.Merge(p.LabelSet(smp.Labels)), p.Types[smp.Type])
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}
