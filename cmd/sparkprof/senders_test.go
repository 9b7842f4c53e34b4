package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sparkprof/sparkprof/internal/repo"
	"github.com/sparkprof/sparkprof/internal/sparktest"
)

// senderJar is the jar of a real sender that scripts/senders-install.sh
// copied into build/senders (the version tools/senders/versions pins). A
// missing jar skips the test, or fails it under CI=true.
func senderJar(t *testing.T, artifact string) string {
	t.Helper()
	return senderFile(t, artifact+"-*.jar")
}

// senderFile is the file of build/senders that scripts/senders-install.sh
// put there matching glob: a jar, or async-profiler's native library
// (libasyncProfiler-*.so). A missing one skips the test, or fails it under
// CI=true.
func senderFile(t *testing.T, glob string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "build", "senders", glob))
	if len(files) == 0 {
		msg := glob + " is not in build/senders: run scripts/senders-install.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return files[0]
}

// TestPyroscopeAgentInSpark runs the Pyroscope Java agent, unchanged, as a
// -javaagent on the driver and the executors of a real Spark job of each
// pinned line, sending JFR to sparkprof serve, and checks what arrives: the
// driver's and the executors' profiles, labelled as the agent's
// configuration says, and the executors' task threads labelled with the
// tasks their names give, which must be the job's tasks.
func TestPyroscopeAgentInSpark(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Spark")
	}
	lines := sparktest.Lines(t)
	jar := senderJar(t, "agent")
	bin := buildBinary(t)
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	if err := os.MkdirAll(events, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"), "--eventlog-dir", events, "--eventlog-poll", "1s")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	for _, s := range lines {
		t.Run("Spark "+s.Version, func(t *testing.T) {
			svc := "pyroscope-spark-" + strings.ReplaceAll(s.Version, ".", "-")
			// The agent's documented system properties; itimer needs no
			// perf events, which containers often forbid.
			opts := func(role string) string {
				return strings.Join([]string{"-javaagent:" + jar, "-Dpyroscope.application.name=" + svc,
					"-Dpyroscope.server.address=" + base, "-Dpyroscope.format=jfr", "-Dpyroscope.profiler.event=itimer",
					"-Dpyroscope.upload.interval=1s", "-Dpyroscope.labels=role=" + role}, " ")
			}
			r := s.Start(t, sparktest.Job{Class: "dev.sparkprof.jobs.Jobs", Jar: s.JobsJar(t), Args: []string{"cpu"},
				Conf:              map[string]string{"spark.eventLog.enabled": "true", "spark.eventLog.dir": events},
				DriverJavaOptions: opts("driver"), ExecutorJavaOptions: opts("executor")})
			r.Wait(t)
			app := r.App(t)
			var tasks []struct {
				ID int64 `json:"taskId"`
			}
			waitFor(t, "serve to read "+app+"'s event log", func() bool {
				var detail struct {
					Tasks []struct {
						ID int64 `json:"taskId"`
					} `json:"tasks"`
				}
				if getJSONNumbers(base+"/api/v1/apps/"+app+"?tasks=brief", &detail) != nil {
					return false
				}
				tasks = detail.Tasks
				return len(tasks) == 24 // the warm-up job's 8 and the cpu job's 16
			})
			ran := map[string]bool{}
			for _, tk := range tasks {
				ran[fmt.Sprint(tk.ID)] = true
			}

			all := `{service_name="` + svc + `"}`
			if roles := serverLabelValues(t, base, "role", all); !slices.Equal(roles, []string{"driver", "executor"}) {
				t.Fatalf("profiles of roles %v arrived; want the driver's and the executors'", roles)
			}
			var bd struct {
				Rows []struct {
					Keys  []string
					Value int64
				}
			}
			mustGetJSON(t, base+"/api/v1/breakdown?"+url.Values{"query": {`{service_name="` + svc + `",role="executor",thread_pool="task"}`},
				"type": {"cpu"}, "by": {"spark_task_id"}}.Encode(), &bd)
			var labelled, unlabelled int64
			seen := map[string]bool{}
			for _, row := range bd.Rows {
				task := row.Keys[0]
				switch {
				case task == "":
					unlabelled += row.Value
				case !ran[task]:
					t.Errorf("task threads' samples labelled task %s, which the job did not run", task)
				default:
					labelled += row.Value
					seen[task] = true
				}
			}
			share := float64(labelled) / float64(labelled+unlabelled)
			t.Logf("Pyroscope agent %s in Spark %s: roles driver, executor; %d of the app's %d tasks in the task threads' samples, %.1f%% of their CPU time labelled with its task",
				filepath.Base(jar), s.Version, len(seen), len(tasks), 100*share)
			// Most, not all: the agent's labels come from thread names, and a
			// task's first and last moments on its thread can carry a
			// neighbour's (90-100 % seen on a busy machine).
			if len(seen) < 8 || share < 0.8 {
				t.Errorf("the task threads' samples name %d of the %d tasks, %.1f%% of their CPU labelled; want most", len(seen), len(tasks), 100*share)
			}
		})
	}
}

// serverLabelValues lists the values of a label among the selected
// samples, sorted.
func serverLabelValues(t *testing.T, base, label, selector string) []string {
	t.Helper()
	var vs []string
	mustGetJSON(t, base+"/api/v1/label-values?"+url.Values{"name": {label}, "query": {selector}}.Encode(), &vs)
	slices.Sort(vs)
	return vs
}
