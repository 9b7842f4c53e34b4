package spark

import (
	"fmt"
	"testing"
)

// TestSQLPlanMetrics reads each plan operator's SQL metrics from the
// stages' accumulators: count() of range(0, 100) in 8 splits, shuffled into
// 10 partitions and then into one.
func TestSQLPlanMetrics(t *testing.T) {
	app, _ := build(t, "eventlogs", "apache", "local-1642039451826")
	got := map[string]string{}
	var walk func(n *PlanNode, path string)
	walk = func(n *PlanNode, path string) {
		path += "/" + n.Name
		for _, m := range n.Metrics {
			if m.Known && m.Total != 0 {
				got[path+" "+m.Name] = fmt.Sprint(m.Total)
			}
		}
		for _, c := range n.Children {
			walk(c, path)
		}
	}
	walk(app.SQL[0].Plan, "")
	const (
		final   = "/AdaptiveSparkPlan/WholeStageCodegen (3)/HashAggregate"
		partial = final + "/InputAdapter/ShuffleQueryStage/Exchange/WholeStageCodegen (2)/HashAggregate"
		scan    = partial + "/InputAdapter/ShuffleQueryStage/Exchange"
	)
	for k, want := range map[string]string{
		final + " number of output rows":                                    "1",
		partial + " number of output rows":                                  "10",
		scan + " shuffle records written":                                   "100",
		scan + "/WholeStageCodegen (1)/Project/Range number of output rows": "100",
		scan + "/WholeStageCodegen (1) duration":                            "216",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %s", k, got[k], want)
		}
	}
	if t.Failed() {
		t.Logf("metrics: %v", got)
	}
}
