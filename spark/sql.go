package spark

import (
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/sparkprof/sparkprof/internal/english"
)

// PlanNode is one operator of a SQL execution's physical plan, as the
// plan's sparkPlanInfo gives it.
type PlanNode struct {
	// NodeID is the operator's id in the History Server's plan graph (its
	// SQL REST answer's nodeId); -1 for the nodes the graph leaves out:
	// InputAdapter, the query stages, reused exchanges and subqueries.
	NodeID int    `json:"nodeId"`
	Name   string `json:"name"`
	// Detail is the operator's one-line description (its simpleString),
	// when it says more than its name; cut to maxPlanDetail characters.
	Detail   string      `json:"detail,omitempty"`
	Children []*PlanNode `json:"children,omitempty"`
	// Metrics are the operator's SQL metrics (rows, sizes, times, spill,
	// peak memory), as the History Server's SQL page shows them.
	Metrics []*PlanMetric `json:"metrics,omitempty"`
}

// Walk calls fn for n and each operator under it, parents first; a nil n
// has none.
func (n *PlanNode) Walk(fn func(*PlanNode)) {
	if n == nil {
		return
	}
	fn(n)
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// PlanMetric is one SQL metric of a plan operator: its name, its kind
// (sum: a count; size: bytes; timing: ms; nsTiming: ns; average: tenths)
// and its values over the execution's tasks and the driver's updates, as
// the History Server's SQL page shows them: a sum's total; for the other
// kinds, when more than one value counts, their total (not an average's),
// minimum, median and maximum and the task of the maximum.
type PlanMetric struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Known says that a task or the driver reported the metric: the
	// History Server shows no value for it otherwise.
	Known bool `json:"known"`
	// Total is the sum of the values that count: all of a sum's, a size's
	// or a time's not negative, an average's above zero.
	Total int64 `json:"total"`
	// Values counts the values that count: one per task index of each of
	// the execution's stages that reported the metric (0 for the indices
	// that did not) and one per update of the driver.
	Values int   `json:"values,omitempty"`
	Min    int64 `json:"min,omitempty"`
	Med    int64 `json:"med,omitempty"`
	Max    int64 `json:"max,omitempty"`
	// MaxAt is the task of the largest update, of a metric not a sum; nil
	// when the driver's was larger ("driver").
	MaxAt *MaxAt `json:"maxAt,omitempty"`
	id    int64  // the accumulator's id
}

// MaxAt names the task of a metric's largest value.
type MaxAt struct {
	Stage   int   `json:"stageId"`
	Attempt int   `json:"stageAttempt"`
	Task    int64 `json:"taskId"`
}

// Bounds on what a plan keeps, so that a generated query of thousands of
// operators does not make the model as large as its log.
const (
	maxPlanText   = 64 << 10
	maxPlanDetail = 400
	maxPlanNodes  = 2000
	maxPlanDepth  = 500
)

// sqlEvent applies a Spark SQL event, and reports whether ev is one.
func (b *builder) sqlEvent(ev string, v *fastjson.Value) bool {
	const prefix = "org.apache.spark.sql.execution.ui.SparkListener"
	name, ok := strings.CutPrefix(ev, prefix)
	if !ok {
		return false
	}
	id := num(v, "executionId")
	switch name {
	case "SQLExecutionStart":
		s := b.sqlExec(id)
		s.Description = str(v, "description")
		s.StartMs = num(v, "time")
		sqlPlan(s, v)
		b.sqlm.addMetrics(id, s.Plan, nil)
	case "SQLAdaptiveExecutionUpdate":
		s := b.sqlExec(id)
		sqlPlan(s, v)
		b.sqlm.addMetrics(id, s.Plan, nil)
	case "SQLAdaptiveSQLMetricUpdates":
		b.sqlm.addMetrics(id, nil, v.GetArray("sqlPlanMetrics"))
	case "DriverAccumUpdates":
		b.sqlm.driverUpdates(id, v.GetArray("accumUpdates"))
	case "SQLExecutionEnd":
		s := b.sqlExec(id)
		s.EndMs = num(v, "time")
		s.Error = str(v, "errorMessage")
		b.sqlm.end(id, b.app.SparkVersion)
	default:
		return false
	}
	return true
}

// sqlPlan sets s's plan from a SQLExecutionStart or, after adaptive query
// execution changed it, a SQLAdaptiveExecutionUpdate: the last one is the
// plan that ran.
func sqlPlan(s *SQLExecution, v *fastjson.Value) {
	if d := str(v, "physicalPlanDescription"); d != "" {
		s.PlanDescription = english.Truncate(d, maxPlanText)
	}
	if info := v.Get("sparkPlanInfo"); info != nil && info.Type() == fastjson.TypeObject {
		budget := maxPlanNodes
		s.Plan = planNode(info, &budget, 0)
		numberPlan(s.Plan)
	}
}

