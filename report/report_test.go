package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/analysis"
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
	in, err := analysis.ReadInputs(abs, analysis.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reports := in.Reports(analysis.DefaultThresholds)
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
