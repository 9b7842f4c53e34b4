package applog

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/sparkprof/sparkprof/containerlog"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

func parseCorpus(t testing.TB, rel ...string) *containerlog.Log {
	t.Helper()
	l, err := Parse(bytes.NewReader(corpus.Read(t, rel...)), strings.Join(rel, "/"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestCorpusTasks(t *testing.T) {
	tests := []struct {
		path      []string
		layout    containerlog.Layout
		jobs      int
		took      time.Duration
		durations map[int]time.Duration // TID -> duration
		python    time.Duration         // largest PythonRunner total
	}{
		{
			path:   []string{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"},
			layout: containerlog.LayoutLog4jLine, jobs: 1, took: 1070800 * time.Millisecond,
			durations: map[int]time.Duration{0: 1070586 * time.Millisecond, 1: 122813 * time.Millisecond, 2: 137399 * time.Millisecond},
		},
		{
			path:   []string{"applogs", "phil_stopwatch", "profile_straggler", "Straggler_PySpark.log.gz"},
			layout: containerlog.LayoutLog4jLine, jobs: 1,
			durations: map[int]time.Duration{0: 566462 * time.Millisecond, 1: 35899 * time.Millisecond, 2: 39995 * time.Millisecond},
			python:    566318 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.path[len(tt.path)-1], func(t *testing.T) {
			l := parseCorpus(t, tt.path...)
			if l.Layout != tt.layout {
				t.Errorf("layout = %q, want %q", l.Layout, tt.layout)
			}
			if len(l.Jobs) != tt.jobs || len(l.Stages) != 1 {
				t.Fatalf("jobs, stages = %d, %d; want %d, 1", len(l.Jobs), len(l.Stages), tt.jobs)
			}
			if tt.took != 0 && l.Jobs[0].Took.Round(100*time.Millisecond) != tt.took {
				t.Errorf("job took %v, want %v", l.Jobs[0].Took, tt.took)
			}
			if len(l.Tasks) != len(tt.durations) {
				t.Fatalf("got %d tasks, want %d", len(l.Tasks), len(tt.durations))
			}
			for _, task := range l.Tasks {
				if want := tt.durations[task.TID]; task.Duration != want || task.Status != "SUCCESS" {
					t.Errorf("TID %d: duration %v status %s, want %v SUCCESS", task.TID, task.Duration, task.Status, want)
				}
				if got := task.Finish.Sub(task.Launch); got < task.Duration-2*time.Second || got > task.Duration+2*time.Second {
					t.Errorf("TID %d: finish-launch %v far from %v", task.TID, got, task.Duration)
				}
			}
			var maxPy time.Duration
			for _, p := range l.Python {
				maxPy = max(maxPy, p.Total)
			}
			if tt.python != 0 && len(l.Python) != len(tt.durations) {
				t.Errorf("got %d PythonRunner lines, want one per task (%d)", len(l.Python), len(tt.durations))
			}
			if maxPy != tt.python {
				t.Errorf("max PythonRunner total = %v, want %v", maxPy, tt.python)
			}
			if l.Unparsed == 0 {
				t.Errorf("no unparsed agent lines counted")
			}
		})
	}
}

func TestNvidiaDriverLog(t *testing.T) {
	l := parseCorpus(t, "applogs", "nvidia", "driverlog")
	if l.Layout != containerlog.LayoutLog4j || l.Role != "driver" || l.Lines != 298 {
		t.Errorf("layout %q role %q lines %d; want log4j driver 298", l.Layout, l.Role, l.Lines)
	}
	wantParts := []int{1824, 1, 1, 1}
	if len(l.Jobs) != len(wantParts) {
		t.Fatalf("got %d jobs, want %d", len(l.Jobs), len(wantParts))
	}
	for i, j := range l.Jobs {
		if j.ID != i || j.Partitions != wantParts[i] || j.Took <= 0 {
			t.Errorf("job %d = %+v, want id %d with %d partitions", i, j, i, wantParts[i])
		}
	}
	if got := l.Jobs[0].Took; got != 3424451*time.Microsecond {
		t.Errorf("job 0 took %v", got)
	}
	// The corpus README says 6 WARN lines; the file has 7 WARN records
	// (grep -c " WARN " agrees): lines 23, 42-44, 198, 239 and 254.
	if l.Levels["WARN"] != 7 {
		t.Errorf("WARN lines = %d, want 7", l.Levels["WARN"])
	}
	warns := 0
	for _, g := range l.Errors {
		if g.Level == "WARN" {
			warns += g.Count
		}
	}
	if warns != 7 {
		t.Errorf("WARN records in groups = %d, want 7", warns)
	}
	for _, task := range l.Tasks {
		if task.Executor != "driver" || task.Host != "localhost" {
			t.Errorf("task %+v: want executor driver on localhost", task)
		}
	}
	if len(l.Tasks) == 0 {
		t.Error("no tasks")
	}
}

func TestErrorDedup(t *testing.T) {
	// Generated fixture: two exceptions differing only in numbers, host
	// and hex, then an unrelated later error.
	const log = `24/01/02 10:00:00 ERROR Executor: Exception in task 3.0 in stage 1.0 (TID 7)
java.io.IOException: Connection reset by peer to host-10-0-0-1:7337 at 0x7f3a12
	at sun.nio.ch.FileDispatcherImpl.read0(Native Method)
24/01/02 10:00:01 INFO Executor: Running task 4.0 in stage 1.0 (TID 8)
24/01/02 10:00:05 ERROR Executor: Exception in task 4.0 in stage 1.0 (TID 8)
java.io.IOException: Connection reset by peer to host-10-0-0-2:7337 at 0x7f3b99
	at sun.nio.ch.FileDispatcherImpl.read0(Native Method)
24/01/02 10:00:09 ERROR Other: boom
`
	l, err := Parse(strings.NewReader(log), "fixture", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Errors) != 2 {
		t.Fatalf("got %d groups, want 2: %+v", len(l.Errors), l.Errors)
	}
	if g := l.Errors[0]; g.Logger != "Other" || g.Count != 1 {
		t.Errorf("newest group = %+v", g)
	}
	g := l.Errors[1]
	if g.Count != 2 || !strings.Contains(g.Message, "Connection reset") || !strings.Contains(g.Message, "read0") {
		t.Errorf("dedup group = %+v", g)
	}
	if want := time.Date(2024, 1, 2, 10, 0, 5, 0, time.UTC); !g.Last.Equal(want) {
		t.Errorf("last = %v, want %v", g.Last, want)
	}
}

func TestLocation(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	l, err := Parse(strings.NewReader("2019-02-17 10:52:40 INFO  Foo:54 - hi\n"), "x", Options{Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2019, 2, 17, 9, 52, 40, 0, time.UTC); !l.Start.Equal(want) {
		t.Errorf("start = %v, want %v", l.Start, want)
	}
}

// TestOpenCompressed reads the driver log plain, gzipped and
// zstd-compressed, each told apart by its first bytes.
func TestOpenCompressed(t *testing.T) {
	plain := corpus.Read(t, "applogs", "nvidia", "driverlog")
	gz := func() []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(plain)
		zw.Close()
		return buf.Bytes()
	}
	zst := func() []byte {
		zw, _ := zstd.NewWriter(nil)
		defer zw.Close()
		return zw.EncodeAll(plain, nil)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		data []byte
	}{{"stderr", plain}, {"stderr.gz", gz()}, {"stderr.zst", zst()}} {
		t.Run(tt.name, func(t *testing.T) {
			path := dir + "/" + tt.name
			if err := writeFile(path, tt.data); err != nil {
				t.Fatal(err)
			}
			l, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Jobs) != 4 {
				t.Errorf("jobs = %d, want 4", len(l.Jobs))
			}
		})
	}
	if _, err := Open(dir+"/missing", Options{}); err == nil {
		t.Error("Open of a missing file succeeded")
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range [][]string{
		{"applogs", "nvidia", "driverlog"},
		{"applogs", "phil_stopwatch", "ProfileStraggler", "JobStraggler.log.gz"},
	} {
		data := corpus.Read(f, p...)
		for _, line := range bytes.Split(data, []byte("\n"))[:120] {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Parse(bytes.NewReader(b), "fuzz", Options{})
	})
}

func BenchmarkParse(b *testing.B) {
	var big bytes.Buffer
	for big.Len() < 16<<20 {
		big.Write(corpus.Read(b, "applogs", "nvidia", "driverlog"))
	}
	lines := bytes.Count(big.Bytes(), []byte("\n"))
	b.SetBytes(int64(big.Len()))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(big.Bytes()), "bench", Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestLostTasks checks failed and killed task lines of Spark 2.x and 3.x
// (generated: the corpus logs have no lost task).
func TestLostTasks(t *testing.T) {
	log := strings.Join([]string{
		"21/03/01 10:00:00 INFO TaskSetManager: Starting task 1.0 in stage 0.0 (TID 1) (10.0.0.5, executor 2, partition 1, PROCESS_LOCAL, 4433 bytes) taskResourceAssignments Map()",
		"21/03/01 10:00:05 WARN TaskSetManager: Lost task 1.0 in stage 0.0 (TID 1) (10.0.0.5 executor 2): java.lang.RuntimeException: boom",
		"\tat Job$.run(Job.scala:10)",
		"19/02/17 10:00:06 WARN TaskSetManager: Lost task 2.0 in stage 0.0 (TID 2, 10.0.0.6, executor 3): ExecutorLostFailure (executor 3 exited caused by one of the running tasks) Reason: Container killed",
		"21/03/01 10:00:07 WARN TaskSetManager: Lost task 3.0 in stage 0.0 (TID 3) (10.0.0.5 executor 2): TaskKilled (another attempt succeeded)",
	}, "\n")
	l, err := Parse(strings.NewReader(log), "lost.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		tid            int
		status, prefix string
		exec           string
	}{
		{1, "FAILED", "java.lang.RuntimeException: boom", "2"},
		{2, "FAILED", "ExecutorLostFailure", "3"},
		{3, "KILLED", "TaskKilled", "2"},
	}
	if len(l.Tasks) != len(want) {
		t.Fatalf("%d tasks: %+v", len(l.Tasks), l.Tasks)
	}
	for i, w := range want {
		tk := l.Tasks[i]
		if tk.TID != w.tid || tk.Status != w.status || !strings.HasPrefix(tk.Failure, w.prefix) || tk.Executor != w.exec {
			t.Errorf("task %d = %+v, want %+v", i, tk, w)
		}
	}
	if l.Tasks[0].Duration != 5*time.Second {
		t.Errorf("lost task duration %v, want 5s", l.Tasks[0].Duration)
	}
}

// TestKubernetesPodLogs reads driver and executor pod logs as kubectl logs
// prints them: the image entrypoint's shell trace, then Spark's lines
// (generated: the corpus has no Kubernetes logs).
func TestKubernetesPodLogs(t *testing.T) {
	driver := strings.Join([]string{
		"++ id -u",
		"+ myuid=185",
		"+ exec /usr/bin/tini -s -- /opt/spark/bin/spark-submit --conf spark.driver.bindAddress=10.1.2.3 --deploy-mode client --properties-file /opt/spark/conf/spark.properties --class org.apache.spark.examples.SparkPi local:///opt/spark/examples/jars/spark-examples.jar",
		"24/05/01 10:00:00 INFO SparkContext: Running Spark version 3.5.1",
		"24/05/01 10:00:05 WARN KubernetesClusterSchedulerBackend: Executor 2 on 10.1.2.5 decommissioned (spot interruption)",
	}, "\n")
	executor := strings.Join([]string{
		"+ exec /usr/bin/tini -s -- /opt/java/openjdk/bin/java -Xms1024m -Xmx1024m -cp '/opt/spark/conf::/opt/spark/jars/*:' org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend --driver-url spark://CoarseGrainedScheduler@spark-pi-driver-svc.default.svc:7078 --executor-id 3 --cores 1 --app-id spark-1f2e3d --hostname 10.1.2.6 --resourceProfileId 0 --podName spark-pi-exec-3",
		"24/05/01 10:00:02 INFO Executor: Starting executor ID 3 on host 10.1.2.6",
	}, "\n")
	d, err := Parse(strings.NewReader(driver), "spark-pi-driver.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Role != "driver" || d.ExecutorID != "driver" || len(d.ExecutorEvents) != 1 || d.ExecutorEvents[0].Kind != "decommission" {
		t.Errorf("driver pod log: role %q id %q events %+v", d.Role, d.ExecutorID, d.ExecutorEvents)
	}
	e, err := Parse(strings.NewReader(executor), "spark-pi-exec-3.log", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Role != "executor" || e.ExecutorID != "3" || e.AppID != "spark-1f2e3d" || e.Pod != "spark-pi-exec-3" {
		t.Errorf("executor pod log: %+v", e)
	}
}
