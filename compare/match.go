package compare

import (
	"hash/fnv"
	"slices"
	"strconv"
)

// match is a stage of either run and its counterpart, if found.
type match struct {
	old, new   *stageFacts
	confidence float64
	by         string
}

// A tier of matching: stages whose keys are equal are matched, in the
// order they ran, with the tier's confidence.
type tier struct {
	key        func(f *runFacts, s *stageFacts) string
	confidence float64
	by         string
}

// tiers go from the surest key to the loosest. Stage ids are not stable
// across runs, so none is used: a stage's call site, its number of RDDs
// (its operators) and its ancestors' the same, then its call site and
// depth in the DAG, then its call site alone.
var tiers = []tier{
	{func(f *runFacts, s *stageFacts) string { return f.signature(s.id, 0) }, 1,
		"call site, operators and ancestors"},
	{func(f *runFacts, s *stageFacts) string { return s.name + "\x00" + strconv.Itoa(f.depth(s.id, 0)) }, 0.7,
		"call site and depth in the DAG"},
	{func(_ *runFacts, s *stageFacts) string { return s.name }, 0.5, "call site"},
}

// maxDepth bounds the walks up the DAG (parents have smaller ids, so a walk
// ends; the bound keeps a log of thousands of chained stages cheap).
const maxDepth = 64

// matchStages pairs the stages of two runs: each tier matches those the
// earlier ones left, the k-th stage of a key in one run to the k-th of
// that key in the other. A key whose count differs between the runs
// matches with less confidence. It returns the matches in the new run's
// order, then the old run's unmatched stages.
func matchStages(o, n *runFacts) []match {
	oldOf := map[*stageFacts]*stageFacts{}
	conf := map[*stageFacts]match{}
	taken := map[*stageFacts]bool{}
	for _, t := range tiers {
		ok, nk := keyed(o, t, taken), keyed(n, t, taken)
		for k, news := range nk {
			olds := ok[k]
			c := t.confidence
			if len(olds) != len(news) {
				c *= 0.8
			}
			for i := range min(len(olds), len(news)) {
				oldOf[news[i]] = olds[i]
				taken[news[i]], taken[olds[i]] = true, true
				conf[news[i]] = match{confidence: c, by: t.by}
			}
		}
	}
	var out []match
	for _, s := range n.stages {
		m := conf[s]
		m.new, m.old = s, oldOf[s]
		out = append(out, m)
	}
	for _, s := range o.stages {
		if !taken[s] {
			out = append(out, match{old: s})
		}
	}
	return out
}

// keyed groups f's stages not yet taken by the tier's key, each group in
// the order the stages ran.
func keyed(f *runFacts, t tier, taken map[*stageFacts]bool) map[string][]*stageFacts {
	out := map[string][]*stageFacts{}
	for _, s := range f.stages {
		if !taken[s] {
			k := t.key(f, s)
			out[k] = append(out[k], s)
		}
	}
	return out
}

// signature hashes a stage's call site, its number of RDDs and its
// parents' signatures, sorted.
func (f *runFacts) signature(id, depth int) string {
	if sig, ok := f.sigs[id]; ok {
		return sig
	}
	st := f.info[id]
	if st == nil || depth > maxDepth {
		return "?"
	}
	h := fnv.New64a()
	h.Write([]byte(st.Name))
	h.Write([]byte{0, byte(len(st.RDDIDs)), byte(len(st.RDDIDs) >> 8)})
	var ps []string
	for _, p := range st.Parents {
		ps = append(ps, f.signature(p, depth+1))
	}
	slices.Sort(ps)
	for _, p := range ps {
		h.Write([]byte(p))
	}
	sig := strconv.FormatUint(h.Sum64(), 36)
	f.sigs[id] = sig
	return sig
}

// depth is the longest path from a stage up to a stage without parents.
func (f *runFacts) depth(id, seen int) int {
	if d, ok := f.depths[id]; ok {
		return d
	}
	st := f.info[id]
	if st == nil || seen > maxDepth {
		return 0
	}
	d := 0
	for _, p := range st.Parents {
		d = max(d, 1+f.depth(p, seen+1))
	}
	f.depths[id] = d
	return d
}
