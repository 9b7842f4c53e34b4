package spark

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// TestSQLMetricStats aggregates each SQL metric's task values as the
// History Server's SQL listener does, a metric a case: one stage of three
// task indices (two attempts of index 1, a speculative copy of index 2),
// then a second attempt of another stage, and the driver's updates.
func TestSQLMetricStats(t *testing.T) {
	const sqlEvent = "org.apache.spark.sql.execution.ui.SparkListener"
	metric := func(id int, typ string) string {
		return fmt.Sprintf(`{"name":"m%d","accumulatorId":%d,"metricType":"%s"}`, id, id, typ)
	}
	types := []string{1: "sum", 2: "size", 3: "timing", 4: "size", 5: "average", 6: "timing", 7: "nsTiming", 8: "size", 9: "size", 10: "size"}
	var metrics []string
	for id := 1; id < len(types); id++ {
		metrics = append(metrics, metric(id, types[id]))
	}
	task := func(stage, attempt int, id, index int, reason string, updates map[int]int) string {
		var accums []string
		for a := 1; a < len(types); a++ {
			if v, ok := updates[a]; ok {
				accums = append(accums, fmt.Sprintf(`{"ID":%d,"Name":"m%d","Update":"%d","Value":"0","Internal":true,"Count Failed Values":true,"Metadata":"sql"}`, a, a, v))
			}
		}
		accums = append(accums, `{"ID":100,"Name":"internal.metrics.executorRunTime","Update":7,"Value":7,"Internal":true,"Count Failed Values":true}`)
		return fmt.Sprintf(`{"Event":"SparkListenerTaskEnd","Stage ID":%d,"Stage Attempt ID":%d,"Task End Reason":{"Reason":"%s"},`+
			`"Task Info":{"Task ID":%d,"Index":%d,"Attempt":0,"Launch Time":1,"Executor ID":"1","Host":"h","Finish Time":2,"Failed":%t,"Killed":false,"Accumulables":[%s]}}`,
			stage, attempt, reason, id, index, reason != "Success", strings.Join(accums, ","))
	}
	lines := []string{
		`{"Event":"SparkListenerLogStart","Spark Version":"3.5.1"}`,
		`{"Event":"` + sqlEvent + `SQLExecutionStart","executionId":0,"description":"q","details":"","physicalPlanDescription":"","time":1,` +
			`"sparkPlanInfo":{"nodeName":"Scan","simpleString":"Scan","children":[],"metadata":{},"metrics":[` + strings.Join(metrics, ",") + `]}}`,
		`{"Event":"SparkListenerJobStart","Job ID":0,"Submission Time":1,"Stage Infos":[{"Stage ID":0,"Stage Attempt ID":0,"Stage Name":"a","Number of Tasks":3},` +
			`{"Stage ID":1,"Stage Attempt ID":0,"Stage Name":"b","Number of Tasks":2},{"Stage ID":2,"Stage Attempt ID":0,"Stage Name":"c","Number of Tasks":2000000000}],` +
			`"Stage IDs":[0,1,2],"Properties":{"spark.sql.execution.id":"0"}}`,
		`{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":0,"Stage Attempt ID":0,"Stage Name":"a","Number of Tasks":3}}`,
		task(0, 0, 10, 0, "Success", map[int]int{1: 5, 2: 10, 3: 4, 5: 15, 6: 9, 7: 2_500_000, 9: 50}),
		task(0, 0, 11, 1, "ExceptionFailure", map[int]int{1: 100, 2: 99, 3: 1, 5: 0}),
		task(0, 0, 12, 1, "Success", map[int]int{1: 6, 2: 30, 3: 4, 5: 25, 6: 9}),
		task(0, 0, 13, 2, "Success", map[int]int{1: 7, 2: 20, 3: 4, 6: 3}),
		task(0, 0, 14, 2, "Success", map[int]int{1: 1000, 2: 1000}), // a speculative copy, after the index succeeded
		`{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":1,"Stage Attempt ID":0,"Stage Name":"b","Number of Tasks":2}}`,
		task(1, 0, 20, 0, "Success", map[int]int{8: 500}),
		`{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":1,"Stage Attempt ID":1,"Stage Name":"b","Number of Tasks":2}}`,
		task(1, 1, 21, 0, "Success", map[int]int{8: 40}),
		task(1, 0, 22, 1, "Success", map[int]int{8: 9000}), // of the attempt before
		`{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":2,"Stage Attempt ID":0,"Stage Name":"c","Number of Tasks":2000000000}}`,
		task(2, 0, 30, 1_999_999_999, "Success", map[int]int{10: 5}),
		`{"Event":"` + sqlEvent + `DriverAccumUpdates","executionId":0,"accumUpdates":[[9,70],[4,3]]}`,
		`{"Event":"` + sqlEvent + `SQLExecutionEnd","executionId":0,"time":9}`,
	}
	path := filepath.Join(t.TempDir(), "eventlog")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	app, _ := buildPath(t, path)
	got := map[string]*PlanMetric{}
	for _, m := range app.SQL[0].Plan.Metrics {
		got[m.Name] = m
	}
	at := func(stage, attempt int, task int64) *MaxAt { return &MaxAt{Stage: stage, Attempt: attempt, Task: task} }
	for _, tc := range []struct {
		metric, what string
		want         PlanMetric
	}{
		{"m1", "a sum adds the index's first successful attempt, not the failed one or the later copy",
			PlanMetric{Known: true, Total: 18, Values: 3}},
		{"m2", "a size: total, min, med, max; the max of every update, the failed one's too",
			PlanMetric{Known: true, Total: 60, Values: 3, Min: 10, Med: 20, Max: 30, MaxAt: at(0, 0, 11)}},
		{"m3", "equal values: the max is the first task's", PlanMetric{Known: true, Total: 12, Values: 3, Min: 4, Med: 4, Max: 4, MaxAt: at(0, 0, 10)}},
		{"m4", "only the driver's update", PlanMetric{Known: true, Total: 3, Values: 1}},
		{"m5", "an average counts the values above zero", PlanMetric{Known: true, Total: 40, Values: 2, Min: 15, Med: 25, Max: 25, MaxAt: at(0, 0, 12)}},
		{"m6", "an index that reported none counts as 0", PlanMetric{Known: true, Total: 21, Values: 3, Min: 3, Med: 9, Max: 9, MaxAt: at(0, 0, 10)}},
		{"m7", "one task of three reported it: zeros count", PlanMetric{Known: true, Total: 2_500_000, Values: 3, Max: 2_500_000, MaxAt: at(0, 0, 10)}},
		{"m8", "a new stage attempt starts afresh, the attempt before's tasks no longer count; the upper median",
			PlanMetric{Known: true, Total: 40, Values: 2, Med: 40, Max: 40, MaxAt: at(1, 1, 21)}},
		{"m9", "the driver's update larger than the tasks': the max is the driver's",
			PlanMetric{Known: true, Total: 120, Values: 4, Med: 50, Max: 70}},
		{"m10", "a stage of 2e9 tasks, one of which ended: its zeros are counted, not kept",
			PlanMetric{Known: true, Total: 5, Values: 2_000_000_000, Max: 5, MaxAt: at(2, 0, 30)}},
	} {
		m := got[tc.metric]
		if m == nil {
			t.Errorf("%s: no metric %s", tc.what, tc.metric)
			continue
		}
		tc.want.Name, tc.want.Type, tc.want.id = m.Name, m.Type, m.id
		if !reflect.DeepEqual(*m, tc.want) {
			t.Errorf("%s (%s): got %+v (max at %+v), want %+v (max at %+v)", tc.what, tc.metric, *m, m.MaxAt, tc.want, tc.want.MaxAt)
		}
	}
}

