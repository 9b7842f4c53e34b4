package pstats_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/format/pstats"
	"github.com/sparkprof/sparkprof/internal/sparktest"
	"github.com/sparkprof/sparkprof/profile"
)

// TestPstatsFromPySpark runs a short PySpark job on each installed Spark
// line (local[2]) with Spark's Python profilers on, and compares every
// pstats file it dumps with Python's own reading of it, function by
// function: sc.dump_profiles' rdd_<id>.pstats and, on Spark 4,
// spark.profile.dump's udf_<id>_perf.pstats. The job's functions must be
// in them, and format must read the dump directories as the commands do:
// each file's samples labelled with its RDD or UDF.
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
			python := pstats.PythonStats(t, s.Python, files...)
			matched, total, found := 0, 0, map[string]bool{}
			for _, f := range files {
				total += len(python[f])
				matched += pstats.CompareWithPython(t, f, python[f])
				data, _ := os.ReadFile(f)
				stats, _ := pstats.Read(data, f)
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
			loadDumps(t, filepath.Join(out, "sc"))
			if s.Major() >= "4" {
				loadDumps(t, filepath.Join(out, "udf"))
			}
		})
	}
}

// loadDumps reads a dump directory as the commands do (format.Expand,
// format.Load): every file a wall-time profile labelled with its RDD or
// UDF, the UDF's slow_square among its functions.
func loadDumps(t *testing.T, dir string) {
	t.Helper()
	paths, err := format.Expand([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		p, err := format.Load(path, format.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rdd, isRDD := p.Labels.Get(profile.LabelRDDID)
		udf, isUDF := p.Labels.Get(profile.LabelUDFID)
		if !isRDD && !isUDF {
			t.Errorf("%s: labels %s name no RDD or UDF", path, p.Labels)
		}
		wall, ok := p.TypeIndex(profile.TypeWall)
		if !ok || p.Total(wall) <= 0 {
			t.Errorf("%s: no wall time", path)
		}
		if isUDF {
			slow := false
			for _, f := range p.Frames {
				slow = slow || strings.HasSuffix(f.Name, "spark_job.py:slow_square")
			}
			if !slow {
				t.Errorf("%s (UDF %s): no frame spark_job.py:slow_square", path, udf)
			}
		}
		t.Logf("%s: rdd %q udf %q, %d samples", filepath.Base(path), rdd, udf, len(p.Samples))
	}
}
