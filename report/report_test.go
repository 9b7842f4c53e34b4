package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/internal/corpus"
)

// analyzed reads the corpus files at paths (slash-separated, under the
// corpus root) as sparkprof analyze does and returns the report of their
// one application.
func analyzed(t *testing.T, paths ...string) *analysis.Report {
	t.Helper()
	var abs []string
	for _, p := range paths {
		abs = append(abs, corpus.Path(t, filepath.FromSlash(p)))
	}
	in, err := input.Read(abs, input.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reports := in.Reports(analysis.DefaultThresholds, nil)
	if len(reports) != 1 {
		t.Fatalf("%v: %d applications, want 1", paths, len(reports))
	}
	return reports[0]
}

// TestHTMLEveryEventLog writes the report of every event log of the corpus.
func TestHTMLEveryEventLog(t *testing.T) {
	root := corpus.Path(t, "eventlogs")
	for _, dir := range []string{"apache", "nvidia", "sparklint", "sparklens", "sparkscope"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			rel := dir + "/" + e.Name()
			if e.Name() == "directory_source" {
				rel += "/event_log_1"
			}
			t.Run(rel, func(t *testing.T) {
				var b bytes.Buffer
				if err := WriteHTML(&b, analyzed(t, "eventlogs/"+rel)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestHTMLEscapes checks that the Spark 4.2 log's app name, a script tag,
// cannot run in the report.
func TestHTMLEscapes(t *testing.T) {
	r := analyzed(t, "eventlogs/apache/eventlog_v2_local-1766844910796")
	if !strings.Contains(r.App.Name, "<script>") {
		t.Fatalf("app name %q: the corpus file changed?", r.App.Name)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>alert") {
		t.Error("the app name's script tag appears unescaped in the report")
	}
}

// TestPageData: the page gets the analysis report's JSON but its sources
// and environment, and of a log's 8,580 tasks, kept to 1,000, the longest
// in their order, in the compact encoding with their phases.
func TestPageData(t *testing.T) {
	r := analyzed(t, "eventlogs/nvidia/tasks_executors_fail_compressed_eventlog.zstd")
	var out bytes.Buffer
	if err := writeHTML(&out, r, 1000); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="data">(.*?)</script>`).FindSubmatch(out.Bytes())
	if m == nil {
		t.Fatal("the page has no data")
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal(m[1], &page); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sources", "environment"} {
		if _, ok := page[k]; ok {
			t.Errorf("the page has the report's %s", k)
		}
	}
	if len(r.Sources) == 0 || r.Environment == nil {
		t.Errorf("the report has %d sources and environment %v", len(r.Sources), r.Environment != nil)
	}
	findings, err := json.Marshal(r.Findings)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page["findings"], findings) || len(r.Findings) == 0 {
		t.Errorf("the page's findings differ from the report's %d", len(r.Findings))
	}
	d := NewPageData(r, 1000)
	if d.Environment != r.Environment {
		t.Error("the page data for a server's answer has no environment")
	}
	if len(r.Tasks) != 8580 || len(d.Tasks) != 1000 || d.TruncatedTasks != 7580 {
		t.Fatalf("%d tasks kept of %d, %d truncated", len(d.Tasks), len(r.Tasks), d.TruncatedTasks)
	}
	pos := map[int64]int{}
	for i, tk := range r.Tasks {
		pos[tk.ID] = i
	}
	kept := map[int64]bool{}
	shortestKept := int64(math.MaxInt64)
	for i, c := range d.Tasks {
		kept[c[0]] = true
		tk := r.Tasks[pos[c[0]]]
		if want := [6]int64{tk.SchedulerDelayMs(), tk.Metrics.DeserializeMs, tk.Metrics.ShuffleFetchWaitMs, tk.Metrics.ShuffleWriteTimeNs / 1e6,
			tk.Metrics.ResultSerializationMs, tk.GettingResultMs()}; [6]int64(c[7:]) != want {
			t.Errorf("task %d: phases %v, want %v", tk.ID, c[7:], want)
		}
		shortestKept = min(shortestKept, r.Tasks[pos[c[0]]].DurationMs())
		if i > 0 && pos[c[0]] < pos[d.Tasks[i-1][0]] {
			t.Errorf("task %d after task %d: not in the report's order", c[0], d.Tasks[i-1][0])
		}
	}
	if len(pos) != len(r.Tasks) || len(kept) != len(d.Tasks) {
		t.Fatalf("task ids are not unique: %d of %d", len(pos), len(r.Tasks))
	}
	for _, tk := range r.Tasks {
		if !kept[tk.ID] && tk.DurationMs() > shortestKept {
			t.Errorf("task %d of %d ms left out, one of %d ms kept", tk.ID, tk.DurationMs(), shortestKept)
		}
	}
}
