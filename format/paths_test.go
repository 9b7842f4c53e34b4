package format

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/profile"
)

func TestSparkPathLabels(t *testing.T) {
	tests := []struct{ path, want string }{
		{"out/application_1603128018386_7846_1/profile-exec-12.jfr",
			`{role="executor", spark_app_attempt="1", spark_app_id="application_1603128018386_7846", spark_executor_id="12"}`},
		{"out/app-20231025121456-0004/profile-driver.jfr",
			`{role="driver", spark_app_id="app-20231025121456-0004", spark_executor_id="driver"}`},
		{"out/local-1623876083964/profile-exec-3.jfr.gz",
			`{role="executor", spark_app_id="local-1623876083964", spark_executor_id="3"}`},
		{"hdfs-copy/profile-app-20231025121456-0004-exec-7.jfr",
			`{role="executor", spark_app_id="app-20231025121456-0004", spark_executor_id="7"}`},
		{"out/app-20231025121456-0004/profile-Spark-Pi-exec-7.jfr",
			`{role="executor", spark_app_id="app-20231025121456-0004", spark_executor_id="7"}`},
		{"out/spark-pi/profile-Spark-Pi-exec-7.jfr", `{role="executor", spark_executor_id="7"}`},
		{"somewhere/recording.jfr", `{}`},
		{"profiles/rdd_12.pstats", `{spark_rdd_id="12"}`},
		{"profiles/udf_3.pstats", `{spark_udf_id="3"}`},
		{"profiles/udf_7_perf.pstats.gz", `{spark_udf_id="7"}`},
		{"profiles/udf_7_memory.txt", `{}`},
		{"profiles/other.pstats", `{}`},
	}
	for _, tt := range tests {
		if got := SparkPathLabels(tt.path).String(); got != tt.want {
			t.Errorf("SparkPathLabels(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
}

// A LabelsSnapshot saved beside its JFR, as Pyroscope's Java agent dumps an
// upload's two parts, labels the JFR's samples when the JFR is loaded, is
// not itself a profile file, and is named as what it is when loaded alone.
func TestLoadReadsLabelsBeside(t *testing.T) {
	dir := t.TempDir()
	jfrPath := filepath.Join(dir, "dump1.jfr.gz")
	labelsPath := filepath.Join(dir, "dump1.labels.pb.gz")
	if err := os.WriteFile(jfrPath, corpus.Read(t, "jfr", "dump1.jfr.gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	labelled := func() int {
		t.Helper()
		p, err := Load(jfrPath, Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range p.Samples {
			if strings.HasPrefix(p.Label(s, profile.LabelThreadName), "pool-2-thread-") {
				n++
			}
		}
		return n
	}
	if n := labelled(); n != 0 {
		t.Fatalf("%d samples labelled with no snapshot beside the JFR", n)
	}
	if err := os.WriteFile(labelsPath, corpus.Read(t, "jfr", "dump1.labels.pb.gz"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := LabelsBeside(jfrPath); got != labelsPath {
		t.Errorf("LabelsBeside = %q, want %q", got, labelsPath)
	}
	if got := JFRBeside(labelsPath); got != jfrPath {
		t.Errorf("JFRBeside = %q, want %q", got, jfrPath)
	}
	if n := labelled(); n == 0 {
		t.Error("no sample labelled from the snapshot beside the JFR")
	}
	files, err := Expand([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0] != jfrPath {
		t.Errorf("Expand = %q, want only the JFR", files)
	}
	if _, err := Load(labelsPath, Options{}); err == nil || !strings.Contains(err.Error(), "a Pyroscope LabelsSnapshot, not a profile") {
		t.Errorf("loading the snapshot alone: err = %v, want one saying what it is", err)
	}
	if err := os.WriteFile(labelsPath, []byte("not a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(jfrPath, Options{}); err == nil || !strings.Contains(err.Error(), "labels") {
		t.Errorf("loading with a corrupt snapshot beside: err = %v, want one about the labels", err)
	}
}
