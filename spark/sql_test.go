package spark

import (
	"fmt"
	"os"
	"path/filepath"
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

// TestStageAccumulators keeps a stage's named accumulators, as Spark's
// JsonProtocol writes a StageCompleted's "Accumulables": the program's
// (not internal), with numbers or strings as values; not task metrics
// or SQL metrics.
func TestStageAccumulators(t *testing.T) {
	log := `{"Event":"SparkListenerLogStart","Spark Version":"3.3.0"}
{"Event":"SparkListenerStageCompleted","Stage Info":{"Stage ID":3,"Stage Attempt ID":0,"Stage Name":"count","Number of Tasks":2,"Submission Time":1000,"Completion Time":2000,"Accumulables":[` +
		`{"ID":1,"Name":"internal.metrics.executorRunTime","Value":40,"Internal":true,"Count Failed Values":true},` +
		`{"ID":2,"Name":"number of output rows","Value":"100","Internal":true,"Count Failed Values":true,"Metadata":"sql"},` +
		`{"ID":3,"Name":"bad records","Value":7,"Internal":false,"Count Failed Values":false},` +
		`{"ID":4,"Name":"seen keys","Value":"[a, b]","Internal":false,"Count Failed Values":false},` +
		`{"ID":5,"Value":"1","Internal":false,"Count Failed Values":false}]}}
`
	path := filepath.Join(t.TempDir(), "eventlog")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	app, _ := buildPath(t, path)
	got := fmt.Sprint(app.Stages[0].Accumulators)
	if want := "[{bad records 7} {seen keys [a, b]}]"; got != want {
		t.Errorf("accumulators %s, want %s", got, want)
	}
}
