package spark

import (
	"cmp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/containerlog"
)

// FromLogs builds the app model from container logs alone: jobs, stages
// and tasks from the driver's DAGScheduler and TaskSetManager lines, as
// Phil's Stopwatch reads them. Of the task metrics only durations are
// known; the others stay zero.
func FromLogs(logs []*containerlog.Log) *App {
	b := &logBuilder{
		app:    &App{Summary: Summary{FailureReasons: map[string]int{}}},
		execs:  map[string]*Executor{},
		stages: map[int]*Stage{},
	}
	var start, end time.Time
	for _, l := range logs {
		if !l.Start.IsZero() && (start.IsZero() || l.Start.Before(start)) {
			start = l.Start
		}
		if l.End.After(end) {
			end = l.End
		}
		b.log(l)
	}
	app := b.app
	for _, st := range app.Stages {
		if st.SubmitMs == 0 {
			st.SubmitMs = st.FirstLaunchMs
		}
		if st.CompleteMs > 0 && st.TaskCount > 0 {
			st.Status = "COMPLETE"
			st.NumTasks = st.TaskCount
			st.DurationMs = st.CompleteMs - st.SubmitMs
		}
	}
	sort.Slice(app.Stages, func(i, j int) bool { return app.Stages[i].ID < app.Stages[j].ID })
	sort.Slice(app.Executors, func(i, j int) bool {
		a, errA := strconv.Atoi(app.Executors[i].ID)
		b, errB := strconv.Atoi(app.Executors[j].ID)
		if errA == nil && errB == nil {
			return a < b
		}
		return app.Executors[i].ID < app.Executors[j].ID
	})
	app.ExecutorCount = CountExecutors(app.Executors)
	app.StartMs, app.EndMs = ms(start), ms(end)
	if app.EndMs > app.StartMs && app.StartMs > 0 {
		app.DurationMs = app.EndMs - app.StartMs
	}
	return app
}

// logBuilder is the app FromLogs builds, with its executors and stages by
// id.
type logBuilder struct {
	app    *App
	execs  map[string]*Executor
	stages map[int]*Stage
}

// log adds the application, jobs, stages and tasks one log names.
func (b *logBuilder) log(l *containerlog.Log) {
	app := b.app
	app.ID = cmp.Or(app.ID, l.AppID)
	app.Name = cmp.Or(app.Name, l.AppName)
	app.SparkVersion = cmp.Or(app.SparkVersion, l.SparkVersion)
	for _, j := range l.Jobs {
		job := &Job{ID: j.ID, SQLID: -1, Description: j.Name, SubmitMs: ms(j.Start), EndMs: ms(j.End)}
		if !j.End.IsZero() {
			job.Result = "JobSucceeded"
			job.DurationMs = job.EndMs - job.SubmitMs
		}
		app.Jobs = append(app.Jobs, job)
		app.JobCount++
	}
	for _, s := range l.Stages {
		st := &Stage{ID: s.ID, Name: s.Name, JobID: -1, SQLID: -1, SubmitMs: ms(s.Submitted), Status: "ACTIVE", NoMetrics: true}
		b.stages[s.ID] = st
		app.Stages = append(app.Stages, st)
	}
	for i := range l.Tasks {
		b.task(&l.Tasks[i])
	}
}

// task adds a task a log names, and counts it in its stage and executor.
func (b *logBuilder) task(t *containerlog.Task) {
	app := b.app
	task := &Task{
		ID: int64(t.TID), Index: t.Index, Partition: t.Index, StageID: t.Stage, StageAttempt: t.StageAttempt,
		ExecutorID: t.Executor, Host: t.Host, LaunchMs: ms(t.Launch), FinishMs: ms(t.Finish), Status: t.Status,
		NoMetrics: true,
	}
	if task.FinishMs == 0 && t.Duration > 0 {
		task.FinishMs = task.LaunchMs + t.Duration.Milliseconds()
	}
	if t.Failure != "" {
		task.Reason, task.Message = failureClass(t.Failure), t.Failure
		app.FailureReasons[task.Reason]++
		if task.Status == "KILLED" {
			app.KilledTaskCount++
		}
	}
	app.Tasks = append(app.Tasks, task)
	st := b.stages[t.Stage]
	if st == nil {
		st = &Stage{ID: t.Stage, JobID: -1, SQLID: -1, Status: "ACTIVE", NoMetrics: true}
		b.stages[t.Stage] = st
		app.Stages = append(app.Stages, st)
	}
	if st.FirstLaunchMs == 0 || task.LaunchMs < st.FirstLaunchMs {
		st.FirstLaunchMs = task.LaunchMs
	}
	if task.FinishMs > 0 {
		app.TaskCount++
		st.TaskCount++
		if task.FinishMs > st.CompleteMs {
			st.CompleteMs = task.FinishMs
		}
		if task.Status != "SUCCESS" {
			app.FailedTaskCount++
			st.FailedTaskCount++
		}
	}
	e := b.execs[t.Executor]
	if e == nil {
		e = &Executor{ID: t.Executor, Host: t.Host, NoMetrics: true}
		b.execs[t.Executor] = e
		app.Executors = append(app.Executors, e)
	}
	e.TotalTasks++
	if task.Status == "SUCCESS" {
		e.CompletedTasks++
	}
	e.TotalDurationMs += task.DurationMs()
}

// failureClass names a "Lost task" reason the way event logs do:
// ExceptionFailure for a Java exception, else its first word
// (ExecutorLostFailure, TaskKilled, FetchFailed, ...).
func failureClass(reason string) string {
	first, _, _ := strings.Cut(reason, " ")
	first, _, _ = strings.Cut(first, "(")
	first = strings.TrimSuffix(first, ":")
	if strings.Contains(first, ".") {
		return "ExceptionFailure"
	}
	return first
}

// ms returns t in Unix milliseconds, or 0 for the zero time.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
