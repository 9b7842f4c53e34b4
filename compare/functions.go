package compare

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
)

// maxFunctions is how many functions a code cause names.
const maxFunctions = 5

// minGrowth is the least part of the growth of a stage's CPU per unit of
// data that a function's own growth must be for a code cause to name it.
const minGrowth = 0.10

// stageSamples calls fn with each CPU sample of a stage in a run's
// profiles: its value and its stack's function names, root first, each
// named as in every JVM.
func stageSamples(ps []*profile.Profile, stage int, fn func(v int64, names []string)) {
	id := strconv.Itoa(stage)
	var buf []profile.FrameID
	var names []string
	for _, p := range ps {
		t, ok := p.TypeIndex(profile.TypeCPU)
		if !ok {
			continue
		}
		ofStage := map[profile.LabelSetID]bool{}
		for _, s := range p.Samples {
			if s.Type != t {
				continue
			}
			on, known := ofStage[s.Labels]
			if !known {
				v, _ := p.LabelSet(s.Labels).Get(profile.LabelStageID)
				if v == "" {
					v, _ = p.Labels.Get(profile.LabelStageID)
				}
				on = v == id
				ofStage[s.Labels] = on
			}
			if !on {
				continue
			}
			buf = p.Stack(s.Stack, buf[:0])
			names = names[:0]
			for _, f := range buf {
				names = append(names, sameInEveryJVM(p.Frames[f].Name))
			}
			fn(s.Value, names)
		}
	}
}

// functionShares returns, for a stage of a run, each function's share of
// the stage's CPU samples: the share of them with the function anywhere
// on their stack, so that a function's callees count as its own. It
// returns nil when the run's profiles have no CPU sample of the stage.
func functionShares(ps []*profile.Profile, stage int) map[string]float64 {
	in := map[string]int64{}
	seen := map[string]bool{}
	var total int64
	stageSamples(ps, stage, func(v int64, names []string) {
		total += v
		clear(seen)
		for _, name := range names {
			if !seen[name] {
				seen[name] = true
				in[name] += v
			}
		}
	})
	if total == 0 {
		return nil
	}
	shares := make(map[string]float64, len(in))
	for name, v := range in {
		shares[name] = float64(v) / float64(total)
	}
	return shares
}

// innermostShares returns, for a stage of a run and a set of functions,
// each function's share of the stage's CPU samples on which it is the
// innermost function of the set on the stack.
func innermostShares(ps []*profile.Profile, stage int, set map[string]bool) map[string]float64 {
	in := map[string]int64{}
	var total int64
	stageSamples(ps, stage, func(v int64, names []string) {
		total += v
		for _, name := range slices.Backward(names) {
			if set[name] {
				in[name] += v
				break
			}
		}
	})
	shares := make(map[string]float64, len(in))
	for name, v := range in {
		shares[name] = float64(v) / float64(max(total, 1))
	}
	return shares
}

// grownFunctions lists the functions of a matched stage whose CPU per
// unit of data grew most, with their shares of the stage's CPU samples:
// a function's CPU is its share of the samples times the stage's CPU
// time. A function is named for the growth where it is the innermost of
// the functions that grew: a slower function's callers, which grow with
// it, are left for it, where the time went. It returns nil without
// samples of the stage in both runs.
func grownFunctions(o, n *runFacts, os, ns *stageFacts) []FunctionChange {
	oshares, nshares := functionShares(o.profiles, os.id), functionShares(n.profiles, ns.id)
	if oshares == nil || nshares == nil {
		return nil
	}
	perData := func(m *StageMetrics) float64 { return float64(max(m.CPUMs, 1)) / float64(max(m.data(), 1)) }
	ocpu, ncpu := perData(&os.m), perData(&ns.m)
	total := ncpu - ocpu
	if total <= 0 {
		return nil
	}
	growth := func(oshare, nshare float64) float64 { return nshare*ncpu - oshare*ocpu }
	grew := map[string]bool{}
	for name, sh := range nshares {
		if growth(oshares[name], sh) >= minGrowth*total {
			grew[name] = true
		}
	}
	oinner, ninner := innermostShares(o.profiles, os.id, grew), innermostShares(n.profiles, ns.id, grew)
	type grownFunction struct {
		FunctionChange
		by float64 // its CPU per unit of data where it is innermost, new less old
	}
	var named []grownFunction
	for name := range grew {
		if by := growth(oinner[name], ninner[name]); by >= minGrowth*total {
			named = append(named, grownFunction{FunctionChange{Name: name, OldShare: round(oshares[name], 3), NewShare: round(nshares[name], 3)}, by})
		}
	}
	slices.SortFunc(named, func(a, b grownFunction) int { return cmp.Or(cmp.Compare(b.by, a.by), cmp.Compare(a.Name, b.Name)) })
	out := make([]FunctionChange, 0, min(len(named), maxFunctions))
	for _, f := range firstN(named, maxFunctions) {
		out = append(out, f.FunctionChange)
	}
	return out
}

// jvmInstance matches the parts of a generated class's name that differ
// from JVM to JVM: a lambda's hidden class as JDK 17's Flight Recorder
// names it (RDD$$Lambda$1232+0x00007f9ed078dee8.6608933), and a method
// handle's form (LambdaForm$DMH.0x000000080129cc00).
var jvmInstance = regexp.MustCompile(`(\$\$Lambda)\$\d+[+/]0x[0-9a-f]+(?:[./]\d+)?|(LambdaForm\$[A-Za-z]+)[./+]0x[0-9a-f]+`)

// sameInEveryJVM names a function the same in every JVM, so that the runs'
// functions compare: the flame graphs keep the names the JVM gave, as
// Pyroscope does, but two runs are always two sets of JVMs.
func sameInEveryJVM(name string) string {
	if !strings.Contains(name, "0x") {
		return name
	}
	return jvmInstance.ReplaceAllString(name, "$1$2")
}

func firstN[T any](xs []T, n int) []T { return xs[:min(n, len(xs))] }
