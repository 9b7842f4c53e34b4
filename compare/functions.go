package compare

import (
	"cmp"
	"math"
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

// functionShare is a function's part of a stage's CPU samples: the share
// of them with the function anywhere on their stack (so that a function's
// callees count as its own), and its mean depth in them (frames from the
// root), which tells a callee from its callers.
type functionShare struct {
	share, depth float64
}

// functionShares returns, for a stage of a run, each function's share of
// the stage's CPU samples. It returns nil when the run's profiles have no
// CPU sample of the stage.
func functionShares(ps []*profile.Profile, stage int) map[string]functionShare {
	id := strconv.Itoa(stage)
	in := map[string]int64{}
	depth := map[string]float64{}
	var total int64
	var buf []profile.FrameID
	for _, p := range ps {
		t, ok := p.TypeIndex(profile.TypeCPU)
		if !ok {
			continue
		}
		ofStage := map[profile.LabelSetID]bool{}
		seen := map[string]bool{}
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
			total += s.Value
			buf = p.Stack(s.Stack, buf[:0])
			clear(seen)
			for d, f := range buf {
				name := sameInEveryJVM(p.Frames[f].Name)
				if !seen[name] {
					seen[name] = true
					in[name] += s.Value
					depth[name] += float64(d) * float64(s.Value)
				}
			}
		}
	}
	if total == 0 {
		return nil
	}
	shares := make(map[string]functionShare, len(in))
	for name, v := range in {
		shares[name] = functionShare{share: float64(v) / float64(total), depth: depth[name] / float64(v)}
	}
	return shares
}

// grownFunctions lists the functions of a matched stage whose CPU per
// unit of data grew most, with their shares of the stage's CPU samples:
// a function's CPU is its share of the samples times the stage's CPU
// time. Among functions that grew alike (a function and its callers), the
// innermost, where the time went, comes first. It returns nil without
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
	type grown struct {
		FunctionChange
		by    float64 // its CPU per unit of data, new less old
		depth float64
	}
	var gs []grown
	for name, sh := range nshares {
		if by := sh.share*ncpu - oshares[name].share*ocpu; by >= minGrowth*total {
			gs = append(gs, grown{FunctionChange{Name: name, OldShare: round(oshares[name].share, 3), NewShare: round(sh.share, 3)}, by, sh.depth})
		}
	}
	slices.SortFunc(gs, func(a, b grown) int {
		ga, gb := math.Round(10*a.by/total), math.Round(10*b.by/total) // alike: within a tenth of the growth
		return cmp.Or(cmp.Compare(gb, ga), cmp.Compare(b.depth, a.depth), cmp.Compare(a.Name, b.Name))
	})
	out := make([]FunctionChange, 0, min(len(gs), maxFunctions))
	for _, g := range firstN(gs, maxFunctions) {
		out = append(out, g.FunctionChange)
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
