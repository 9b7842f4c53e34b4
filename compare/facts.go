package compare

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// runFacts is what a comparison needs of one run.
type runFacts struct {
	app        *spark.App
	profiles   []*profile.Profile
	durationMs int64
	stageMs    int64 // time at least one stage ran
	// stages are the stages that ran tasks, by their first launch.
	stages []*stageFacts
	// info are the stages as Spark described them (the first attempt of
	// each id), those that ran and those skipped: the DAG the matching
	// reads.
	info map[int]*spark.Stage
	// sigs and depths remember each stage's signature and depth.
	sigs   map[int]string
	depths map[int]int
}

// stageFacts is one stage of a run, its attempts together.
type stageFacts struct {
	id      int
	name    string
	startMs int64
	endMs   int64
	tasks   []*spark.Task
	m       StageMetrics
	// bytesIn are the data of each task (dataOf), which Skew compares.
	bytesIn []int64
	// hostMsPerByte is the task time per unit of data by host.
	hostMsPerByte map[string]float64
}

func newRunFacts(run Run) *runFacts {
	app := run.App
	f := &runFacts{app: app, profiles: run.Profiles, durationMs: app.DurationMs, info: map[int]*spark.Stage{},
		sigs: map[int]string{}, depths: map[int]int{}}
	byID := map[int]*stageFacts{}
	for _, st := range app.Stages {
		if prev, ok := f.info[st.ID]; !ok || st.Attempt < prev.Attempt {
			f.info[st.ID] = st
		}
	}
	for _, t := range app.Tasks {
		if t.FinishMs == 0 || t.Reason == "Resubmitted" {
			continue
		}
		s := byID[t.StageID]
		if s == nil {
			s = &stageFacts{id: t.StageID, startMs: t.LaunchMs, endMs: t.FinishMs}
			if st := f.info[t.StageID]; st != nil {
				s.name = st.Name
			}
			byID[t.StageID] = s
			f.stages = append(f.stages, s)
		}
		s.tasks = append(s.tasks, t)
		s.startMs = min(s.startMs, t.LaunchMs)
		s.endMs = max(s.endMs, t.FinishMs)
	}
	slices.SortFunc(f.stages, func(a, b *stageFacts) int { return cmp.Or(cmp.Compare(a.startMs, b.startMs), cmp.Compare(a.id, b.id)) })
	for _, s := range f.stages {
		s.measure(app)
	}
	f.stageMs = shareRunTime(f.stages)
	if f.durationMs < f.stageMs {
		f.durationMs = f.stageMs // a log without its end
	}
	return f
}

// measure fills s.m from its tasks and app's executors.
func (s *stageFacts) measure(app *spark.App) {
	m := &s.m
	m.DurationMs = s.endMs - s.startMs
	m.Tasks = len(s.tasks)
	durs := make([]int64, 0, len(s.tasks))
	hostMs, hostBytes := map[string]int64{}, map[string]int64{}
	for _, t := range s.tasks {
		d := t.DurationMs()
		durs = append(durs, d)
		tm := &t.Metrics
		m.ExecutorMs += d
		m.GCMs += tm.GCTimeMs
		m.CPUMs += tm.CPUTimeNs / 1e6
		m.InputBytes += tm.InputBytes
		m.ShuffleReadBytes += tm.ShuffleReadBytes()
		m.ShuffleWriteBytes += tm.ShuffleWriteBytes
		m.OutputBytes += tm.OutputBytes
		m.InputRecords += tm.InputRecords
		m.ShuffleReadRecords += tm.ShuffleReadRecords
		m.ShuffleWriteRecords += tm.ShuffleWriteRecords
		m.OutputRecords += tm.OutputRecords
		m.SpillBytes += tm.DiskSpilled
		hostMs[t.Host] += d
	}
	slices.Sort(durs)
	if len(durs) > 0 {
		m.MaxTaskMs = durs[len(durs)-1]
		m.MedianTaskMs = durs[len(durs)/2]
	}
	// The data a task works through, in records, which compression does
	// not change (bytes without records): what it reads, or for a stage
	// that reads nothing measured (a generated range, a parallelized
	// list), what it writes.
	s.bytesIn = make([]int64, len(s.tasks))
	var most, sum int64
	for i, t := range s.tasks {
		b := m.dataOf(&t.Metrics)
		s.bytesIn[i] = b
		most, sum = max(most, b), sum+b
		hostBytes[t.Host] += b
	}
	if sum > 0 {
		m.Skew = round(float64(most)*float64(len(s.tasks))/float64(sum), 2)
	}
	s.hostMsPerByte = map[string]float64{}
	for h, ms := range hostMs {
		if hostBytes[h] > 0 {
			s.hostMsPerByte[h] = float64(ms) / float64(hostBytes[h])
		}
	}
	m.Slots = meanSlots(app, s.startMs, s.endMs)
}

// data is the stage's measure of data for the input cause (dataOf of its
// sums).
func (m *StageMetrics) data() int64 {
	return m.dataOf(&spark.TaskMetrics{InputRecords: m.InputRecords, ShuffleReadRecords: m.ShuffleReadRecords,
		ShuffleWriteRecords: m.ShuffleWriteRecords, OutputRecords: m.OutputRecords, InputBytes: m.InputBytes,
		ShuffleLocalBytes: m.ShuffleReadBytes, ShuffleWriteBytes: m.ShuffleWriteBytes, OutputBytes: m.OutputBytes})
}

