package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// rewriteLog writes a copy of the corpus event log rel to a temporary file
// with edit applied to each event (decoded with its numbers kept as
// written), and returns the copy's events and its analysis input. Only
// the fields edit changes differ from the real log.
func rewriteLog(t *testing.T, edit func(ev map[string]any), rel ...string) ([]map[string]any, Input) {
	t.Helper()
	r, err := eventlog.Open(corpus.Path(t, rel...))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	var events []map[string]any
	for {
		line, _, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var ev map[string]any
		if err := d.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		edit(ev)
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(b, '\n'))
		events = append(events, ev)
	}
	path := filepath.Join(t.TempDir(), "eventlog")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	lr, err := eventlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	app, rep, err := spark.Build(lr)
	if err != nil {
		t.Fatal(err)
	}
	return events, Input{App: app, Report: rep}
}

func obj(v any, key string) map[string]any {
	m, _ := v.(map[string]any)[key].(map[string]any)
	return m
}

func number(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}

// TestTooFewTasks: sparklint's History Server download of
// application_1489705648216_1600 (19 executors of 2 cores) with the two
// tasks of its stage 0 made to run 4.5 minutes on 5 GiB of input each —
// their Finish Time, input Bytes Read (with the Input Metrics object Spark
// 1.6 leaves out of a task that read none) and the stage's Completion Time
// changed, nothing else. The stage had 36 slots or more free: too few
// partitions, and the what-if says more executors cannot shorten it.
func TestTooFewTasks(t *testing.T) {
	const runMs, bytesRead = 270_000, 5 << 30
	var finish int64
	_, in := rewriteLog(t, func(ev map[string]any) {
		switch ev["Event"] {
		case "SparkListenerTaskEnd":
			if number(ev["Stage ID"]) != 0 {
				return
			}
			ti := obj(ev, "Task Info")
			end := number(ti["Launch Time"]) + runMs
			ti["Finish Time"] = json.Number(itoa(end))
			finish = max(finish, end)
			m := obj(ev, "Task Metrics")
			if m["Input Metrics"] == nil { // Spark 1.6 leaves it out of a task that read nothing
				m["Input Metrics"] = map[string]any{"Data Read Method": "Hadoop"}
			}
			obj(m, "Input Metrics")["Bytes Read"] = json.Number(itoa(bytesRead))
		case "SparkListenerStageCompleted":
			if si := obj(ev, "Stage Info"); number(si["Stage ID"]) == 0 {
				si["Completion Time"] = json.Number(itoa(finish))
			}
		}
	}, "eventlogs", "sparklint", "eventLogs-application_1489705648216_1600.zip")
	fs := Analyze(in, DefaultThresholds)
	few := find(fs, KindTooFewTasks)
	if len(few) != 1 || *few[0].StageID != 0 {
		t.Fatalf("too-few-tasks findings %+v", few)
	}
	ev := few[0].Evidence.(*TooFewTasksEvidence)
	// 10 GiB in 128 MiB parts.
	if ev.Tasks != 2 || ev.MedianBytes != bytesRead || ev.MedianMs != runMs || ev.Partitions != 80 || ev.FreeSlots < 30 || ev.FreeSlots > 38 {
		t.Errorf("evidence %+v", ev)
	}
	if !strings.Contains(few[0].Suggestion, "repartition(80)") || !strings.Contains(few[0].Message, "split into 80") {
		t.Errorf("finding %q → %q", few[0].Message, few[0].Suggestion)
	}
	// Unchanged, the stage's tasks are short and small.
	if few := find(Analyze(fromEventLog(t, "eventlogs", "sparklint", "eventLogs-application_1489705648216_1600.zip"), DefaultThresholds), KindTooFewTasks); len(few) != 0 {
		t.Errorf("real log: %+v", few)
	}
	wi := find(fs, KindWhatIf)
	if len(wi) != 1 {
		t.Fatalf("what-if findings %+v", wi)
	}
	w := wi[0].Evidence.(*WhatIfEvidence)
	if len(w.BoundStages) == 0 || w.BoundStages[0] != (BoundStage{StageID: 0, Tasks: 2, LongestMs: runMs}) {
		t.Errorf("bound stages %+v", w.BoundStages)
	}
	if !strings.Contains(wi[0].Message, "stage 0 (2 tasks, 4.5 min)") || !strings.Contains(wi[0].Message, "more executors cannot shorten") {
		t.Errorf("what-if %q", wi[0].Message)
	}
	for _, e := range w.Estimates {
		if e.EstimatedMs < runMs {
			t.Errorf("%d executors: %d ms, shorter than stage 0's tasks", e.Executors, e.EstimatedMs)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestSpeculation: app-20161116163331-0000 with its re-run task attempts
// (attempt 1 and later) marked speculative — the Speculative field of
// their Task Info changed, nothing else. The counts are the copy's own,
// read here from its events.
func TestSpeculation(t *testing.T) {
	events, in := rewriteLog(t, func(ev map[string]any) {
		if ev["Event"] == "SparkListenerTaskStart" || ev["Event"] == "SparkListenerTaskEnd" {
			if ti := obj(ev, "Task Info"); number(ti["Attempt"]) > 0 {
				ti["Speculative"] = true
			}
		}
	}, "eventlogs", "apache", "app-20161116163331-0000")
	var attempts, won int
	var ms int64
	for _, ev := range events {
		if ev["Event"] != "SparkListenerTaskEnd" || obj(ev, "Task Info")["Speculative"] != true {
			continue
		}
		ti := obj(ev, "Task Info")
		attempts++
		ms += number(ti["Finish Time"]) - number(ti["Launch Time"])
		if obj(ev, "Task End Reason")["Reason"] == "Success" {
			won++
		}
	}
	if attempts == 0 {
		t.Fatal("no re-run attempts in the log")
	}
	want := spark.Speculation{Attempts: attempts, Won: won, TaskMs: ms}
	if in.App.Speculation != want {
		t.Errorf("speculation %+v, want %+v", in.App.Speculation, want)
	}
	fs := find(Analyze(in, DefaultThresholds), KindSpeculation)
	if len(fs) != 1 {
		t.Fatalf("speculation findings %+v", fs)
	}
	ev := fs[0].Evidence.(*SpeculationEvidence)
	if ev.Speculation != want || len(ev.Stages) == 0 || !strings.Contains(fs[0].Message, itoa(int64(won))+" won the race") {
		t.Errorf("finding %q %+v", fs[0].Message, ev)
	}
	if fs := find(Analyze(fromEventLog(t, "eventlogs", "apache", "app-20161116163331-0000"), DefaultThresholds), KindSpeculation); len(fs) != 0 {
		t.Errorf("real log: %+v", fs)
	}
}

// TestDecommission: tasks_executors_fail_compressed_eventlog.zstd with
// executor 1's removal and the loss reasons of its lost tasks saying it
// was decommissioned for a spot interruption — Removed Reason and Loss
// Reason changed, nothing else. Executor 2 still crashed.
func TestDecommission(t *testing.T) {
	const why = "Executor decommission: spot instance interruption"
	events, in := rewriteLog(t, func(ev map[string]any) {
		switch ev["Event"] {
		case "SparkListenerExecutorRemoved":
			if ev["Executor ID"] == "1" {
				ev["Removed Reason"] = why
			}
		case "SparkListenerTaskEnd":
			if r := obj(ev, "Task End Reason"); r["Reason"] == "ExecutorLostFailure" && r["Executor ID"] == "1" {
				r["Loss Reason"] = why
			}
		}
	}, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd")
	rerun := 0
	for _, ev := range events {
		if ev["Event"] == "SparkListenerTaskEnd" && obj(ev, "Task Info")["Executor ID"] == "1" && obj(ev, "Task End Reason")["Reason"] != "Success" {
			rerun++
		}
	}
	fs := Analyze(in, DefaultThresholds)
	dec := find(fs, KindDecommission)
	if len(dec) != 1 {
		t.Fatalf("decommission findings %+v", dec)
	}
	ev := dec[0].Evidence.(*DecommissionEvidence)
	if len(ev.Executors) != 1 || ev.Executors[0].ExecutorID != "1" || ev.RerunTasks != rerun || rerun == 0 {
		t.Errorf("evidence %+v, want executor 1 and %d tasks re-run", ev, rerun)
	}
	loss := find(fs, KindExecutorLoss)
	if len(loss) != 1 {
		t.Fatalf("executor-loss findings %+v", loss)
	}
	if lost := loss[0].Evidence.(*ExecutorLossEvidence).Executors; len(lost) != 1 || lost[0].ExecutorID != "2" {
		t.Errorf("lost executors %+v, want executor 2 alone", lost)
	}
	if dec := find(Analyze(fromEventLog(t, "eventlogs", "nvidia", "tasks_executors_fail_compressed_eventlog.zstd"), DefaultThresholds), KindDecommission); len(dec) != 0 {
		t.Errorf("real log: %+v", dec)
	}
}

// TestExclusion: app-20161116163331-0000 excluded executors 0 and 2 after
// 4 task failures each, and their node after 2 excluded executors; the
// failures finding names them.
func TestExclusion(t *testing.T) {
	fs := find(Analyze(fromEventLog(t, "eventlogs", "apache", "app-20161116163331-0000"), DefaultThresholds), KindFailures)
	if len(fs) != 1 {
		t.Fatalf("failures findings %+v", fs)
	}
	ev := fs[0].Evidence.(*FailuresEvidence)
	if len(ev.Excluded) != 3 {
		t.Fatalf("excluded %+v", ev.Excluded)
	}
	for _, want := range []string{"executor 2 (4 task failures)", "executor 0 (4 task failures)", "node 172.22.0.167 (2 executors excluded)"} {
		if !strings.Contains(fs[0].Message, want) {
			t.Errorf("message %q lacks %q", fs[0].Message, want)
		}
	}
}

// TestGCNeverAboveAll: on every event log of the corpus, no stage's GC
// share is above 100 %, with the thresholds at nothing so that every
// stage with GC time is judged.
func TestGCNeverAboveAll(t *testing.T) {
	th := DefaultThresholds
	th.GCShare, th.GCMinMs, th.MinStageMs = 0, 0, 0
	logs := []string{}
	root := corpus.Path(t, "eventlogs")
	for _, dir := range []string{"apache", "nvidia", "sparklint", "sparklens", "sparkscope"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			logs = append(logs, filepath.Join(root, dir, e.Name()))
		}
	}
	judged := 0
	for _, path := range logs {
		r, err := eventlog.Open(path)
		if err != nil {
			continue // not a log: a corrupted or hand-edited file the reader refuses
		}
		app, _, err := spark.Build(r)
		r.Close()
		if err != nil {
			continue
		}
		byStage := map[[2]int][]*spark.Task{}
		for _, t := range app.Tasks {
			byStage[[2]int{t.StageID, t.StageAttempt}] = append(byStage[[2]int{t.StageID, t.StageAttempt}], t)
		}
		sc := stageContext{load: newTaskLoad(app.Tasks), app: app}
		for _, st := range app.Stages {
			f, ok := newStageFacts(st, byStage[[2]int{st.ID, st.Attempt}], sc)
			if !ok {
				continue
			}
			if c, ok := gcRule(f, th); ok {
				judged++
				ev := c.Evidence.(*GCEvidence)
				if ev.Share > 1 || ev.ExecutorGCMs > ev.ExecutorMs || math.IsNaN(ev.Share) {
					t.Errorf("%s stage %d: %s", filepath.Base(path), st.ID, c.Message)
				}
			}
		}
	}
	if judged < 20 {
		t.Errorf("%d stages judged, want the corpus's", judged)
	}
}

// TestGCFromRecords: ProfileStraggler's Uber CpuAndMemory records (no event
// log) count, as the corpus README measured, 2,892 young collections of
// 30.7 s and 4 full ones of 0.29 s by the end of 1,075.6 s of records; the
// first record had counted one of 5 ms already, so the records' own time
// holds 2,891 young and 4 full of 31,006 ms: 2.9 % of the time and 2.7
// young collections a second, no finding by default; asked for a finding
// from 2 young collections a second, one that says so.
func TestGCFromRecords(t *testing.T) {
	p, err := format.Load(corpus.Path(t, "jvm-profiler", "phil_stopwatch", "ProfileStraggler", "CpuAndMemory.json.gz"), format.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gcs := jvmGCs([]*profile.Profile{p})
	if len(gcs) != 1 {
		t.Fatalf("JVMs %+v", gcs)
	}
	g := gcs[0]
	if g.Young != 2891 || g.Full != 4 || g.GCMs != 31_006 || g.WallMs != 1_075_556 {
		t.Errorf("GC %+v", g)
	}
	in := profilesOnly(p)
	if fs := find(Analyze(in, DefaultThresholds), KindGC); len(fs) != 0 {
		t.Errorf("default thresholds: %+v", fs)
	}
	th := DefaultThresholds
	th.GCRate = 2
	fs := find(Analyze(in, th), KindGC)
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "2891 young collections, 2.7 a second, and 4 full collections") ||
		!strings.Contains(fs[0].Suggestion, "allocation churn") {
		t.Errorf("gc-rate 2: %+v", fs)
	}
}
