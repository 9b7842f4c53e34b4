package server

import (
	"errors"
	"slices"

	"github.com/sparkprof/sparkprof/profile"
)

// gcRecord is one line of the agent's "gc" part: a garbage collection from
// the JVM's notifications, sent when async-profiler records the samples and
// the Flight Recorder, which would record collections, does not run
// (docs/agent.md).
type gcRecord struct {
	Name       string `json:"name"`
	Cause      string `json:"cause"`
	StartMs    int64  `json:"startMs"`
	DurationMs int64  `json:"durationMs"`
}

func parseGCs(data []byte) ([]gcRecord, error) {
	return parseJSONLines(data, "gc", func(g *gcRecord) error {
		if g.Name == "" || g.StartMs <= 0 || g.DurationMs < 0 {
			return errors.New("want a name, a positive startMs and a durationMs of 0 or more")
		}
		return nil
	})
}

// addGCs adds the collections to p's "jvm.gc.pause" series, one per
// collector, the series a JFR's jdk.GarbageCollection events make.
func addGCs(p *profile.Profile, gcs []gcRecord) {
	for _, g := range gcs {
		ls := profile.Labels{{Name: "gc", Value: g.Name}}
		i := seriesIndex(p, "jvm.gc.pause", "nanoseconds", ls)
		p.Series[i].Points = append(p.Series[i].Points, profile.Point{Time: g.StartMs * 1e6, Value: float64(g.DurationMs) * 1e6})
	}
}

// seriesIndex returns the index of p's series of that name and labels,
// adding it if p has none.
func seriesIndex(p *profile.Profile, name, unit string, ls profile.Labels) int {
	for i, s := range p.Series {
		if s.Name == name && s.Unit == unit && slices.Equal(s.Labels, ls) {
			return i
		}
	}
	p.Series = append(p.Series, profile.Series{Name: name, Unit: unit, Labels: ls})
	return len(p.Series) - 1
}
