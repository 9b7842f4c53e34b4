package spark

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"
)

// The SQL metrics of a plan's operators, per task, as the History Server's
// SQL listener keeps them: for each stage of an execution and each metric
// its operators have, the value of each task index (0 for an index that
// reported none), the first successful attempt of an index deciding it;
// and the task of the stage's largest update. When the execution ends, the
// values of its stages and the driver's updates give each metric's total,
// minimum, median and maximum (sqlStats).

// accumUpdate is a task's or the driver's update of one accumulator.
type accumUpdate struct{ id, value int64 }

// taskMetricPrefix begins the names of the accumulators of task metrics,
// which a task's accumulator updates leave out.
const taskMetricPrefix = "internal.metrics."

// taskAccumulables appends to updates those of a task's "Accumulables"
// other than its task metrics whose update is an integer, as the scanner
// reads them (scanner.accumulables).
func taskAccumulables(updates []accumUpdate, accums []*fastjson.Value) []accumUpdate {
	for _, a := range accums {
		if n := a.Get("Name"); n != nil && strings.HasPrefix(string(n.MarshalTo(nil)), `"`+taskMetricPrefix) {
			continue
		}
		if u := a.Get("Update"); u != nil {
			if n, ok := integer(u.MarshalTo(nil)); ok {
				updates = append(updates, accumUpdate{id: num(a, "ID"), value: n})
			}
		}
	}
	return updates
}

// sqlTracker follows the SQL metrics of the executions that run.
type sqlTracker struct {
	live map[int64]*execMetrics
	// stages holds the metrics of the stages of the executions, by stage
	// id: the latest attempt's.
	stages map[int]*stageMetrics
	// sqlStages counts the live executions each stage is part of.
	sqlStages map[int]int
	// done holds the metrics of the executions, by execution and
	// accumulator id, once aggregated.
	done map[int64]map[int64]*sqlStats
}

// execMetrics is what the tracker keeps of a live execution.
type execMetrics struct {
	// types maps its metrics' accumulator ids to their types; it is
	// shared with its stages, so it is replaced, never changed.
	types  map[int64]string
	stages map[int]bool
	// order lists the stages as they joined the execution.
	order  []int
	driver []accumUpdate
}

// stageMetrics holds one stage attempt's task values. The History Server
// keeps numTasks values of each metric, 0 for the indices with no update;
// this keeps those of the indices that ended (slots), so that a log's
// task count cannot make it allocate more than the log's tasks.
type stageMetrics struct {
	id, attempt, numTasks int
	types                 map[int64]string
	slots                 map[int]int       // task index → its place in values
	values                map[int64][]int64 // by accumulator id, by slot
	max                   map[int64]*maxTask
	completed             map[int]bool // task indices that succeeded
}

// maxTask is the largest value of a metric and the task that gave it.
type maxTask struct {
	value          int64
	stage, attempt int
	task           int64
}

// sqlStats is one metric's aggregate over an execution.
type sqlStats struct {
	total, min, med, max int64
	values               int
	at                   *MaxAt
}

func newSQLTracker() *sqlTracker {
	return &sqlTracker{live: map[int64]*execMetrics{}, stages: map[int]*stageMetrics{},
		sqlStages: map[int]int{}, done: map[int64]map[int64]*sqlStats{}}
}

func (tr *sqlTracker) exec(id int64) *execMetrics {
	e := tr.live[id]
	if e == nil {
		e = &execMetrics{types: map[int64]string{}, stages: map[int]bool{}}
		tr.live[id] = e
	}
	return e
}

// addMetrics adds the metrics of plan (or of the list of an adaptive
// plan's metric update) to execution id's.
func (tr *sqlTracker) addMetrics(id int64, plan *PlanNode, list []*fastjson.Value) {
	e := tr.exec(id)
	types := maps.Clone(e.types)
	plan.Walk(func(n *PlanNode) {
		for _, m := range n.Metrics {
			types[m.id] = m.Type
		}
	})
	for _, m := range list {
		types[num(m, "accumulatorId")] = str(m, "metricType")
	}
	e.types = types
}

