// Package report writes the offline HTML report of an analysed Spark
// application: one self-contained page to keep, mail or open from disk.
package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"

	"github.com/sparkprof/sparkprof/analysis"
)

//go:embed report.html
var reportHTML string

var reportTmpl = template.Must(template.New("report").Parse(reportHTML))

// maxTimelineTasks bounds the tasks a report draws, so that a report of a
// million-task application stays a few MB; the longest tasks are kept.
const maxTimelineTasks = 50_000

// timelineTask is a task as the timeline draws it: id, stage, executor
// index, launch and finish (ms from the app start), status code.
type timelineTask [6]int64

// WriteHTML writes r as one self-contained HTML page (no network access
// needed): summary, findings, an interactive timeline of jobs, stages and
// per-executor task lanes with metric overlays, and stage and executor
// tables.
func WriteHTML(w io.Writer, r *analysis.Report) error {
	execIndex := map[string]int{}
	var lanes []string
	for _, e := range r.Executors {
		execIndex[e.ID] = len(lanes)
		lanes = append(lanes, e.ID)
	}
	origin := r.App.StartMs
	for _, t := range r.Tasks {
		if origin == 0 || (t.LaunchMs > 0 && t.LaunchMs < origin) {
			origin = t.LaunchMs
		}
	}
	tasks := r.Tasks
	if len(tasks) > maxTimelineTasks {
		tasks = longestTasks(tasks, maxTimelineTasks)
	}
	var tl []timelineTask
	for _, t := range tasks {
		i, ok := execIndex[t.ExecutorID]
		if !ok {
			i = len(lanes)
			execIndex[t.ExecutorID] = i
			lanes = append(lanes, t.ExecutorID)
		}
		status := int64(0)
		switch t.Status {
		case "FAILED":
			status = 1
		case "KILLED":
			status = 2
		case "RUNNING":
			status = 3
		}
		finish := t.FinishMs
		if finish == 0 {
			finish = max(r.App.EndMs, t.LaunchMs)
		}
		tl = append(tl, timelineTask{t.ID, int64(t.StageID), int64(i), t.LaunchMs - origin, finish - origin, status})
	}
	// Lists are never null: the page's script walks each of them (an event
	// log alone has no metric series, and a report of one had no timeline).
	data := map[string]any{
		"app": r.App, "origin": origin, "lanes": nonNil(lanes), "tasks": nonNil(tl), "jobs": nonNil(r.Jobs), "stages": nonNil(r.Stages),
		"executors": nonNil(r.Executors), "findings": nonNil(r.Findings), "metrics": nonNil(r.Metrics), "sql": nonNil(r.SQL),
		"truncatedTasks": len(r.Tasks) - len(tasks),
	}
	js, err := json.Marshal(data) // escapes <, > and & so it is safe inside a script element
	if err != nil {
		return fmt.Errorf("encode report data: %w", err)
	}
	title := r.App.Name
	if title == "" {
		title = r.App.ID
	}
	return reportTmpl.Execute(w, map[string]any{"Title": title, "Data": template.JS(js)})
}

// nonNil returns xs, or an empty list for nil, so that it encodes as [].
func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