// dataOf measures a task's data as its stage does: records read, or
// written when the stage reads none; bytes when it counts no records.
func (m *StageMetrics) dataOf(t *spark.TaskMetrics) int64 {
	switch {
	case m.InputRecords+m.ShuffleReadRecords > 0:
		return t.InputRecords + t.ShuffleReadRecords
	case m.ShuffleWriteRecords+m.OutputRecords > 0:
		return t.ShuffleWriteRecords + t.OutputRecords
	case m.InputBytes+m.ShuffleReadBytes > 0:
		return t.InputBytes + t.ShuffleReadBytes()
	}
	return t.ShuffleWriteBytes + t.OutputBytes
}

// dataUnit names what data() counts.
func (m *StageMetrics) dataUnit() string {
	if m.InputRecords+m.ShuffleReadRecords+m.ShuffleWriteRecords+m.OutputRecords > 0 {
		return "records"
	}
	return "bytes"
}

// meanSlots is the mean executor cores alive from–until.
func meanSlots(app *spark.App, from, until int64) float64 {
	if until <= from {
		until = from + 1
	}
	var coreMs int64
	for _, e := range app.Executors {
		if e.ID == "driver" {
			continue
		}
		end := e.RemovedMs
		if end == 0 {
			end = until
		}
		if lo, hi := max(e.AddedMs, from), min(end, until); hi > lo {
			coreMs += int64(max(e.Cores, 1)) * (hi - lo)
		}
	}
	if coreMs == 0 {
		return 1 // executors not known: one slot, the same in both runs
	}
	return round(float64(coreMs)/float64(until-from), 3)
}

// shareRunTime sets each stage's RunShareMs, its part of the run's time
// when each moment is shared equally by the stages running then, and
// returns the time at least one ran.
func shareRunTime(stages []*stageFacts) int64 {
	type edge struct {
		at    int64
		stage int
		start bool
	}
	edges := make([]edge, 0, 2*len(stages))
	for i, s := range stages {
		edges = append(edges, edge{s.startMs, i, true}, edge{s.endMs, i, false})
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Compare(a.at, b.at) })
	share := make([]float64, len(stages))
	running := map[int]bool{}
	var busy int64
	for i, e := range edges {
		if i > 0 && len(running) > 0 {
			span := e.at - edges[i-1].at
			busy += span
			for s := range running {
				share[s] += float64(span) / float64(len(running))
			}
		}
		if e.start {
			running[e.stage] = true
		} else {
			delete(running, e.stage)
		}
	}
	for i, s := range stages {
		s.m.RunShareMs = int64(share[i] + 0.5)
	}
	return busy
}

// summary sums the run up.
func (f *runFacts) summary(opt Options) RunSummary {
	a := f.app
	s := RunSummary{
		AppID: a.ID, AttemptID: a.AttemptID, Name: a.Name, StartMs: a.StartMs, DurationMs: f.durationMs,
		Executors: spark.CountExecutors(a.Executors), StageMs: f.stageMs, Cost: runCost(a, f.durationMs, opt),
	}
	for _, st := range f.stages {
		s.Tasks += len(st.tasks)
	}
	return s
}

// sparkProps returns the Spark properties of the app's environment.
func sparkProps(a *spark.App) map[string]string {
	props := map[string]string{}
	if a.Environment != nil {
		for _, kv := range a.Environment.Spark {
			props[kv[0]] = kv[1]
		}
	}
	for k, v := range a.Config {
		if _, ok := props[k]; !ok {
			props[k] = v
		}
	}
	return props
}

// runIdentity are the properties that differ from run to run of the same
// job by their nature: ids, ports, hosts, times and per-run paths.
func runIdentity(name string) bool {
	switch name {
	case "spark.app.id", "spark.app.name", "spark.app.startTime", "spark.app.submitTime", "spark.app.attempt.id",
		"spark.driver.host", "spark.driver.appUIAddress", "spark.executor.id", "spark.ui.proxyBase",
		"spark.repl.class.uri", "spark.repl.class.outputDir", "spark.app.initial.jar.urls",
		"spark.app.initial.file.urls", "spark.sql.execution.id":
		return true
	}
	return strings.HasSuffix(name, ".port") || strings.HasPrefix(name, "spark.yarn.app") ||
		strings.HasPrefix(name, "spark.kubernetes.driver.pod") || strings.Contains(name, "secret")
}

// configChanges lists the Spark properties whose values differ, by name.
func configChanges(old, new *spark.App) []ConfigChange {
	o, n := sparkProps(old), sparkProps(new)
	out := []ConfigChange{}
	for k, v := range n {
		if o[k] != v && !runIdentity(k) && !strings.Contains(v, new.ID) {
			out = append(out, ConfigChange{Name: k, Old: o[k], New: v})
		}
	}
	for k, v := range o {
		if _, ok := n[k]; !ok && !runIdentity(k) && !strings.Contains(v, old.ID) {
			out = append(out, ConfigChange{Name: k, Old: v})
		}
	}
	slices.SortFunc(out, func(a, b ConfigChange) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// stageLabel names a stage for the evidence: its id and name.
func stageLabel(id int, name string) string {
	if name == "" {
		return "stage " + strconv.Itoa(id)
	}
	return "stage " + strconv.Itoa(id) + " (" + name + ")"
}
