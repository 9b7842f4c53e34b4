package ingest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/profile"
)

// This file reads the parts the sparkprof agent adds to an upload
// (docs/agent.md): its task runs and its garbage collections.

// ParseTaskRuns reads the agent's "tasks" part: a task run per line.
func ParseTaskRuns(data []byte) ([]attribution.TaskRun, error) {
	return parseJSONLines[attribution.TaskRun](data, "tasks", nil)
}

// GC is one line of the agent's "gc" part: a garbage collection from the
// JVM's notifications, sent when async-profiler records the samples and
// the Flight Recorder, which would record collections, does not run.
type GC struct {
	Name       string `json:"name"`
	Cause      string `json:"cause"`
	StartMs    int64  `json:"startMs"`
	DurationMs int64  `json:"durationMs"`
}

// ParseGCs reads the agent's "gc" part: a collection per line.
func ParseGCs(data []byte) ([]GC, error) {
	return parseJSONLines(data, "gc", func(g *GC) error {
		if g.Name == "" || g.StartMs <= 0 || g.DurationMs < 0 {
			return errors.New("want a name, a positive startMs and a durationMs of 0 or more")
		}
		return nil
	})
}

// parseJSONLines reads one of the agent's parts: a JSON value per line,
// blank lines skipped, each checked by check if given. Errors name the
// part and line.
func parseJSONLines[T any](data []byte, part string, check func(*T) error) ([]T, error) {
	if len(data) == 0 {
		return nil, nil // most uploads: no scanner or buffer
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		err := json.Unmarshal(line, &v)
		if err == nil && check != nil {
			err = check(&v)
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", part, n, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s part: %w", part, err)
	}
	return out, nil
}

// addGCs adds the collections to p's "jvm.gc.pause" series, one per
// collector, the series a JFR's jdk.GarbageCollection events make.
func addGCs(p *profile.Profile, gcs []GC) {
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