// TestScalaSetOrder orders an execution's stages as the History Server's
// immutable Scala Set iterates them: up to four as added, more in its hash
// trie's order, Scala 2.12's (Spark 3) or 2.13's (Spark 4). The orders
// wanted are what scala.collection.immutable.Set of the scala-library of
// Spark 3.5.9 (2.12.18) and 4.3.0 (2.13) iterated, adding the ids in the
// order given.
func TestScalaSetOrder(t *testing.T) {
	for _, tc := range []struct {
		ids                []int
		scala212, scala213 []int
	}{
		{[]int{3, 1, 2}, []int{3, 1, 2}, []int{3, 1, 2}},
		{[]int{9, 4, 7, 1}, []int{9, 4, 7, 1}, []int{9, 4, 7, 1}},
		{[]int{4, 3, 2, 1, 0}, []int{0, 1, 2, 3, 4}, []int{0, 1, 2, 3, 4}},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7, 8}, []int{0, 5, 1, 6, 2, 7, 3, 8, 4}, []int{0, 5, 1, 6, 2, 7, 3, 8, 4}},
		{[]int{119, 122, 125, 0, 1, 2}, []int{0, 125, 1, 2, 119, 122}, []int{0, 125, 1, 2, 119, 122}},
		{[]int{40, 7, 33, 12, 90, 64, 3, 21}, []int{21, 33, 64, 12, 7, 3, 40, 90}, []int{64, 12, 7, 3, 40, 90, 21, 33}},
	} {
		if got := scalaSetOrder(tc.ids, false); !reflect.DeepEqual(got, tc.scala212) {
			t.Errorf("Scala 2.12 order of %v = %v, want %v", tc.ids, got, tc.scala212)
		}
		if got := scalaSetOrder(tc.ids, true); !reflect.DeepEqual(got, tc.scala213) {
			t.Errorf("Scala 2.13 order of %v = %v, want %v", tc.ids, got, tc.scala213)
		}
	}
}

