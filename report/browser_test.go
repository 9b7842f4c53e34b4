package report

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/internal/browsertest"
)

// TestBrowserReport opens the HTML report of the straggler riddle (console
// log and Uber CPU records) in headless Chromium: no console errors, the
// timeline draws the tasks with the straggler marked and the metric rows,
// and hovering a task shows its tooltip.
func TestBrowserReport(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	openReport(t, ctx, analyzed(t, "applogs/phil_stopwatch/ProfileStraggler/JobStraggler.log.gz", "jvm-profiler/phil_stopwatch/ProfileStraggler/CpuAndMemory.json.gz"))
	if n := browsertest.Eval[int](t, ctx, `document.querySelectorAll("#findings tbody tr").length`); n < 1 {
		t.Errorf("findings table has %d rows", n)
	}
	if n := browsertest.Eval[int](t, ctx, `hits.filter(h => h[4].startsWith("task ")).length`); n != 3 {
		t.Errorf("timeline drew %d tasks, want 3", n)
	}
	if n := browsertest.Eval[int](t, ctx, `hits.filter(h => h[4].includes("straggler")).length`); n != 1 {
		t.Errorf("timeline marked %d stragglers, want 1", n)
	}
	if n := browsertest.Eval[int](t, ctx, `metricRow.size`); n < 2 {
		t.Errorf("%d metric rows, want the CPU and heap series", n)
	}
	// Hover the straggler: the tooltip names it.
	tip := browsertest.Eval[string](t, ctx, `(() => {
		const h = hits.find(h => h[4].includes("straggler"));
		const r = canvas.getBoundingClientRect();
		canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + h[0] + 2, clientY: r.top + h[1] + 1}));
		return tip.textContent;
	})()`)
	if tip == "" || !bytes.Contains([]byte(tip), []byte("task 0")) {
		t.Errorf("tooltip %q, want task 0", tip)
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}

// TestBrowserEventLogReport opens the HTML report of an event log alone (no
// profiler records, so no metric series) in headless Chromium: no console
// errors, and the timeline draws every task, with its jobs and stages.
func TestBrowserEventLogReport(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	r := analyzed(t, "eventlogs/nvidia/eventlog_4nodes_8cores_dynamic_alloc.zstd")
	openReport(t, ctx, r)
	for _, c := range []struct {
		what, prefix string
		want         int
	}{{"tasks", "task ", r.App.TaskCount}, {"jobs", "job ", r.App.JobCount}} {
		if n := browsertest.Eval[int](t, ctx, `hits.filter(h => h[4].startsWith("`+c.prefix+`")).length`); n != c.want {
			t.Errorf("timeline drew %d %s, want %d", n, c.what, c.want)
		}
	}
	// A row per stage that ran: the log's 25 skipped stages have none.
	ran := map[int]bool{}
	for _, st := range r.Stages {
		if st.Status != "SKIPPED" {
			ran[st.ID] = true
		}
	}
	if n := browsertest.Eval[int](t, ctx, `rows.filter(r => r.kind === "stage").length`); n != len(ran) || n == len(r.Stages) {
		t.Errorf("%d stage rows, want %d (of %d stages)", n, len(ran), len(r.Stages))
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}

// openReport writes the HTML report of r to a file and opens it in the
// browser of ctx, once its timeline is there.
func openReport(t *testing.T, ctx context.Context, r *analysis.Report) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitReady("#timeline")); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserReportAlso: the report shows a stage's other findings under
// its first (spark_event_log_example's stage 0: a straggler, and GC; its
// stage 1: GC, and a straggler).
func TestBrowserReportAlso(t *testing.T) {
	ctx, problems := browsertest.Start(t)
	openReport(t, ctx, analyzed(t, "eventlogs/sparklint/spark_event_log_example"))
	got := browsertest.Eval[[]string](t, ctx, `[...document.querySelectorAll("#findings .also")].map(e => e.textContent)`)
	if len(got) != 2 || !strings.HasPrefix(got[0], "also gc: stage 0: 19% of task time in GC") ||
		!strings.HasPrefix(got[1], "also straggler: stage 1: task 124") {
		t.Errorf("also lines %q, want the GC of stage 0 and the straggler of stage 1", got)
	}
	if ps := problems(); len(ps) > 0 {
		t.Errorf("page problems: %v", ps)
	}
}
