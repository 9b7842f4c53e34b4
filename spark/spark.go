// Package spark builds a summary of a Spark application from its event log.
//
// Build streams the log line by line: it keeps counters and per-executor
// records, never the decoded JSON.
package spark

import (
	"errors"
	"fmt"
	"io"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/valyala/fastjson"
)

// App is the summary of one application attempt.
type App struct {
	ID              string      `json:"id"`
	Name            string      `json:"name"`
	SparkVersion    string      `json:"sparkVersion"`
	StartMs         int64       `json:"startMs"`
	EndMs           int64       `json:"endMs"`
	DurationMs      int64       `json:"durationMs"`
	TaskCount       int         `json:"taskCount"`       // task attempts that ended
	FailedTaskCount int         `json:"failedTaskCount"` // ended with a reason other than Success
	JobCount        int         `json:"jobCount"`
	SQLCount        int         `json:"sqlCount"`
	Executors       []*Executor `json:"executors"`
	// FailureReasons counts failed task ends by their "Reason" class.
	FailureReasons map[string]int `json:"failureReasons"`
}

// Executor is an executor added or removed during the application.
type Executor struct {
	ID            string `json:"id"`
	Host          string `json:"host"`
	Cores         int    `json:"cores"`
	AddedMs       int64  `json:"addedMs"`
	RemovedMs     int64  `json:"removedMs"`
	RemovalReason string `json:"removalReason"`
}

// Report lists what was missing or wrong in the log.
type Report struct {
	// Malformed holds the position of every line that is not a JSON event.
	Malformed []eventlog.Pos
	// Unknown counts events of types Build does not model, by name.
	Unknown map[string]int
	// Truncations lists the parts whose data ended early.
	Truncations []eventlog.Truncation
	// MissingEnd is true when no SparkListenerApplicationEnd was seen.
	MissingEnd bool
}

// Build reads every line of r and returns the application summary. It fails
// only when the log cannot be read; bad lines go to the Report.
func Build(r *eventlog.Reader) (*App, *Report, error) {
	app := &App{FailureReasons: map[string]int{}}
	rep := &Report{Unknown: map[string]int{}, MissingEnd: true}
	execs := map[string]*Executor{}
	var p fastjson.Parser
	for {
		line, pos, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("spark: reading event log: %w", err)
		}
		v, err := p.ParseBytes(line)
		if err != nil {
			rep.Malformed = append(rep.Malformed, pos)
			continue
		}
		ev := string(v.GetStringBytes("Event"))
		switch ev {
		case "SparkListenerLogStart":
			app.SparkVersion = string(v.GetStringBytes("Spark Version"))
		case "SparkListenerApplicationStart":
			app.ID = string(v.GetStringBytes("App ID"))
			app.Name = string(v.GetStringBytes("App Name"))
			app.StartMs = v.GetInt64("Timestamp")
		case "SparkListenerApplicationEnd":
			app.EndMs = v.GetInt64("Timestamp")
			rep.MissingEnd = false
		case "SparkListenerTaskEnd":
			app.TaskCount++
			reason := string(v.GetStringBytes("Task End Reason", "Reason"))
			if reason != "Success" {
				app.FailedTaskCount++
				app.FailureReasons[reason]++
			}
		case "SparkListenerJobStart":
			app.JobCount++
		case "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart":
			app.SQLCount++
		case "SparkListenerExecutorAdded":
			id := string(v.GetStringBytes("Executor ID"))
			e := execs[id]
			if e == nil {
				e = &Executor{ID: id}
				execs[id] = e
				app.Executors = append(app.Executors, e)
			}
			e.AddedMs = v.GetInt64("Timestamp")
			e.Host = string(v.GetStringBytes("Executor Info", "Host"))
			e.Cores = v.GetInt("Executor Info", "Total Cores")
		case "SparkListenerExecutorRemoved":
			id := string(v.GetStringBytes("Executor ID"))
			e := execs[id]
			if e == nil {
				e = &Executor{ID: id}
				execs[id] = e
				app.Executors = append(app.Executors, e)
			}
			e.RemovedMs = v.GetInt64("Timestamp")
			e.RemovalReason = string(v.GetStringBytes("Removed Reason"))
		default:
			rep.Unknown[ev]++
		}
	}
	rep.Truncations = r.Truncations
	if app.EndMs > 0 && app.StartMs > 0 {
		app.DurationMs = app.EndMs - app.StartMs
	}
	return app, rep, nil
}
