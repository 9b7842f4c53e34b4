package pstats

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/sparktest"
)

// TestPstatsFromPySpark runs a short PySpark job on each installed Spark
// line (local[2]) with Spark's Python profilers on, and compares every
// pstats file it dumps with Python's own reading of it, function by
// function: sc.dump_profiles' rdd_<id>.pstats and, on Spark 4,
// spark.profile.dump's udf_<id>_perf.pstats. The job's functions must be
// in them.
func TestPstatsFromPySpark(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Spark")
	}
	job, err := filepath.Abs(filepath.Join("testdata", "spark_job.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sparktest.Lines(t) {
		t.Run(s.Version, func(t *testing.T) {
			out := t.TempDir()
			tmp := filepath.Join(out, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(s.Python, job, out)
			cmd.Env = append(os.Environ(), "SPARK_HOME="+s.Home, "PYSPARK_PYTHON="+s.Python, "TMPDIR="+tmp,
				"PYSPARK_SUBMIT_ARGS=--conf spark.driver.extraJavaOptions=-Djava.io.tmpdir="+tmp+" pyspark-shell")
			if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "spark_job: done") {
				t.Fatalf("PySpark %s job: %v\n%s", s.Version, err, b)
			}
			files, _ := filepath.Glob(filepath.Join(out, "*", "*.pstats"))
			var names []string
			for _, f := range files {
				names = append(names, filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f))
			}
			t.Logf("PySpark %s dumped %s", s.Version, strings.Join(names, ", "))
			wantFiles := 2 // the RDD's, the UDF's
			if s.Major() >= "4" {
				wantFiles = 3 // and the UDF's from spark.profile.dump
				if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "udf/udf_") && strings.HasSuffix(n, "_perf.pstats") }) {
					t.Errorf("no udf/udf_<id>_perf.pstats from spark.profile.dump")
				}
			}
			if len(files) < wantFiles {
				t.Fatalf("%d pstats files, want %d or more", len(files), wantFiles)
			}
			python := pythonStats(t, s.Python, files...)
			matched, total, found := 0, 0, map[string]bool{}
			for _, f := range files {
				total += len(python[f])
				matched += compareWithPython(t, f, python[f])
				data, _ := os.ReadFile(f)
				stats, _ := Read(data, f)
				for _, st := range stats {
					found[st.Name] = true
				}
			}
			t.Logf("%d of %d functions in %d files matched Python's pstats reading", matched, total, len(files))
			if matched != total {
				t.Errorf("%d of %d functions matched Python's", matched, total)
			}
			for _, fn := range []string{"parse_record", "slow_square"} {
				if !found[fn] {
					t.Errorf("no function %s in the dumped profiles", fn)
				}
			}
		})
	}
}
