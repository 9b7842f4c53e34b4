package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/profile"
)

// part is a piece of the run's change: a cause acting on one stage, or on
// the driver's time.
type part struct {
	kind      Kind
	ms        float64
	evidence  string
	stage     int // -1 for none
	settings  []string
	functions []FunctionChange
}

// factor is one term of a stage's time written as a product: its value in
// each run. A stage's share of the run's time is
//
//	data × CPU/data × (task time less GC)/CPU × task time/(task time less GC)
//	  × 1/slots × slots/min(tasks, slots) × 1/balance × share/duration
//
// where balance is task time over duration × min(tasks, slots): its terms
// are the input, the CPU a byte costs (the code), the time off the CPU
// (busier or slower hosts), GC, the executors, the tasks, the balance of
// the tasks and the stages' overlap. CPU time, not task time, measures the
// code: a busy host stretches a task's time, not its CPU.
type factor struct {
	kind     Kind
	old, new float64
	evidence string
	settings []string
}

// partitionSettings change how many tasks a stage gets.
var partitionSettings = []string{
	"spark.sql.shuffle.partitions", "spark.default.parallelism", "spark.sql.files.maxPartitionBytes",
	"spark.sql.files.minPartitionNum", "spark.sql.adaptive.enabled", "spark.sql.adaptive.coalescePartitions.enabled",
	"spark.sql.adaptive.advisoryPartitionSizeInBytes", "spark.sql.adaptive.coalescePartitions.minPartitionSize",
	"spark.sql.adaptive.coalescePartitions.initialPartitionNum",
}

// stageChange compares a matched stage, or tells of one only a run has,
// and returns its parts of the run's change.
func stageChange(m match, o, n *runFacts, config []ConfigChange) (StageChange, []part) {
	sc := StageChange{Confidence: round(m.confidence, 2), MatchedBy: m.by}
	if m.old != nil {
		sc.Old, sc.OldMetrics, sc.Name = &StageRef{ID: m.old.id}, &m.old.m, m.old.name
	}
	if m.new != nil {
		sc.New, sc.NewMetrics, sc.Name = &StageRef{ID: m.new.id}, &m.new.m, m.new.name
	}
	var parts []part
	switch {
	case m.old == nil:
		sc.ChangeMs = m.new.m.RunShareMs
		parts = []part{{kind: KindPlan, ms: float64(sc.ChangeMs), stage: m.new.id,
			evidence: stageLabel(m.new.id, m.new.name) + " is new: " + msText(sc.ChangeMs)}}
	case m.new == nil:
		sc.ChangeMs = -m.old.m.RunShareMs
		parts = []part{{kind: KindPlan, ms: float64(sc.ChangeMs), stage: m.old.id,
			evidence: stageLabel(m.old.id, m.old.name) + " of the old run is gone: " + msText(-sc.ChangeMs)}}
	default:
		sc.DurationRatio = ratio(float64(m.new.m.DurationMs), float64(m.old.m.DurationMs))
		sc.ChangeMs = m.new.m.RunShareMs - m.old.m.RunShareMs
		parts = decompose(m.old, m.new, stageFactors(m.old, m.new, config))
		for i := range parts {
			if parts[i].kind == KindCode {
				parts[i].functions = grownFunctions(o, n, m.old, m.new)
			}
		}
	}
	sc.Causes = sumParts(parts, float64(sc.ChangeMs))
	return sc, parts
}

// stageFactors writes the two runs' stage as the product of factors.
func stageFactors(o, n *stageFacts, config []ConfigChange) []factor {
	om, nm := &o.m, &n.m
	od, nd := float64(om.data()), float64(nm.data())
	if od <= 0 || nd <= 0 {
		od, nd = 1, 1 // no measure of data in one of the runs: all is cost
	}
	owork, nwork := pos(om.ExecutorMs-om.GCMs), pos(nm.ExecutorMs-nm.GCMs)
	ocpu, ncpu := owork, nwork // a log without CPU times: all is cost
	if om.CPUMs > 0 && nm.CPUMs > 0 {
		ocpu, ncpu = float64(om.CPUMs), float64(nm.CPUMs)
	}
	op, np := math.Min(float64(om.Tasks), om.Slots), math.Min(float64(nm.Tasks), nm.Slots)
	obal := float64(pos(om.ExecutorMs)) / (float64(pos(om.DurationMs)) * op)
	nbal := float64(pos(nm.ExecutorMs)) / (float64(pos(nm.DurationMs)) * np)
	fs := []factor{
		{KindInput, od, nd, "data " + dataChange(om, nm), nil},
		costFactor(o, n, ocpu/od, ncpu/nd),
		{KindHosts, owork / ocpu, nwork / ncpu, fmt.Sprintf("tasks on the CPU %.0f %% of their time (less GC) → %.0f %%: busier or slower hosts, or more waiting",
			100*ocpu/owork, 100*ncpu/nwork), nil},
		{KindGC, float64(pos(om.ExecutorMs)) / owork, float64(pos(nm.ExecutorMs)) / nwork,
			fmt.Sprintf("GC %s of %s task time → %s of %s", msText(om.GCMs), msText(om.ExecutorMs), msText(nm.GCMs), msText(nm.ExecutorMs)), nil},
		{KindExecutors, 1 / om.Slots, 1 / nm.Slots, fmt.Sprintf("executor cores while it ran %s → %s", num(om.Slots), num(nm.Slots)), nil},
		tasksFactor(om, nm, op, np, config),
		balanceFactor(o, n, 1/obal, 1/nbal),
		{KindOverlap, float64(pos(om.RunShareMs)) / float64(pos(om.DurationMs)), float64(pos(nm.RunShareMs)) / float64(pos(nm.DurationMs)),
			fmt.Sprintf("its share of the run's time %s of its %s → %s of %s (other stages ran beside it)",
				msText(om.RunShareMs), msText(om.DurationMs), msText(nm.RunShareMs), msText(nm.DurationMs)), nil},
	}
	return fs
}

