package store

import (
	"slices"

	"github.com/sparkprof/sparkprof/store/block"
)

// storedBlock is a block of the store and the Uploads that stand for it
// in queries.
type storedBlock struct {
	*block.Block
	up *Upload // what Select hands out; its profiles load on demand
	// sliceUps stand for the slices: Select hands them out instead of up
	// to a query whose range cuts the block.
	sliceUps []*Upload
}

// blocksOf returns the blocks of sbs.
func blocksOf(sbs []*storedBlock) []*block.Block {
	out := make([]*block.Block, len(sbs))
	for i, sb := range sbs {
		out[i] = sb.Block
	}
	return out
}

// inputs returns ups as the inputs of a block (block.Merge).
func inputs(ups []*Upload) []block.Input {
	out := make([]block.Input, len(ups))
	for i, u := range ups {
		out[i] = block.Input{ID: u.ID, Received: u.Received, From: u.From, Until: u.Until, Labels: u.Labels, Bytes: u.Bytes, Profile: u.Profile}
	}
	return out
}

// newStoredBlock returns b with the Uploads that stand for it.
func newStoredBlock(b *block.Block) *storedBlock {
	sb := &storedBlock{Block: b}
	sb.newUpload()
	return sb
}

// storedBlocks returns bs with the Uploads that stand for them.
func storedBlocks(bs []*block.Block) []*storedBlock {
	out := make([]*storedBlock, len(bs))
	for i, b := range bs {
		out[i] = newStoredBlock(b)
	}
	return out
}

// newUpload makes the Uploads that stand for b and its time slices in
// queries.
func (b *storedBlock) newUpload() {
	m := &b.Meta
	b.up = &Upload{
		ID: m.MaxID(), Received: m.Received, From: m.From, Until: m.Until, Agent: "compacted", Bytes: m.Bytes,
		Sources: m.Sources, Uploads: m.Uploads, FirstSample: m.FirstSample, LastSample: m.LastSample,
	}
	if m.SampleLabels != nil { // else written before metas listed sample labels: Values stays nil
		vals := make(map[string][]string, len(m.SampleLabels)+len(m.Values))
		for name, vs := range m.Values {
			vals[name] = vs
		}
		for name, vs := range m.SampleLabels {
			switch old, ok := vals[name]; {
			case !ok:
				vals[name] = vs
			case vs == nil:
				vals[name] = nil // too many to list
			default:
				u := slices.Concat(old, vs)
				slices.Sort(u)
				vals[name] = slices.Compact(u)
			}
		}
		b.up.Values = vals
	}
	b.up.Bounds = m.SampleRanges
	b.sliceUps = nil
	for _, sm := range m.Slices {
		u := *b.up
		u.Bounds = nil
		for name := range m.SampleRanges {
			r, ok := sm.Ranges[name]
			if !ok {
				r = [2]int64{1, 0} // on none of the slice's samples
			}
			if u.Bounds == nil {
				u.Bounds = map[string][2]int64{}
			}
			u.Bounds[name] = r
		}
		u.Bytes = 0 // the block's
		u.FirstSample, u.LastSample = sm.First, sm.Last
		if sm.First != 0 {
			u.From, u.Until = min(m.From, sm.First), max(m.Until, sm.Last)
			if sm.From != 0 {
				u.From = sm.From
			}
			if sm.Until != 0 {
				u.Until = sm.Until - 1 // Until is inclusive in Query.Matches
			}
		}
		b.sliceUps = append(b.sliceUps, &u)
	}
	b.up.slices = b.sliceUps
}

// uploads returns the Uploads that stand for b in a query over q's range
// whose SampleMatchers are ims: b's when the range covers its samples and
// ims leave out none of its time slices, else those of its time slices
// ims do not leave out (Select leaves out those outside the range).
func (b *storedBlock) uploads(q Query, ims []block.IntMatcher) []*Upload {
	if len(b.sliceUps) == 0 {
		return []*Upload{b.up}
	}
	out := make([]*Upload, 0, len(b.sliceUps))
	for i, sm := range b.Meta.Slices {
		if !slices.ContainsFunc(ims, func(im block.IntMatcher) bool { return !im.MayMatch(b.Meta.SampleRanges, sm.Ranges) }) {
			out = append(out, b.sliceUps[i])
		}
	}
	covers := (q.From == 0 || q.From <= b.Meta.FirstSample) && (q.Until == 0 || q.Until > b.Meta.LastSample)
	if covers && len(out) == len(b.sliceUps) {
		return []*Upload{b.up}
	}
	return out
}

// mayMatch reports whether the block can hold samples q's matchers
// select: not when every upload carried a label and none of its values
// satisfies q's matcher on that label, nor when the bounds of a label's
// values leave out every value one of ims (q's SampleMatchers) matches.
// (Select checks the time range on the block's Upload, as for any
// upload.)
func (b *storedBlock) mayMatch(q Query, ims []block.IntMatcher) bool {
	for _, im := range ims {
		if !im.MayMatch(b.Meta.SampleRanges, b.Meta.SampleRanges) {
			return false
		}
	}
	for _, m := range q.Matchers {
		// Only a label every upload carried decides: a label set may
		// carry the name otherwise.
		vals := b.Meta.Values[m.Name]
		if b.Meta.Carried[m.Name] == b.Meta.Uploads && !slices.ContainsFunc(vals, m.Matches) {
			return false
		}
	}
	return block.MayHold(b.up.Values, q.SampleMatchers)
}
