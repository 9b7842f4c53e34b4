package flamegraph

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkprof/sparkprof/profile"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

func TestSVGGolden(t *testing.T) {
	stacks := map[string]int64{
		"java.lang.Thread.run;org.apache.spark.executor.Executor$TaskRunner.run;compute": 700,
		"java.lang.Thread.run;org.apache.spark.executor.Executor$TaskRunner.run;write":   200,
		"java.lang.Thread.run;epoll_wait":                                                100,
	}
	kinds := map[string]profile.FrameKind{"epoll_wait": profile.KindNative}
	base := build(t, profile.TypeCPU, stacks, kinds)
	next := build(t, profile.TypeCPU, map[string]int64{
		"java.lang.Thread.run;org.apache.spark.executor.Executor$TaskRunner.run;compute": 300,
		"java.lang.Thread.run;epoll_wait":                                                700,
	}, kinds)
	tests := []struct {
		file string
		tree *profile.Tree
	}{
		{"cpu.svg", profile.NewTree(base, profile.TypeCPU)},
		{"diff.svg", profile.Diff(base, next, profile.TypeCPU)},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := SVG(&buf, tt.tree, Options{Width: 800, Title: "golden"}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", tt.file)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -update to create it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs from golden file; run go test -update and review the diff", path)
		}
	}
}