// costFactor is the CPU time per byte: spill when the stage spills notably
// more or less, else the code (or what its data holds).
func costFactor(o, n *stageFacts, oc, nc float64) factor {
	f := factor{kind: KindCode, old: oc, new: nc}
	om, nm := &o.m, &n.m
	osp, nsp := perData(om.SpillBytes, om), perData(nm.SpillBytes, nm)
	if nsp > 1.5*osp || osp > 1.5*nsp {
		f.kind = KindSpill
		f.evidence = "spilled to disk " + bytesChange(om.SpillBytes, nm.SpillBytes)
		return f
	}
	unit := "in all"
	if om.data() > 0 && nm.data() > 0 {
		if om.dataUnit() == "records" {
			unit, oc, nc = "per 1,000 records", oc*1000, nc*1000
		} else {
			unit, oc, nc = "per MiB", oc*(1<<20), nc*(1<<20)
		}
	}
	f.evidence = fmt.Sprintf("CPU time %s %s → %s (%s×)", unit, msText(int64(oc)), msText(int64(nc)), num(nc/oc))
	return f
}

// perData is v per byte of the stage's data (v itself without a measure).
func perData(v int64, m *StageMetrics) float64 {
	if d := m.data(); d > 0 {
		return float64(v) / float64(d)
	}
	return float64(v)
}

// tasksFactor is the slots a stage's tasks could not fill: a config cause
// when a partition setting changed with the task count.
func tasksFactor(om, nm *StageMetrics, op, np float64, config []ConfigChange) factor {
	f := factor{kind: KindTasks, old: om.Slots / op, new: nm.Slots / np,
		evidence: fmt.Sprintf("%d tasks on %s slots → %d on %s", om.Tasks, num(om.Slots), nm.Tasks, num(nm.Slots))}
	if om.Tasks == nm.Tasks {
		return f
	}
	for _, c := range config {
		if slices.Contains(partitionSettings, c.Name) {
			f.kind = KindConfig
			f.settings = append(f.settings, c.Name)
			f.evidence += fmt.Sprintf("; %s %s → %s", c.Name, orUnset(c.Old), orUnset(c.New))
		}
	}
	return f
}

// balanceFactor is how far the tasks fell short of keeping the slots busy:
// skew when the data's spread over tasks changed, hosts when their speed
// did, else the tasks' waves and scheduling.
func balanceFactor(o, n *stageFacts, ob, nb float64) factor {
	om, nm := &o.m, &n.m
	f := factor{kind: KindTasks, old: ob, new: nb}
	if changed(om.Skew, nm.Skew) {
		f.kind = KindSkew
		f.evidence = fmt.Sprintf("largest task's data %s× → %s× the mean task's; longest task %s → %s",
			num(om.Skew), num(nm.Skew), msText(om.MaxTaskMs), msText(nm.MaxTaskMs))
		return f
	}
	if os, ns := hostSpread(o), hostSpread(n); os > 0 && ns > 0 && changed(os, ns) {
		f.kind = KindHosts
		f.evidence = fmt.Sprintf("slowest host's task time per byte %s× → %s× the fastest's", num(os), num(ns))
		return f
	}
	f.evidence = fmt.Sprintf("longest task %s → %s, median %s → %s",
		msText(om.MaxTaskMs), msText(nm.MaxTaskMs), msText(om.MedianTaskMs), msText(nm.MedianTaskMs))
	return f
}

// changed says whether two positive measures differ by half or more.
func changed(a, b float64) bool {
	return a > 0 && b > 0 && (b >= 1.5*a || a >= 1.5*b)
}