// planNode reads one sparkPlanInfo node and its children, as long as the
// budget of nodes lasts.
func planNode(v *fastjson.Value, budget *int, depth int) *PlanNode {
	*budget--
	n := &PlanNode{NodeID: -1, Name: str(v, "nodeName")}
	if d := str(v, "simpleString"); d != n.Name {
		n.Detail = english.Truncate(d, maxPlanDetail)
	}
	for _, m := range v.GetArray("metrics") {
		n.Metrics = append(n.Metrics, &PlanMetric{Name: str(m, "name"), Type: str(m, "metricType"), id: num(m, "accumulatorId")})
	}
	if depth >= maxPlanDepth {
		return n
	}
	for _, c := range v.GetArray("children") {
		if *budget <= 0 {
			break
		}
		if c.Type() == fastjson.TypeObject {
			n.Children = append(n.Children, planNode(c, budget, depth+1))
		}
	}
	return n
}

// numberPlan numbers the nodes of plan as the History Server's plan graph
// does: depth first, a WholeStageCodegen before the operators it holds,
// leaving out the wrappers (InputAdapter, query stages, Spark 4's
// ResultQueryStage, ReusedSubquery) and the exchanges and subqueries a
// plan reuses, which it draws once.
func numberPlan(plan *PlanNode) {
	if plan == nil {
		return
	}
	g := planGraph{drawn: map[uint64]bool{}, keys: map[*PlanNode]uint64{}}
	g.key(plan)
	g.number(plan, false)
}

// planGraph numbers a plan's nodes.
type planGraph struct {
	next  int
	drawn map[uint64]bool // the keys of the exchanges and subqueries drawn
	keys  map[*PlanNode]uint64
}

// key returns a node's structural key: a hash of its name, detail,
// metrics and children's keys, equal for equal subtrees.
func (g *planGraph) key(n *PlanNode) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00", n.Name, n.Detail)
	for _, m := range n.Metrics {
		fmt.Fprintf(h, "%d,", m.id)
	}
	for _, c := range n.Children {
		fmt.Fprintf(h, "(%x)", g.key(c))
	}
	k := h.Sum64()
	g.keys[n] = k
	return k
}

// number numbers node n; inCodegen says it is inside a WholeStageCodegen.
func (g *planGraph) number(n *PlanNode, inCodegen bool) {
	first := func() *PlanNode {
		if len(n.Children) > 0 {
			return n.Children[0]
		}
		return nil
	}
	subquery := n.Name == "Subquery"
	switch {
	case strings.HasPrefix(n.Name, "WholeStageCodegen"):
		n.NodeID, g.next = g.next, g.next+1
		if c := first(); c != nil {
			g.number(c, true)
		}
	case n.Name == "InputAdapter", n.Name == "TableCacheQueryStage", n.Name == "ResultQueryStage":
		if c := first(); c != nil {
			g.number(c, false)
		}
	case n.Name == "BroadcastQueryStage", n.Name == "ShuffleQueryStage":
		if c := first(); c != nil && !g.drawn[g.keys[c]] {
			g.number(c, false)
		}
	case subquery && inCodegen:
		g.number(n, false)
	case subquery && g.drawn[g.keys[n]]:
	case n.Name == "ReusedSubquery":
		if c := first(); c != nil {
			g.number(c, inCodegen)
		}
	case n.Name == "ReusedExchange" && first() != nil && g.drawn[g.keys[first()]]:
	default:
		n.NodeID, g.next = g.next, g.next+1
		if strings.Contains(n.Name, "Exchange") || subquery {
			g.drawn[g.keys[n]] = true
		}
		for _, c := range n.Children {
			g.number(c, inCodegen)
		}
	}
}

// setPlanMetrics sets the metrics of plan n and its children from the
// stats of their accumulators.
func setPlanMetrics(n *PlanNode, stats map[int64]*sqlStats) {
	if n == nil {
		return
	}
	for _, m := range n.Metrics {
		if s := stats[m.id]; s != nil {
			m.Known, m.Total, m.Values, m.MaxAt = true, s.total, s.values, s.at
			if m.Type != "sum" && s.values > 1 {
				m.Min, m.Med, m.Max = s.min, s.med, s.max
			} else {
				m.MaxAt = nil
			}
		}
	}
	for _, c := range n.Children {
		setPlanMetrics(c, stats)
	}
}

// userAccumulators returns the accumulators a program named among a
// StageCompleted's "Accumulables": those neither internal (task metrics)
// nor SQL metrics.
func userAccumulators(accums []*fastjson.Value) []Accumulator {
	var out []Accumulator
	for _, a := range accums {
		name := str(a, "Name")
		if name == "" || a.GetBool("Internal") || str(a, "Metadata") == "sql" {
			continue
		}
		value := str(a, "Value")
		if v := a.Get("Value"); v != nil && v.Type() == fastjson.TypeNumber {
			value = v.String()
		}
		out = append(out, Accumulator{Name: name, Value: english.Truncate(value, maxPlanDetail)})
	}
	return out
}
