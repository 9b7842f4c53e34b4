package main

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// pstatsDir copies the pstats golden files, written by real cProfile and
// profile runs, into a directory laid out as PySpark dumps its profiles:
// sc.dump_profiles' rdd_<id>.pstats, spark.profile.dump's
// udf_<id>_perf.pstats.
func pstatsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etl-dump")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{"cprofile.pstats": "rdd_3.pstats", "profile.pstats": "udf_2_perf.pstats"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "format", "pstats", "testdata", src))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestPstatsDirInCommands checks that the commands that read profiles read
// a directory of PySpark's pstats dumps, each labelled with its RDD or
// UDF.
func TestPstatsDirInCommands(t *testing.T) {
	dir := pstatsDir(t)
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"top", []string{"top", dir}, []string{"wall:nanoseconds", "example.py:leaf", "<built-in method builtins.sorted>", "sorted"}, nil},
		{"top of one RDD", []string{"top", "--label", "spark_rdd_id=3", dir}, []string{"<built-in method builtins.sorted>"}, []string{"profile:main()"}},
		{"top of one UDF", []string{"top", "--label", "spark_udf_id=2", dir}, []string{"profile:main()"}, []string{"<built-in method builtins.sorted>"}},
		{"convert", []string{"convert", "--to", "folded", dir},
			[]string{"<built-in method builtins.exec>;<string>:<module>;example.py:main;example.py:right;example.py:leaf "}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := sparkprof(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPstatsDirImport imports a directory of PySpark's pstats dumps into
// sparkprof serve: one app, named by the directory, whose profiles keep
// their RDD and UDF labels and are queryable by them.
func TestPstatsDirImport(t *testing.T) {
	dir := pstatsDir(t)
	bin := buildBinary(t)
	cmd, base := startServe(t, bin, filepath.Join(t.TempDir(), "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	if code, _, errs := sparkprof(t, "import", "--server", base, dir); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	waitFor(t, "the imported profiles to be queryable", func() bool {
		return len(serverLabelValues(t, base, "spark_udf_id", "{}")) > 0
	})
	if apps := serverLabelValues(t, base, "service_name", "{}"); !slices.Equal(apps, []string{"etl-dump"}) {
		t.Errorf("apps %v, want [etl-dump]", apps)
	}
	for _, tc := range []struct {
		label, want, function string
	}{
		{"spark_rdd_id", "3", "example.py:leaf"},
		{"spark_udf_id", "2", "profile:main()"},
	} {
		if vs := serverLabelValues(t, base, tc.label, `{service_name="etl-dump"}`); !slices.Equal(vs, []string{tc.want}) {
			t.Errorf("%s values %v, want [%s]", tc.label, vs, tc.want)
		}
		var top struct {
			Functions []struct{ Name string }
		}
		mustGetJSON(t, base+"/api/v1/top?"+url.Values{"query": {`{service_name="etl-dump",` + tc.label + `="` + tc.want + `"}`}, "type": {"wall"}}.Encode(), &top)
		if !slices.ContainsFunc(top.Functions, func(f struct{ Name string }) bool { return f.Name == tc.function }) {
			t.Errorf("%s=%s: no %s among %v", tc.label, tc.want, tc.function, top.Functions)
		}
	}
}
