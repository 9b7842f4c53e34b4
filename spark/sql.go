package spark

import (
	"github.com/valyala/fastjson"

	"github.com/sparkprof/sparkprof/internal/english"
)

// PlanNode is one operator of a SQL execution's physical plan, as the
// plan's sparkPlanInfo gives it.
type PlanNode struct {
	Name string `json:"name"`
	// Detail is the operator's one-line description (its simpleString),
	// when it says more than its name; cut to maxPlanDetail characters.
	Detail   string      `json:"detail,omitempty"`
	Children []*PlanNode `json:"children,omitempty"`
	// Metrics are the operator's SQL metrics (rows, sizes, times, spill,
	// peak memory), as the History Server's SQL page shows them.
	Metrics []*PlanMetric `json:"metrics,omitempty"`
}

// PlanMetric is one SQL metric of a plan operator: its name, its kind
// (sum: a count; size: bytes; timing: ms; nsTiming: ns; average), and its
// total over the execution's stages, as their StageCompleted events and
// the driver's updates give it. An average metric has no total.
type PlanMetric struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Total int64  `json:"total"`
	// Known says that the execution ran stages, which report a metric
	// only when it is not zero: false for an execution that ran none, and
	// for an average, whose per-task values do not add up.
	Known bool  `json:"known"`
	id    int64 // the accumulator's id
}

// Bounds on what a plan keeps, so that a generated query of thousands of
// operators does not make the model as large as its log.
const (
	maxPlanText   = 64 << 10
	maxPlanDetail = 400
	maxPlanNodes  = 2000
	maxPlanDepth  = 500
)

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
	}
}

// planNode reads one sparkPlanInfo node and its children, as long as the
// budget of nodes lasts.
func planNode(v *fastjson.Value, budget *int, depth int) *PlanNode {
	*budget--
	n := &PlanNode{Name: str(v, "nodeName")}
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

// accumulate adds to totals, by accumulator id, the values of the
// accumulators a StageCompleted's "Accumulables" list (each stage's total
// of each SQL metric) or a DriverAccumUpdates's [id, value] pairs give.
func accumulate(totals map[int64]int64, stageAccums []*fastjson.Value, driverUpdates []*fastjson.Value) {
	for _, a := range stageAccums {
		if str(a, "Metadata") != "sql" {
			continue
		}
		totals[num(a, "ID")] += num(a, "Value")
	}
	for _, u := range driverUpdates {
		if pair := u.GetArray(); len(pair) == 2 {
			totals[num(pair[0])] += num(pair[1])
		}
	}
}

// setPlanMetrics sets the totals of the metrics of plan n and its
// children from totals, by accumulator id, when the execution ran stages
// (Spark reports a metric only when it is not zero).
func setPlanMetrics(n *PlanNode, totals map[int64]int64, ran bool) {
	if n == nil {
		return
	}
	for _, m := range n.Metrics {
		if v, ok := totals[m.id]; (ok || ran) && m.Type != "average" {
			m.Total, m.Known = v, true
		}
	}
	for _, c := range n.Children {
		setPlanMetrics(c, totals, ran)
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