// hostSpread is the slowest host's task time per byte over the fastest's,
// 0 with fewer than two hosts.
func hostSpread(s *stageFacts) float64 {
	if len(s.hostMsPerByte) < 2 {
		return 0
	}
	lo, hi := math.Inf(1), 0.0
	for _, v := range s.hostMsPerByte {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo <= 0 {
		return 0
	}
	return hi / lo
}

// decompose splits the change of a stage's share of the run's time over
// its factors (the logarithmic mean Divisia index): each factor's part is
// the log mean of the two times by the log of the factor's ratio, so that
// the parts add up to the change exactly.
func decompose(o, n *stageFacts, fs []factor) []part {
	a, b := float64(pos(o.m.RunShareMs)), float64(pos(n.m.RunShareMs))
	lm := logMean(a, b)
	at := map[Kind]int{}
	var parts []part
	for _, f := range fs {
		if f.old <= 0 || f.new <= 0 || f.old == f.new {
			continue
		}
		ms := lm * math.Log(f.new/f.old)
		p := part{kind: f.kind, ms: ms, evidence: stageLabel(n.id, n.name) + ": " + f.evidence, stage: n.id, settings: f.settings}
		if i, ok := at[f.kind]; ok {
			if math.Abs(ms) > math.Abs(parts[i].ms) {
				p.ms += parts[i].ms
				parts[i] = p
			} else {
				parts[i].ms += ms
			}
			continue
		}
		at[f.kind] = len(parts)
		parts = append(parts, p)
	}
	return parts
}

// logMean is the logarithmic mean of two positive numbers.
func logMean(a, b float64) float64 {
	if a == b {
		return a
	}
	return (b - a) / math.Log(b/a)
}

// sumParts adds parts up by kind into causes, largest first, with their
// shares of total; the largest takes the rounding, so that the causes'
// ChangeMs add up to total.
func sumParts(parts []part, total float64) []Cause {
	byKind := map[Kind]*Cause{}
	biggest := map[Kind]float64{}
	var out []*Cause
	stageMs := map[Kind]map[int]float64{}
	for _, p := range parts {
		c := byKind[p.kind]
		if c == nil {
			c = &Cause{Kind: p.kind}
			byKind[p.kind] = c
			stageMs[p.kind] = map[int]float64{}
			out = append(out, c)
		}
		c.Share += p.ms // ms for now
		if math.Abs(p.ms) >= biggest[p.kind] {
			biggest[p.kind] = math.Abs(p.ms)
			c.Evidence = p.evidence
			c.Functions = p.functions
		}
		for _, s := range p.settings {
			if !slices.Contains(c.Settings, s) {
				c.Settings = append(c.Settings, s)
			}
		}
		if p.stage >= 0 && p.kind != KindDriver {
			stageMs[p.kind][p.stage] += p.ms
		}
	}
	causes := make([]Cause, 0, len(out))
	var sum int64
	for _, c := range out {
		c.ChangeMs = int64(math.Round(c.Share))
		sum += c.ChangeMs
		c.Stages = stagesByPart(stageMs[c.Kind])
		if n := len(c.Stages); n > 1 {
			c.Evidence += " (and " + english.Plural(n-1, "more stage") + ")"
		}
		causes = append(causes, *c)
	}
	// The causes that moved the time the way it went come first, the
	// largest first: what slowed a slower run down.
	dir := int64(1)
	if total < 0 {
		dir = -1
	}
	slices.SortStableFunc(causes, func(a, b Cause) int { return cmp.Compare(dir*b.ChangeMs, dir*a.ChangeMs) })
	if len(causes) > 0 { // the rounding, to the largest
		big := 0
		for i, c := range causes {
			if math.Abs(float64(c.ChangeMs)) > math.Abs(float64(causes[big].ChangeMs)) {
				big = i
			}
		}
		causes[big].ChangeMs += int64(math.Round(total)) - sum
	}
	for i := range causes {
		causes[i].Share = 0
		if total != 0 {
			causes[i].Share = round(float64(causes[i].ChangeMs)/math.Round(total), 3)
		}
	}
	return causes
}

// stagesByPart lists the stages by the size of their part, largest first.
func stagesByPart(ms map[int]float64) []int {
	ids := make([]int, 0, len(ms))
	for id := range ms {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int) int {
		return cmp.Or(cmp.Compare(math.Abs(ms[b]), math.Abs(ms[a])), cmp.Compare(a, b))
	})
	return ids
}

func pos(v int64) float64 { return float64(max(v, 1)) }

func orUnset(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}

// num prints a factor or a count of slots with two significant decimals.
func num(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// msText prints a duration in ms as Spark users read it.
func msText(ms int64) string { return english.Millis(ms) }

func msChange(a, b int64) string { return msText(a) + " → " + msText(b) }

// dataChange tells the change of a stage's data: records and bytes.
func dataChange(om, nm *StageMetrics) string {
	if om.dataUnit() != "records" {
		return bytesChange(om.data(), nm.data())
	}
	bytes := func(m *StageMetrics) int64 {
		if in := m.InputBytes + m.ShuffleReadBytes; in > 0 {
			return in
		}
		return m.ShuffleWriteBytes + m.OutputBytes
	}
	return fmt.Sprintf("%s → %s records (%s×), %s", profile.FormatValue(om.data(), ""), profile.FormatValue(nm.data(), ""),
		num(float64(nm.data())/float64(max(om.data(), 1))), bytesChange(bytes(om), bytes(nm)))
}

func bytesChange(a, b int64) string {
	s := english.Bytes(a) + " → " + english.Bytes(b)
	if a > 0 {
		s += " (" + num(float64(b)/float64(a)) + "×)"
	}
	return s
}
