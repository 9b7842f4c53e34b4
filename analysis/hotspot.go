package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/profile"
)

// Hotspot is where one task's profile samples went.
type Hotspot struct {
	Type    string  `json:"type"`    // the sample type read ("cpu", "samples", ...)
	Samples int64   `json:"samples"` // the task's samples of that type
	Leaf    string  `json:"leaf"`    // the frame most samples ended in
	Share   float64 `json:"share"`   // of the samples, in Leaf
	// Code is the frame nearest the leaf, on the stacks that end in Leaf,
	// that is neither the JDK's, Scala's nor Spark's: the application code
	// that led there, when there is some.
	Code string `json:"code,omitempty"`
	// Python is true when the task's thread was reading from its PySpark
	// worker: the time went to Python code, which a JVM profile cannot see.
	Python bool `json:"python,omitempty"`
}

// runtimePrefixes are the packages of the JDK and of Scala's library,
// which apps and libraries alike call.
var runtimePrefixes = []string{"java.", "javax.", "jdk.", "sun.", "com.sun.", "scala."}

// libraryPrefixes are the packages whose frames are not an application's
// own code: the runtime's, Spark's and the libraries Spark ships.
var libraryPrefixes = append(slices.Clone(runtimePrefixes),
	"org.apache.spark.", "io.netty.", "org.apache.hadoop.", "org.apache.parquet.", "com.google.", "org.slf4j.", "org.apache.log4j.")

func isLibrary(name string) bool {
	return hasPrefix(name, libraryPrefixes)
}

// isRuntime reports whether frame name is the JDK's or Scala's.
func isRuntime(name string) bool {
	return hasPrefix(name, runtimePrefixes)
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// hotspotTypes are the sample types hotspotOf reads, the first one the
// task has samples of: CPU time, else the running threads' wall clock or
// stack samples (Uber's), else CPU sample counts.
var hotspotTypes = []profile.SampleType{profile.TypeCPU, profile.TypeWall, profile.TypeSamples, profile.TypeItimer}

// hotspotOf finds where the samples of profiles that keep accepts (all,
// when keep is nil) went.
func hotspotOf(profiles []*profile.Profile, keep func(*profile.Profile, profile.Sample) bool) (Hotspot, bool) {
	for _, typ := range hotspotTypes {
		onCPU := typ.Family() == "cpu"
		leaves := map[string]int64{}
		code := map[[2]string]int64{}
		var total int64
		python := map[string]bool{}
		for _, p := range profiles {
			ti, ok := p.TypeIndex(typ)
			if !ok {
				continue
			}
			var frames []profile.FrameID
			for _, s := range p.Samples {
				if s.Type != ti || (!onCPU && s.State != profile.StateRunnable && s.State != profile.StateUnknown) {
					continue
				}
				if keep != nil && !keep(p, s) {
					continue
				}
				frames = p.Stack(s.Stack, frames[:0]) // root first
				if len(frames) == 0 {
					continue
				}
				leaf := p.Frames[frames[len(frames)-1]].Name
				leaves[leaf] += s.Value
				total += s.Value
				own := ""
				reader := false
				for i := len(frames) - 1; i >= 0; i-- {
					name := p.Frames[frames[i]].Name
					if own == "" && !isLibrary(name) {
						own = name
					}
					reader = reader || strings.HasPrefix(name, "org.apache.spark.api.python.")
				}
				code[[2]string{leaf, own}] += s.Value
				if reader && strings.Contains(leaf, "socketRead") {
					python[leaf] = true
				}
			}
		}
		if total == 0 {
			continue
		}
		h := Hotspot{Type: typ.Name, Samples: total}
		var top int64
		for leaf, v := range leaves {
			if v > top || (v == top && leaf < h.Leaf) {
				h.Leaf, top = leaf, v
			}
		}
		h.Share = round2(float64(top) / float64(total))
		var codeTop int64
		for k, v := range code {
			if k[0] == h.Leaf && k[1] != "" && (v > codeTop || (v == codeTop && k[1] < h.Code)) {
				h.Code, codeTop = k[1], v
			}
		}
		h.Python = python[h.Leaf]
		return h, true
	}
	return Hotspot{}, false
}

// describe says in a few words where the task's time went.
func (h Hotspot) describe() string {
	var what string
	switch h.Type {
	case profile.TypeCPU.Name:
		what = english.Millis(h.Samples/1e6) + " of CPU samples"
	case profile.TypeWall.Name:
		what = english.Millis(h.Samples/1e6) + " of running samples"
	default:
		what = english.Plural(int(h.Samples), "stack sample")
	}
	s := fmt.Sprintf("; %.0f%% of its %s end in %s", 100*h.Share, what, h.Leaf)
	switch {
	case h.Python:
		s += ": the thread waits for its Python worker, so the time went to Python code"
	case h.Code != "" && h.Code != h.Leaf:
		s += ", called from " + h.Code
	}
	return s
}

// ExplainStraggler adds to straggler finding f where its task's samples
// went, from profiles that hold that task's samples alone (a store's
// selection of the task), and reports whether they held any. f's evidence
// is replaced, not written to: a report's findings may be shared.
func ExplainStraggler(f *Finding, profiles ...*profile.Profile) bool {
	return explainStraggler(f, profiles, nil)
}

func explainStraggler(f *Finding, profiles []*profile.Profile, keep func(*profile.Profile, profile.Sample) bool) bool {
	ev, ok := f.Evidence.(*StragglerEvidence)
	if !ok || f.TaskID == nil {
		return false
	}
	h, ok := hotspotOf(profiles, keep)
	if !ok {
		return false
	}
	f.Message += h.describe()
	explained := *ev
	explained.Profile = &h
	f.Evidence = &explained
	if h.Python {
		f.Suggestion = "profile the Python side (PySpark's profiler, or sparkprof's PySpark records): the JVM only waited for it; then look at what makes this partition different"
	}
	return true
}
