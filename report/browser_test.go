package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/browsertest"
)

// TestBrowserReport opens the HTML report of the straggler riddle (console
// log and Uber CPU records) in headless Chromium: no console errors, the
// findings, the web UI's timeline drawing the tasks with the straggler
// marked and the metric rows, a tooltip when hovering the straggler, and
// its stage selected in the stage table on a click.
func TestBrowserReport(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	openReport(t, ctx, analyzed(t, "applogs/phil_stopwatch/ProfileStraggler/JobStraggler.log.gz", "jvm-profiler/phil_stopwatch/ProfileStraggler/CpuAndMemory.json.gz"), maxTimelineTasks)
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll('[data-testid="findings"] li').length`); n < 1 {
		t.Errorf("%d findings listed", n)
	}
	// The web UI's timeline component, with its legend.
	if !browsertest.Eval[bool](t, ctx, `!!document.querySelector('.timeline [data-testid="timeline-legend"] ~ canvas[data-testid="timeline"]')`) {
		t.Error("the report's timeline is not the web UI's component")
	}
	d := drawn(t, ctx)
	if d["tasks"] != 3 || d["stragglers"] != 1 {
		t.Errorf("timeline drew %d tasks with %d stragglers marked, want 3 with 1", d["tasks"], d["stragglers"])
	}
	// The CPU, heap and GC series are charts under the timeline, along its
	// axis: their plots start where its time axis does.
	lefts := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="metric-chart"]')].map(e => e.dataset.plotLeft)`)
	if len(lefts) < 2 {
		t.Errorf("%d metric charts, want the CPU and heap series", len(lefts))
	}
	for _, l := range lefts {
		if l != "130" {
			t.Errorf("a metric chart's plot starts at %s px, the timeline's axis at 130", l)
		}
	}
	// Hover the middle of the straggler, found by its colour (the pointer's
	// position is in whole pixels): the tooltip names it.
	at := browsertest.Eval[[]float64](t, ctx, `(() => {
		const c = document.querySelector('canvas[data-testid="timeline"]');
		const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		const dpr = c.width / c.getBoundingClientRect().width;
		const found = [];
		for (let i = 0; i < px.length; i += 4) {
			if (px[i] === 0x8b && px[i + 1] === 0 && px[i + 2] === 0) found.push(i / 4);
		}
		if (!found.length) return [];
		const p = found[Math.floor(found.length / 2)];
		const x = (p % c.width) + 0.5, y = Math.floor(p / c.width) + 0.5;
		window.scrollBy(0, c.getBoundingClientRect().top + y / dpr - 300);
		const r = c.getBoundingClientRect();
		return [r.left + x / dpr, r.top + y / dpr];
	})()`)
	if len(at) != 2 {
		t.Fatal("no straggler drawn on the timeline")
	}
	if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at[0], at[1])); err != nil {
		t.Fatal(err)
	}
	tip, err := chromedp.Run(ctx, chromedp.Text(`[data-testid="timeline-tip"]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tip, "task 0 (stage ") || !strings.Contains(tip, "— straggler") {
		t.Fatalf("tooltip %q, want task 0, a straggler", tip)
	}
	// Click it: its stage is selected in the stage table.
	stage := strings.TrimSuffix(strings.Fields(tip)[3], ",")
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(at[0], at[1])); err != nil {
		t.Fatal(err)
	}
	selected, err := chromedp.Run(ctx, chromedp.Text(`[data-testid="stages"] tr.selected td`))
	if err != nil {
		t.Fatal(err)
	}
	if selected != stage {
		t.Errorf("stage %q selected after a click on the straggler of stage %q", selected, stage)
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}

// TestBrowserEventLogReport opens the HTML report of an event log alone (no
// profiler records, so no metric series) in headless Chromium: no console
// errors, the timeline draws every task, with its jobs and stages, a lane
// for every executor (the idle ones too) with the removals of dynamic
// allocation marked, the stretches without tasks compressed, and dragging
// across it zooms in.
func TestBrowserEventLogReport(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	r := analyzed(t, "eventlogs/nvidia/eventlog_4nodes_8cores_dynamic_alloc.zstd")
	openReport(t, ctx, r, maxTimelineTasks)
	d := drawn(t, ctx)
	if d["tasks"] != r.App.TaskCount || d["jobs"] != r.App.JobCount {
		t.Errorf("timeline drew %d tasks and %d jobs, want %d and %d", d["tasks"], d["jobs"], r.App.TaskCount, r.App.JobCount)
	}
	// 15 executors added, 14 removed ("Executor killed by driver."), and
	// the driver; six of them ran no task.
	if d["executors"] != 16 || d["removed"] != 14 || d["idleExecutors"] != 6 || d["gaps"] < 1 {
		t.Errorf("executor lanes %d (%d idle), removals marked %d, compressed stretches %d; want 16 (6 idle), 14, at least 1",
			d["executors"], d["idleExecutors"], d["removed"], d["gaps"])
	}
	box := browsertest.Eval[[]float64](t, ctx, `(() => { const c = document.querySelector('canvas[data-testid="timeline"]');
		c.scrollIntoView(); const b = c.getBoundingClientRect(); return [b.left, b.top, b.width]; })()`)
	x0, x1, y := box[0]+box[2]*0.5, box[0]+box[2]*0.7, box[1]+60
	err := chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, x0, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x1, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, x1, y, chromedp.ButtonLeft))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Until(t, ctx, `!!document.querySelector('[data-testid="zoom-out"]')`)
	if z := drawn(t, ctx); z["tasks"] >= d["tasks"] || z["tasks"] == 0 {
		t.Errorf("zoomed into a fifth of the timeline, it draws %d of %d tasks", z["tasks"], d["tasks"])
	}
	// A bar per stage attempt that ran: the log's 25 skipped stages have none.
	ran := 0
	for _, st := range r.Stages {
		if st.Status != "SKIPPED" {
			ran++
		}
	}
	if d["stages"] != ran || ran == len(r.Stages) {
		t.Errorf("%d stages drawn, want %d (of %d stages)", d["stages"], ran, len(r.Stages))
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}

// TestBrowserReportAlso: the report shows a stage's other findings under
// its first (spark_event_log_example's stage 0: a straggler, and GC; its
// stage 1: GC, and a straggler).
func TestBrowserReportAlso(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	openReport(t, ctx, analyzed(t, "eventlogs/sparklint/spark_event_log_example"), maxTimelineTasks)
	got := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll('[data-testid="finding-also"]')].map(e => e.textContent)`)
	if len(got) != 2 || !strings.HasPrefix(got[0], "also: gc: stage 0: executors spent 18% of their time in GC while its tasks ran (31.4 s of 2.9 min") ||
		!strings.HasPrefix(got[1], "also: straggler: stage 1: task 124") {
		t.Errorf("also lines %q, want the GC of stage 0 and the straggler of stage 1", got)
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}

// TestBrowserReportTruncated: a report that keeps fewer tasks than the app
// ran (8,580 in the failures log, 1,000 kept) says so, and the timeline
// draws those it kept.
func TestBrowserReportTruncated(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	r := analyzed(t, "eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd")
	openReport(t, ctx, r, 1000)
	note := browsertest.Eval[string](t, ctx, `document.querySelector('[data-testid="tasks-truncated"]').textContent`)
	if want := "draws the 1,000 longest tasks; the 7,580 others are left out"; len(r.Tasks) != 8580 || !strings.Contains(note, want) {
		t.Errorf("note %q for %d tasks, want %q", note, len(r.Tasks), want)
	}
	if n := drawn(t, ctx)["tasks"]; n != 1000 {
		t.Errorf("timeline drew %d tasks, want 1000", n)
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}

// openReport writes the HTML report of r, with at most maxTasks tasks, to
// a file and opens it in the browser of ctx, once its timeline is there.
// The page must load nothing but itself.
func openReport(t *testing.T, ctx context.Context, r *analysis.Report, maxTasks int) {
	t.Helper()
	var b bytes.Buffer
	if err := writeHTML(&b, r, maxTasks); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var loaded []string
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && !strings.HasPrefix(e.Request.URL, "data:") {
			mu.Lock()
			loaded = append(loaded, e.Request.URL)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitReady(`canvas[data-testid="timeline"][data-tasks]`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(loaded) != 1 || loaded[0] != "file://"+path {
		t.Errorf("the report loaded %q, want only itself", loaded)
	}
}

// drawn returns the counts of what the report's timeline drew, as its
// canvas states them (tasks, stragglers, jobs, stages, executors, …).
func drawn(t *testing.T, ctx context.Context) map[string]int {
	t.Helper()
	attrs := browsertest.Eval[map[string]string](t, ctx, `({...document.querySelector('canvas[data-testid="timeline"]').dataset})`)
	out := map[string]int{}
	delete(attrs, "testid")
	delete(attrs, "view")
	delete(attrs, "laneHeights") // a list
	for k, v := range attrs {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("timeline's data-%s = %q", k, v)
		}
		out[k] = n
	}
	return out
}

// TestBrowserReportRecommendations opens the report of the straggler
// riddle with its stacks: the recommendation of its List appends is shown
// with its frame and the command that draws its flame graph.
func TestBrowserReportRecommendations(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	openReport(t, ctx, analyzed(t, "applogs/phil_stopwatch/ProfileStraggler/JobStraggler.log.gz", "jvm-profiler/phil_stopwatch/ProfileStraggler/Stacktrace.json.gz"), maxTimelineTasks)
	text, err := chromedp.Run(ctx, chromedp.Text(`[data-testid="recommendations"]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"list-append", "scala.collection.SeqLike$class.$colon$plus", "sparkprof flame --type samples --focus"} {
		if !strings.Contains(text, want) {
			t.Errorf("recommendations %q lack %q", text, want)
		}
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}
