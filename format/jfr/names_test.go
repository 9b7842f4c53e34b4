package jfr

import "testing"

func TestMergeGenerated(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"jdk/internal/reflect/GeneratedMethodAccessor31", "jdk/internal/reflect/GeneratedMethodAccessor_"},
		{"jdk/internal/reflect/GeneratedMethodAccessor", "jdk/internal/reflect/GeneratedMethodAccessor"},
		{"org/example/OrderService$$Lambda$669.0x0000000800fd7318", "org/example/OrderService$$Lambda_"},
		{"com/x/ScheduleService$$Lambda$613/672746064", "com/x/ScheduleService$$Lambda_"},
		{"Fib$$Lambda.0x00007ffa600c4da0", "Fib$$Lambda_"},
		{"io/otel/Context$$Lambda$lambda$wrap$2$2630016632.0x00000000000100dd", "io/otel/Context$$Lambda$lambda$wrap$2_"},
		{"kafka/log/LogValidator$$$Lambda$1234.0x0000000801", "kafka/log/LogValidator$$$Lambda_"},
		{"foo/Bar$$EnhancerBySpringCGLIB$$1234abcd", "foo/Bar$$EnhancerBySpringCGLIB$$_"},
		{"org/apache/spark/rdd/RDD", "org/apache/spark/rdd/RDD"},
		{"a/B$$Lambda$x", "a/B$$Lambda$x"},
		{"libzstd-jni-1.5.1-16931311898282279136.so", "libzstd-jni-_.so"},
		{"/tmp/libzstd-jni-1.5.5-5-4375098470998446390.so (deleted)", "libzstd-jni-_.so"},
		{"liblz4-java-8190263467891720291.so", "liblz4-java-_.so"},
		{"/tmp/snappy-1.1.8-6fb9393a-3093-4706-a7e4-837efe01d078-libsnappyjava.so", "snappy-_-libsnappyjava.so"},
		{"libasyncProfiler-linux-x64-505cc169188276c919be50bc1b47e8f236295f.so", "libasyncProfiler-linux-x64-505cc169188276c919be50bc1b47e8f236295f.so"},
		{"./tmp/amazonCorrettoCryptoProviderNativeLibraries.7382c2f79097f415/libcrypto.so (deleted)", "libamazonCorrettoCryptoProvider_.so"},
		{"libjvm.so", "libjvm.so"},
	} {
		if got := mergeGenerated(tc.in); got != tc.want {
			t.Errorf("mergeGenerated(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
