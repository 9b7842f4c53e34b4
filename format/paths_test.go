package format

import "testing"

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
		{"somewhere/recording.jfr", `{}`},
	}
	for _, tt := range tests {
		if got := SparkPathLabels(tt.path).String(); got != tt.want {
			t.Errorf("SparkPathLabels(%q) = %s, want %s", tt.path, got, tt.want)
		}
	}
}
