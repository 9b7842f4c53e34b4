package analysis

import (
	"cmp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/applog"
	"github.com/sparkprof/sparkprof/spark"
)

// FromLogs builds the app model from container logs alone, as Phil's
// Stopwatch does: jobs, stages and tasks from the driver's DAGScheduler and
// TaskSetManager lines. Task metrics other than durations are unknown, so
// only the findings that need times apply.
func FromLogs(logs []*applog.Log) *spark.App {
	app := &spark.App{Summary: spark.Summary{FailureReasons: map[string]int{}}}
	execs := map[string]*spark.Executor{}
	stages := map[int]*spark.Stage{}
	var start, end time.Time
	for _, l := range logs {
		if !l.Start.IsZero() && (start.IsZero() || l.Start.Before(start)) {
			start = l.Start
		}
		if l.End.After(end) {
			end = l.End
		}
		app.ID = cmp.Or(app.ID, l.AppID)
		app.Name = cmp.Or(app.Name, l.AppName)
		app.SparkVersion = cmp.Or(app.SparkVersion, l.SparkVersion)
		for _, j := range l.Jobs {
			job := &spark.Job{ID: j.ID, SQLID: -1, Description: j.Name, SubmitMs: ms(j.Start), EndMs: ms(j.End)}
			if !j.End.IsZero() {
				job.Result = "JobSucceeded"
				job.DurationMs = job.EndMs - job.SubmitMs
			}
			app.Jobs = append(app.Jobs, job)
			app.JobCount++
		}
		for _, s := range l.Stages {
			st := &spark.Stage{ID: s.ID, Name: s.Name, JobID: -1, SQLID: -1, SubmitMs: ms(s.Submitted), Status: "ACTIVE"}
			stages[s.ID] = st
			app.Stages = append(app.Stages, st)
		}
		for _, t := range l.Tasks {
			task := &spark.Task{
				ID: int64(t.TID), Index: t.Index, Partition: t.Index, StageID: t.Stage, StageAttempt: t.StageAttempt,
				ExecutorID: t.Executor, Host: t.Host, LaunchMs: ms(t.Launch), FinishMs: ms(t.Finish), Status: t.Status,
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
			st := stages[t.Stage]
			if st == nil {
				st = &spark.Stage{ID: t.Stage, JobID: -1, SQLID: -1, Status: "ACTIVE"}
				stages[t.Stage] = st
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
			e := execs[t.Executor]
			if e == nil {
				e = &spark.Executor{ID: t.Executor, Host: t.Host}
				execs[t.Executor] = e
				app.Executors = append(app.Executors, e)
			}
			e.TotalTasks++
			if task.Status == "SUCCESS" {
				e.CompletedTasks++
			}
			e.TotalDurationMs += task.DurationMs()
		}
	}
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
	app.ExecutorCount = spark.CountExecutors(app.Executors)
	app.StartMs, app.EndMs = ms(start), ms(end)
	if app.EndMs > app.StartMs && app.StartMs > 0 {
		app.DurationMs = app.EndMs - app.StartMs
	}
	return app
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

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