// jobStart makes the stages of a job of execution id part of it, with the
// number of tasks of each, as its JobStart's stage infos give them.
func (tr *sqlTracker) jobStart(id int64, stageIDs []int, infos []*fastjson.Value) {
	e := tr.exec(id)
	if len(e.types) > 0 {
		for _, si := range infos {
			sid := int(num(si, "Stage ID"))
			tr.stages[sid] = newStageMetrics(sid, 0, int(num(si, "Number of Tasks")), e.types)
		}
	}
	for _, s := range distinct(stageIDs) {
		if !e.stages[s] {
			e.stages[s] = true
			e.order = append(e.order, s)
			tr.sqlStages[s]++
		}
	}
}

func newStageMetrics(id, attempt, numTasks int, types map[int64]string) *stageMetrics {
	return &stageMetrics{id: id, attempt: attempt, numTasks: numTasks, types: types,
		slots: map[int]int{}, values: map[int64][]int64{}, max: map[int64]*maxTask{}, completed: map[int]bool{}}
}

// stageSubmitted starts afresh the metrics of a stage's new attempt.
func (tr *sqlTracker) stageSubmitted(id, attempt int) {
	if tr.sqlStages[id] == 0 {
		return
	}
	if st := tr.stages[id]; st != nil && st.attempt != attempt {
		tr.stages[id] = newStageMetrics(id, attempt, st.numTasks, st.types)
	}
}

// taskEnd records an ended task's updates of its stage's metrics.
func (tr *sqlTracker) taskEnd(t *Task) {
	if tr.sqlStages[t.StageID] == 0 {
		return
	}
	st := tr.stages[t.StageID]
	if st == nil || st.attempt != t.StageAttempt || st.completed[t.Index] || t.Index < 0 || t.Index >= st.numTasks {
		return
	}
	slot, ok := st.slots[t.Index]
	if !ok {
		slot = len(st.slots)
		st.slots[t.Index] = slot
	}
	for _, u := range t.accums {
		typ, ok := st.types[u.id]
		if !ok {
			continue
		}
		vals := st.values[u.id]
		if len(vals) <= slot {
			vals = append(vals, make([]int64, slot+1-len(vals))...)
			st.values[u.id] = vals
		}
		vals[slot] = u.value
		if typ == "sum" {
			continue
		}
		if m := st.max[u.id]; m == nil {
			st.max[u.id] = &maxTask{value: u.value, stage: st.id, attempt: st.attempt, task: t.ID}
		} else if u.value > m.value {
			m.value, m.task = u.value, t.ID
		}
	}
	if t.Status == "SUCCESS" {
		st.completed[t.Index] = true
	}
}

// driverUpdates records the driver's updates of execution id's metrics.
func (tr *sqlTracker) driverUpdates(id int64, pairs []*fastjson.Value) {
	e := tr.live[id]
	if e == nil {
		return
	}
	for _, p := range pairs {
		if pair := p.GetArray(); len(pair) == 2 {
			e.driver = append(e.driver, accumUpdate{id: num(pair[0]), value: num(pair[1])})
		}
	}
}

// end aggregates execution id's metrics and forgets the stages no other
// live execution has. version is the app's Spark version.
func (tr *sqlTracker) end(id int64, version string) {
	e := tr.live[id]
	if e == nil {
		return
	}
	tr.done[id] = e.aggregate(tr.stages, version)
	delete(tr.live, id)
	for s := range e.stages {
		if tr.sqlStages[s]--; tr.sqlStages[s] <= 0 {
			delete(tr.sqlStages, s)
			delete(tr.stages, s)
		}
	}
}

// finish aggregates the executions that did not end.
func (tr *sqlTracker) finish(version string) {
	for _, id := range slices.Sorted(maps.Keys(tr.live)) {
		tr.end(id, version)
	}
}

// aggregate computes the stats of e's metrics from its stages' task
// values and the driver's updates; version is the app's Spark version.
func (e *execMetrics) aggregate(stages map[int]*stageMetrics, version string) map[int64]*sqlStats {
	values := map[int64][]int64{}
	zeros := map[int64]int{} // the task indices without a value
	max := map[int64]*maxTask{}
	for _, s := range scalaSetOrder(e.order, scala213(version)) {
		st := stages[s]
		if st == nil {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(st.values)) {
			if _, ok := e.types[id]; ok {
				values[id] = append(values[id], st.values[id]...)
				zeros[id] += st.numTasks - len(st.values[id])
			}
		}
		for id, m := range st.max {
			if _, ok := e.types[id]; !ok {
				continue
			}
			if cur := max[id]; cur == nil || m.value > cur.value {
				max[id] = m
			}
		}
	}
	for _, u := range e.driver {
		if _, ok := e.types[u.id]; !ok {
			continue
		}
		if _, ok := values[u.id]; ok {
			if m := max[u.id]; m != nil && u.value > m.value {
				delete(max, u.id)
			}
		}
		values[u.id] = append(values[u.id], u.value)
	}
	out := map[int64]*sqlStats{}
	for id, vals := range values {
		out[id] = stats(e.types[id], vals, zeros[id], max[id])
	}
	return out
}

