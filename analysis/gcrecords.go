package analysis

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/profile"
)

// JVMGC is what one JVM's GC records say over the time they cover: Uber
// jvm-profiler's cumulative collection counts and times, or the
// collections a JFR recording or the agent's GC notifications list.
type JVMGC struct {
	ExecutorID string `json:"executorId,omitempty"`
	// JVM names the JVM when no executor id does: Uber's process name,
	// or the profile's source.
	JVM    string  `json:"jvm"`
	WallMs int64   `json:"wallMs"` // the time the records cover
	GCMs   int64   `json:"gcMs"`
	Share  float64 `json:"share"` // GCMs over WallMs
	Young  int64   `json:"youngCollections"`
	Full   int64   `json:"fullCollections"`
	// YoungPerSecond is the young collections a second: allocation churn.
	YoungPerSecond float64 `json:"youngPerSecond"`
}

// GCRecordsEvidence is the evidence of a gc finding from JVM records:
// the JVMs whose GC stands out, worst first.
type GCRecordsEvidence struct {
	JVMs []JVMGC `json:"jvms"`
}

func (*GCRecordsEvidence) evidence() {}

// fullGC matches the names of old-generation and full collectors (JMX's
// "PS MarkSweep", "G1 Old Generation", JFR's "G1Old", "ParallelOld",
// "SerialOld", "G1Full", "ConcurrentMarkSweep"); the others are young.
var fullGC = regexp.MustCompile(`(?i)(old|marksweep|full|concurrent|major)`)

// jvmGCs reads the GC records of profiles, one JVMGC per JVM.
func jvmGCs(profiles []*profile.Profile) []JVMGC {
	type span struct{ from, until int64 }
	byJVM := map[string]*JVMGC{}
	spans := map[string]*span{}
	for _, p := range profiles {
		exec, _ := p.Labels.Get(profile.LabelExecutorID)
		for _, s := range p.Series {
			if !strings.HasPrefix(s.Name, "jvm.gc.") || len(s.Points) == 0 {
				continue
			}
			jvm, ok := s.Labels.Get("process")
			if !ok {
				jvm = p.Source
			}
			e, _ := s.Labels.Get(profile.LabelExecutorID)
			g := byJVM[jvm]
			if g == nil {
				g = &JVMGC{JVM: jvm, ExecutorID: cmp.Or(e, exec)}
				byJVM[jvm] = g
				spans[jvm] = &span{}
				if p.Start > 0 && p.End > p.Start {
					spans[jvm].from, spans[jvm].until = p.Start, p.End
				}
			}
			sp := spans[jvm]
			first, last := s.Points[0], s.Points[len(s.Points)-1]
			if sp.from == 0 || first.Time < sp.from {
				sp.from = first.Time
			}
			sp.until = max(sp.until, last.Time)
			collector, _ := s.Labels.Get("gc")
			var n int64
			switch s.Name {
			case "jvm.gc.time": // cumulative nanoseconds
				g.GCMs += int64(last.Value-first.Value) / 1e6
			case "jvm.gc.count": // cumulative
				n = int64(last.Value - first.Value)
			case "jvm.gc.pause": // one point a collection, nanoseconds
				var ns float64
				for _, pt := range s.Points {
					ns += pt.Value
				}
				g.GCMs += int64(ns / 1e6)
				n = int64(len(s.Points))
			}
			if fullGC.MatchString(collector) {
				g.Full += n
			} else {
				g.Young += n
			}
		}
	}
	var out []JVMGC
	for jvm, g := range byJVM {
		if s := spans[jvm]; s.until > s.from {
			g.WallMs = (s.until - s.from) / 1e6
		}
		if g.WallMs <= 0 {
			continue
		}
		g.GCMs = min(g.GCMs, g.WallMs)
		g.Share = round2(share(g.GCMs, g.WallMs))
		g.YoungPerSecond = round2(float64(g.Young) / (float64(g.WallMs) / 1000))
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b JVMGC) int { return cmp.Or(cmp.Compare(b.GCMs, a.GCMs), cmp.Compare(a.JVM, b.JVM)) })
	return out
}

// gcRecordsRule: the JVMs' time in GC and young collections a second from
// their GC records, when the event log is absent or its tasks carry no GC
// time (Spark's task metrics are the better measure where they exist).
func gcRecordsRule(a *appFacts, th Thresholds) (Finding, bool) {
	for _, t := range a.App.Tasks {
		if t.Metrics.GCTimeMs > 0 {
			return Finding{}, false
		}
	}
	var bad []JVMGC
	sev := Warning
	for _, g := range jvmGCs(a.Profiles) {
		if g.GCMs < th.GCMinMs || (g.Share < th.GCShare && g.YoungPerSecond < th.GCRate) {
			continue
		}
		if g.Share >= 2*th.GCShare {
			sev = Critical
		}
		bad = append(bad, g)
	}
	if len(bad) == 0 {
		return Finding{}, false
	}
	g := bad[0]
	who := "JVM " + g.JVM
	if g.ExecutorID != "" {
		who = "executor " + g.ExecutorID
	}
	msg := fmt.Sprintf("%s spent %.0f%% of its time in GC (%s of %s): %s, %.1f a second, and %s, by its GC records",
		who, 100*share(g.GCMs, g.WallMs), english.Millis(g.GCMs), english.Millis(g.WallMs),
		english.Plural(int(g.Young), "young collection"), g.YoungPerSecond, english.Plural(int(g.Full), "full collection"))
	if len(bad) > 1 {
		msg += fmt.Sprintf("; %d more JVMs alike", len(bad)-1)
	}
	sugg := "give executors more memory or fewer cores each, cache less, or use more partitions so each task holds less"
	if g.YoungPerSecond >= th.GCRate {
		sugg = "allocation churn: the allocation flame graph shows the code that allocates most (boxing, copies, per-record objects); reuse objects or use primitive arrays, and a larger young generation collects less often"
	}
	return Finding{Kind: KindGC, Severity: sev, Message: msg, Suggestion: sugg,
		Evidence: &GCRecordsEvidence{JVMs: bad}, score: float64(g.GCMs)}, true
}
