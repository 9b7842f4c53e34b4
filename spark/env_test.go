package spark

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// TestEnvironmentGolden compares the environment with the History
// Server's answer for the same log (/applications/<id>/environment).
func TestEnvironmentGolden(t *testing.T) {
	app, _ := build(t, "eventlogs", "apache", "app-20161116163331-0000")
	var want struct {
		Runtime   map[string]string `json:"runtime"`
		Spark     [][2]string       `json:"sparkProperties"`
		Hadoop    [][2]string       `json:"hadoopProperties"`
		System    [][2]string       `json:"systemProperties"`
		Metrics   [][2]string       `json:"metricsProperties"`
		Classpath [][2]string       `json:"classpathEntries"`
	}
	if err := json.Unmarshal(corpus.Read(t, "eventlogs", "golden", "apache", "app_environment_expectation.json"), &want); err != nil {
		t.Fatal(err)
	}
	env := app.Environment
	if env == nil {
		t.Fatal("no environment")
	}
	sorted := func(ps [][2]string) [][2]string {
		out := append([][2]string(nil), ps...)
		sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] || out[i][0] == out[j][0] && out[i][1] < out[j][1] })
		return out
	}
	for _, s := range []struct {
		name      string
		got, want [][2]string
	}{
		{"spark", env.Spark, want.Spark},
		{"system", env.System, want.System},
		{"classpath", env.Classpath, want.Classpath},
		{"hadoop", env.Hadoop, want.Hadoop},
		{"metrics", env.Metrics, want.Metrics},
	} {
		got, exp := sorted(s.got), sorted(s.want)
		if len(got) != len(exp) || len(got) == 0 {
			t.Errorf("%s: %d properties, want %d", s.name, len(got), len(exp))
			continue
		}
		for i := range got {
			if got[i] != exp[i] {
				t.Errorf("%s: %q, want %q", s.name, got[i], exp[i])
			}
		}
	}
	runtime := map[string]string{}
	for _, p := range env.Runtime {
		runtime[p[0]] = p[1]
	}
	for k, v := range map[string]string{"Java Home": want.Runtime["javaHome"], "Java Version": want.Runtime["javaVersion"], "Scala Version": want.Runtime["scalaVersion"]} {
		if runtime[k] != v {
			t.Errorf("runtime %s = %q, want %q", k, runtime[k], v)
		}
	}
}

// TestSQLPlans reads each SQL execution's physical plan: after adaptive
// query execution changed it, the plan that ran (the log's first plan of
// execution 0 is AdaptiveSparkPlan (7), isFinalPlan=false).
func TestSQLPlans(t *testing.T) {
	app, _ := build(t, "eventlogs", "apache", "local-1642039451826")
	if len(app.SQL) != 2 {
		t.Fatalf("%d SQL executions, want 2", len(app.SQL))
	}
	s := app.SQL[0]
	if !strings.HasPrefix(s.PlanDescription, "== Physical Plan ==\nAdaptiveSparkPlan (13)\n+- == Final Plan ==") {
		t.Errorf("plan text %.80q", s.PlanDescription)
	}
	var names []string
	for n := s.Plan; n != nil; {
		names = append(names, n.Name)
		if len(n.Children) == 0 {
			break
		}
		n = n.Children[0]
	}
	want := "AdaptiveSparkPlan < WholeStageCodegen (3) < HashAggregate < InputAdapter < ShuffleQueryStage < Exchange < " +
		"WholeStageCodegen (2) < HashAggregate < InputAdapter < ShuffleQueryStage < Exchange < WholeStageCodegen (1) < Project < Range"
	if got := strings.Join(names, " < "); got != want {
		t.Errorf("plan operators %s, want %s", got, want)
	}
	if d := s.Plan.Children[0].Children[0].Detail; d != "HashAggregate(keys=[], functions=[count(1)])" {
		t.Errorf("detail %q", d)
	}
	// The final plan of an adaptive execution replaces the first one.
	aqe, _ := build(t, "eventlogs", "nvidia", "aqeshuffle_eventlog.zstd")
	final := 0
	for _, s := range aqe.SQL {
		if strings.Contains(s.PlanDescription, "isFinalPlan=true") {
			final++
		}
	}
	if final == 0 {
		t.Error("no SQL execution of the AQE log has its final plan")
	}
}

// TestRedact: a property whose name or value looks secret is redacted in
// every section, as the History Server shows it; others are kept.
func TestRedact(t *testing.T) {
	for _, tt := range []struct {
		name, value, want string
	}{
		{"dfs.block.access.token.enable", "true", redacted},
		{"fs.s3a.access.key", "AKIA", redacted},
		{"spark.executorEnv.DB_PASSWORD", "x", redacted},
		{"sun.java.command", "Main --conf spark.secret=x", redacted},
		{"spark.executor.cores", "4", "4"},
		{"fs.s3a.accesskey.style", "path", "path"},
	} {
		if got := redact([][2]string{{tt.name, tt.value}})[0][1]; got != tt.want {
			t.Errorf("%s=%s: %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}