// stats aggregates a metric's values, vals and as many zeros, as the
// History Server does: a sum adds them all; a size or a time keeps those
// not negative, an average those above zero, and gives their total,
// minimum, median and maximum.
func stats(typ string, vals []int64, zeros int, m *maxTask) *sqlStats {
	s := &sqlStats{}
	if typ == "sum" {
		for _, v := range vals {
			s.total += v
		}
		s.values = len(vals) + zeros
		return s
	}
	if typ == "average" {
		zeros = 0
	}
	valid := make([]int64, 0, len(vals))
	for _, v := range vals {
		if v > 0 || (v == 0 && typ != "average") {
			valid = append(valid, v)
		}
	}
	slices.Sort(valid)
	s.values = len(valid) + zeros
	for _, v := range valid {
		s.total += v
	}
	// The i-th of the sorted values: the zeros first, as none is negative.
	at := func(i int) int64 {
		if i < zeros {
			return 0
		}
		return valid[i-zeros]
	}
	if n := s.values; n > 0 {
		s.min, s.med, s.max = at(0), at(n/2), at(n-1)
	}
	if m != nil {
		s.at = &MaxAt{Stage: m.stage, Attempt: m.attempt, Task: m.task}
	}
	return s
}

func distinct(ids []int) []int {
	var out []int
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// scalaSetOrder orders distinct stage ids, listed as they were added, as
// an immutable Scala Set of them iterates: the History Server keeps an
// execution's stages in one, and among stages whose largest values of a
// metric tie names the first. Up to four iterate as added; more in the
// order of the Set's hash trie: Scala 2.12's (Spark 3), or with scala213
// Scala 2.13's (Spark 4).
func scalaSetOrder(ids []int, scala213 bool) []int {
	if len(ids) <= 4 {
		return ids
	}
	if scala213 {
		return champOrder(ids, 0)
	}
	out := slices.Clone(ids)
	sort.Slice(out, func(i, j int) bool { return scala212Key(out[i]) < scala212Key(out[j]) })
	return out
}

// scala213 says whether the History Server of Spark version v runs on
// Scala 2.13: Spark 4 and later.
func scala213(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 4
}

// scalaHash is the improved hash by which Scala's immutable HashSets of
// ints (2.12's trie and 2.13's CHAMP) place them.
func scalaHash(n int) uint32 {
	h := int32(n)
	h += ^(h << 9)
	h ^= int32(uint32(h) >> 14)
	h += h << 4
	h ^= int32(uint32(h) >> 10)
	return uint32(h)
}

// scala212Key is an int's place in a Scala 2.12 HashSet's iteration: its
// hash 5 bits at a time from the lowest, as the trie's levels.
func scala212Key(n int) uint64 {
	h := scalaHash(n)
	var key uint64
	for shift := 0; shift < 32; shift += 5 {
		key = key<<5 | uint64(h>>shift&31)
	}
	return key
}

// champOrder orders ints as a Scala 2.13 HashSet (a CHAMP trie) iterates
// them from the level of shift: by their hash's 5 bits at that level,
// first those alone on their bits, then, level by level, those that
// share them.
func champOrder(ids []int, shift int) []int {
	if shift >= 32 { // not for distinct ints, whose hashes differ
		return ids
	}
	bits := func(n int) uint32 { return scalaHash(n) >> shift & 31 }
	groups := map[uint32][]int{}
	for _, n := range ids {
		groups[bits(n)] = append(groups[bits(n)], n)
	}
	keys := slices.Sorted(maps.Keys(groups))
	var out []int
	for _, k := range keys {
		if len(groups[k]) == 1 {
			out = append(out, groups[k][0])
		}
	}
	for _, k := range keys {
		if len(groups[k]) > 1 {
			out = append(out, champOrder(groups[k], shift+5)...)
		}
	}
	return out
}
