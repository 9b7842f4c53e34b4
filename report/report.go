// Package report writes the offline HTML report of an analysed Spark
// application: one self-contained page to keep, mail or open from disk,
// drawn by the web UI's own components (package ui's report bundle).
package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/ui"
)

//go:embed report.html
var pageHTML string

var page = template.Must(template.New("report").Parse(pageHTML))

// maxTimelineTasks bounds the tasks a report draws, so that a report of a
// million-task application stays a few MB; the longest tasks are kept.
const maxTimelineTasks = 50_000

// TimelineTask is a task as the timeline draws it: id, stage, partition,
// executor (an index into PageData.Lanes), launch and finish (ms from
// PageData.Origin; finish -1 while the task runs), state (an index into
// taskStates), and the ms of its phases as the History Server's event
// timeline colours them: scheduler delay, deserialisation, shuffle read
// (blocked), shuffle write, result serialisation and getting the result;
// the rest of its run time is computing. A scheduler delay of -1 says
// that the task's phases are unknown (no task metrics: a container log's).
type TimelineTask [13]int64

// taskStates are the task states a TimelineTask numbers, in the order of
// statuses in ui/src/tasks.js; any other state is the first.
var taskStates = []string{"SUCCESS", "FAILED", "KILLED", "RUNNING"}

// PageData is what the report's script reads, and the server's answer of
// an app's page for its timeline: the analysis report as its JSON has
// it, with the tasks in the compact form of TimelineTask. WriteHTML leaves
// the report's sources and environment out (paths, hosts and settings of
// the machines that ran it stay out of a page made to be passed on).
type PageData struct {
	*analysis.Report
	Sources        []analysis.Source  `json:"sources,omitempty"`
	Environment    *spark.Environment `json:"environment,omitempty"`
	Origin         int64              `json:"origin"`
	Lanes          []string           `json:"lanes"`
	Tasks          []TimelineTask     `json:"tasks"`
	TruncatedTasks int                `json:"truncatedTasks"`
}

// WriteHTML writes r as one self-contained HTML page (no network access
// needed): summary, findings, an interactive timeline of jobs, stages and
// per-executor task lanes with metric overlays, and stage, executor and
// SQL tables.
func WriteHTML(w io.Writer, r *analysis.Report) error {
	return writeHTML(w, r, maxTimelineTasks)
}

// writeHTML writes the report of r with at most maxTasks tasks.
func writeHTML(w io.Writer, r *analysis.Report, maxTasks int) error {
	d := NewPageData(r, maxTasks)
	d.Sources, d.Environment = nil, nil
	js, err := json.Marshal(d) // escapes <, > and & so it is safe inside a script element
	if err != nil {
		return fmt.Errorf("encode report data: %w", err)
	}
	title := r.App.Name
	if title == "" {
		title = r.App.ID
	}
	err = page.Execute(w, map[string]any{
		"Title": title, "Data": template.JS(js), "Script": template.JS(ui.ReportScript()), "Style": template.CSS(ui.ReportStyle()),
	})
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// NewPageData encodes r for a timeline: at most maxTasks tasks, the
// longest, with times from the app's start or its first task launch, and
// its sources and environment.
func NewPageData(r *analysis.Report, maxTasks int) *PageData {
	d := &PageData{Report: r, Sources: r.Sources, Environment: r.Environment, Origin: r.App.StartMs, Lanes: []string{}, Tasks: []TimelineTask{}}
	for _, t := range r.Tasks {
		if d.Origin == 0 || (t.LaunchMs > 0 && t.LaunchMs < d.Origin) {
			d.Origin = t.LaunchMs
		}
	}
	tasks := r.Tasks
	if len(tasks) > maxTasks {
		tasks = longestTasks(tasks, maxTasks)
	}
	d.TruncatedTasks = len(r.Tasks) - len(tasks)
	d.Tasks = make([]TimelineTask, 0, len(tasks))
	lane := map[string]int64{}
	for _, t := range tasks {
		i, ok := lane[t.ExecutorID]
		if !ok {
			i = int64(len(d.Lanes))
			lane[t.ExecutorID] = i
			d.Lanes = append(d.Lanes, t.ExecutorID)
		}
		state := int64(0)
		for k, s := range taskStates {
			if t.Status == s {
				state = int64(k)
			}
		}
		finish := int64(-1)
		if t.FinishMs != 0 {
			finish = t.FinishMs - d.Origin
		}
		m := &t.Metrics
		delay := t.SchedulerDelayMs()
		if t.NoMetrics {
			delay = -1 // phases unknown
		}
		d.Tasks = append(d.Tasks, TimelineTask{t.ID, int64(t.StageID), int64(t.Partition), i, t.LaunchMs - d.Origin, finish, state,
			delay, m.DeserializeMs, m.ShuffleFetchWaitMs, m.ShuffleWriteTimeNs / 1e6, m.ResultSerializationMs, t.GettingResultMs()})
	}
	return d
}
