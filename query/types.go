package query

import "github.com/sparkprof/sparkprof/profile"

// SampleType picks the sample type a query asked for; without one, CPU
// time if the selection has it, else its first type with samples.
func SampleType(p *profile.Profile, want string) profile.SampleType {
	return pickType(p.Types, PresentTypes(p), want)
}

// pickType is sampleType for a selection of the types given, of which
// those present have samples.
func pickType(types, present []profile.SampleType, want string) profile.SampleType {
	if want != "" {
		if t, ok := profile.FindType(types, want); ok {
			return t
		}
		return profile.SampleType{Name: want}
	}
	ts := present
	for _, t := range ts {
		if t.Family() == "cpu" {
			return t
		}
	}
	if len(ts) > 0 {
		return ts[0]
	}
	return profile.SampleType{Name: "cpu"}
}

// HasType reports whether p has the sample type t.
func HasType(p *profile.Profile, t profile.SampleType) bool {
	_, ok := p.TypeIndex(t)
	return ok
}

// PresentTypes lists the sample types of p that have samples.
func PresentTypes(p *profile.Profile) []profile.SampleType {
	has := make([]bool, len(p.Types))
	for _, s := range p.Samples {
		has[s.Type] = true
	}
	var out []profile.SampleType
	for i, t := range p.Types {
		if has[i] {
			out = append(out, t)
		}
	}
	return out
}
