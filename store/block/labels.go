package block

import (
	"slices"
	"strconv"

	"github.com/sparkprof/sparkprof/profile"
)

// maxMetaValues bounds the values of one label a block meta lists.
const maxMetaValues = 64

// SampleLabels returns the values of each label of p's samples, with the
// labels extra that apply to all of them, those of labels with more than
// maxMetaValues values left out (nil).
func SampleLabels(p *profile.Profile, extra profile.Labels) map[string][]string {
	out := map[string][]string{}
	seen := map[profile.Label]bool{}
	add := func(ls profile.Labels) {
		for _, l := range ls {
			vals, listed := out[l.Name]
			if listed && vals == nil || seen[l] {
				continue
			}
			seen[l] = true
			if len(vals) == maxMetaValues {
				out[l.Name] = nil
				continue
			}
			out[l.Name] = append(vals, l.Value)
		}
	}
	add(extra)
	add(p.Labels)
	// The sets the samples use: a profile may hold others (an upload's
	// decoder makes sets for samples it then drops).
	used := make([]bool, p.NumLabelSets())
	for _, smp := range p.Samples {
		if !used[smp.Labels] {
			used[smp.Labels] = true
			add(p.LabelSet(smp.Labels))
		}
	}
	for _, vals := range out {
		slices.Sort(vals)
	}
	return out
}

// intRanges returns the least and greatest value of each label named in
// names over the label sets of p's samples given (and p's labels), for
// the labels whose values there are all integers; a label on none of the
// samples is left out.
func intRanges(p *profile.Profile, samples []profile.Sample, names []string) map[string][2]int64 {
	if len(names) == 0 {
		return nil
	}
	used := make([]bool, p.NumLabelSets())
	for _, s := range samples {
		used[s.Labels] = true
	}
	out := map[string][2]int64{}
	bad := map[string]bool{}
	add := func(ls profile.Labels) {
		for _, l := range ls {
			if !slices.Contains(names, l.Name) || bad[l.Name] {
				continue
			}
			v, err := strconv.ParseInt(l.Value, 10, 64)
			if err != nil {
				bad[l.Name] = true
				delete(out, l.Name)
				continue
			}
			r, ok := out[l.Name]
			if !ok {
				r = [2]int64{v, v}
			}
			out[l.Name] = [2]int64{min(r[0], v), max(r[1], v)}
		}
	}
	if len(samples) > 0 {
		add(p.Labels)
	}
	for id, u := range used {
		if u {
			add(p.LabelSet(profile.LabelSetID(id)))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// unlisted returns the labels of SampleLabels sl with too many values to
// list.
func unlisted(sl map[string][]string) []string {
	var out []string
	for name, vals := range sl {
		if vals == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// IntMatcher is a matcher that only integers listed can satisfy, on a
// label with integer values.
type IntMatcher struct {
	name   string
	values []int64 // sorted
}

// IntMatchers returns the matchers of ms that bounds of integer values
// can decide: an equality, or literal alternatives, that does not match
// "" (which a sample without the label has). A literal that is not an
// integer matches none of the values of a label with bounds.
func IntMatchers(ms []profile.Matcher) []IntMatcher {
	var out []IntMatcher
	for _, m := range ms {
		lits, ok := m.Literals()
		if !ok || slices.Contains(lits, "") {
			continue
		}
		im := IntMatcher{name: m.Name}
		for _, l := range lits {
			if v, err := strconv.ParseInt(l, 10, 64); err == nil {
				im.values = append(im.values, v)
			}
		}
		slices.Sort(im.values)
		out = append(out, im)
	}
	return out
}

// MayMatch reports whether a value im matches can be among values bounded
// by ranges, which bound the labels of names; a label of names missing
// from ranges has no value.
func (im IntMatcher) MayMatch(names, ranges map[string][2]int64) bool {
	if _, bounded := names[im.name]; !bounded {
		return true
	}
	r, ok := ranges[im.name]
	if !ok {
		return false
	}
	i, _ := slices.BinarySearch(im.values, r[0])
	return i < len(im.values) && im.values[i] <= r[1]
}

// MayHold reports whether a sample whose labels take the values listed in
// values (Upload.Values: by label name; nil for a label with too many to
// list) can satisfy every matcher of ms. A label values does not name is
// on no sample, whose value is then "". Unknown values (nil) decide
// nothing.
func MayHold(values map[string][]string, ms []profile.Matcher) bool {
	if values == nil {
		return true
	}
	for _, m := range ms {
		vals, carried := values[m.Name]
		switch {
		case m.Matches(""): // a sample without the label matches
		case !carried:
			return false
		case vals != nil && !slices.ContainsFunc(vals, m.Matches):
			return false
		}
	}
	return true
}