// TestSQLMetricsAcrossBatches reads a log of many batches (batchBytes) of
// task events, whose accumulator updates a batch's tasks share, parsed by
// several workers: each task's update of a sum is its index + 1 and of a
// size its index, so that the execution's figures are known.
func TestSQLMetricsAcrossBatches(t *testing.T) {
	const tasks = 30_000
	const sqlEvent = "org.apache.spark.sql.execution.ui.SparkListener"
	var log strings.Builder
	fmt.Fprintf(&log, `{"Event":"SparkListenerLogStart","Spark Version":"3.5.1"}
{"Event":"%sSQLExecutionStart","executionId":0,"description":"q","details":"","physicalPlanDescription":"","time":1,`+
		`"sparkPlanInfo":{"nodeName":"Scan","simpleString":"Scan","children":[],"metadata":{},"metrics":[`+
		`{"name":"rows","accumulatorId":1,"metricType":"sum"},{"name":"bytes","accumulatorId":2,"metricType":"size"}]}}
{"Event":"SparkListenerJobStart","Job ID":0,"Submission Time":1,"Stage Infos":[{"Stage ID":0,"Stage Attempt ID":0,"Stage Name":"a","Number of Tasks":%d}],"Stage IDs":[0],"Properties":{"spark.sql.execution.id":"0"}}
{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":0,"Stage Attempt ID":0,"Stage Name":"a","Number of Tasks":%d}}
`, sqlEvent, tasks, tasks)
	for i := range tasks {
		fmt.Fprintf(&log, `{"Event":"SparkListenerTaskEnd","Stage ID":0,"Stage Attempt ID":0,"Task End Reason":{"Reason":"Success"},`+
			`"Task Info":{"Task ID":%d,"Index":%d,"Attempt":0,"Launch Time":1,"Executor ID":"1","Host":"h","Finish Time":2,"Failed":false,"Killed":false,"Accumulables":[`+
			`{"ID":100,"Name":"internal.metrics.executorRunTime","Update":7,"Value":7,"Internal":true,"Count Failed Values":true},`+
			`{"ID":1,"Name":"rows","Update":%d,"Value":0,"Internal":true,"Count Failed Values":true,"Metadata":"sql"},`+
			`{"ID":2,"Name":"bytes","Update":"%d","Value":"0","Internal":true,"Count Failed Values":true,"Metadata":"sql"}]}}`+"\n", i, i, i+1, i)
	}
	fmt.Fprintf(&log, `{"Event":"%sSQLExecutionEnd","executionId":0,"time":9}`+"\n", sqlEvent)
	if log.Len() < 8*batchBytes {
		t.Fatalf("the log has %d bytes, under 8 batches", log.Len())
	}
	path := filepath.Join(t.TempDir(), "eventlog")
	if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	app, _ := buildPath(t, path)
	got := map[string]PlanMetric{}
	for _, m := range app.SQL[0].Plan.Metrics {
		got[m.Name] = *m
	}
	if m := got["rows"]; m.Total != tasks*(tasks+1)/2 || m.Values != tasks {
		t.Errorf("rows: total %d of %d values, want %d of %d", m.Total, m.Values, tasks*(tasks+1)/2, tasks)
	}
	if m := got["bytes"]; m.Total != tasks*(tasks-1)/2 || m.Min != 0 || m.Max != tasks-1 || m.Med != tasks/2-1 && m.Med != tasks/2 {
		t.Errorf("bytes: total %d, min %d, med %d, max %d; want %d, 0, about %d, %d", m.Total, m.Min, m.Med, m.Max, tasks*(tasks-1)/2, tasks/2, tasks-1)
	}
}
