package ingest

import "testing"

// TestAppFromName checks the app a file is imported into when nothing else
// names it: its name, or for PySpark's per-RDD and per-UDF dumps the
// directory holding them all.
func TestAppFromName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"/data/logs/executor-3.log.gz", "executor-3"},
		{"recording.jfr", "recording"},
		{"/home/me/profiles/nightly-etl/rdd_12.pstats", "nightly-etl"},
		{`C:\dumps\etl\udf_3_perf.pstats`, "etl"},
		{"udf_3.pstats", "udf_3"},
		{"/data/other.pstats", "other"},
	} {
		if got := appFromName(tc.name); got != tc.want {
			t.Errorf("appFromName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
