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
