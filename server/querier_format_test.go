package server

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sparkprof/sparkprof/internal/pproftool"
	"github.com/sparkprof/sparkprof/profile"
)

// formats asks for the merged CPU stacks of both executors in every format
// of Pyroscope's API, as Grafana and profilecli ask: the flame graph, the
// tree bytes against the offline call tree, a DOT graph, and pprof, which
// go tool pprof opens with the total the flame graph has.
func (qc querierCase) formats(t *testing.T) {
	const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	limit := int64(300)
	ask := func(f querierv1.ProfileFormat) *querierv1.SelectMergeStacktracesResponse {
		t.Helper()
		res, err := qc.c.SelectMergeStacktraces(qc.ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
			ProfileTypeID: cpu, LabelSelector: `{service_name="kafka"}`, End: qc.now, MaxNodes: &limit, Format: f,
		}))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return res.Msg
	}
	want := qc.total(profile.TypeCPU)
	for _, f := range []querierv1.ProfileFormat{querierv1.ProfileFormat_PROFILE_FORMAT_UNSPECIFIED, querierv1.ProfileFormat_PROFILE_FORMAT_FLAMEGRAPH} {
		if fg := ask(f).Flamegraph; fg == nil || fg.Total != want {
			t.Errorf("%s: flame graph %v, want total %d", f, fg, want)
		}
	}

	// The tree: the offline call tree, trimmed alike, each value twice.
	got, err := readTreeBytes(ask(querierv1.ProfileFormat_PROFILE_FORMAT_TREE).Tree)
	if err != nil {
		t.Fatalf("tree bytes: %v", err)
	}
	tree := profile.NewTree(qc.offline, profile.TypeCPU)
	tree.Trim(int(limit))
	wantStacks := map[string]int64{}
	var walk func(n *profile.Node, path string)
	walk = func(n *profile.Node, path string) {
		if n.Self > 0 {
			wantStacks[path] += 2 * n.Self
		}
		for _, c := range n.Children {
			walk(c, strings.TrimPrefix(path+";"+c.Name, ";"))
		}
	}
	walk(tree.Root, "")
	if len(got) != len(wantStacks) {
		t.Errorf("tree bytes: %d stacks, want %d", len(got), len(wantStacks))
	}
	for stack, v := range wantStacks {
		if got[stack] != v {
			t.Errorf("tree bytes: %q has %d, want %d", stack, got[stack], v)
			break
		}
	}

	dot := ask(querierv1.ProfileFormat_PROFILE_FORMAT_DOT).Dot
	if !strings.HasPrefix(dot, "digraph") || !strings.Contains(dot, "kafka") || strings.Count(dot, "[label=") < 10 {
		t.Errorf("DOT graph:\n%.600s", dot)
	}

	pp := ask(querierv1.ProfileFormat_PROFILE_FORMAT_PPROF).Pprof
	if pp == nil || pp.Profile == nil {
		t.Fatal("no pprof profile")
	}
	raw, err := proto.Marshal(pp.Profile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "merged.pb")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := pproftool.Top(t, path); r.Type != "cpu" || r.Total != want {
		t.Errorf("go tool pprof reads type %s, total %d; want cpu, %d:\n%.800s", r.Type, r.Total, want, r.Text)
	}
}

// readTreeBytes reads Pyroscope's tree bytes as the TREE format defines
// them (each node followed by its subtree: name length, name, self value,
// number of children, as varints, under an unnamed root) into the self
// value of each stack, its frames from the root joined by ";".
func readTreeBytes(b []byte) (map[string]int64, error) {
	stacks := map[string]int64{}
	uvarint := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, fmt.Errorf("bad varint at %d bytes from the end", len(b))
		}
		b = b[n:]
		return v, nil
	}
	var node func(path string, depth int) error
	node = func(path string, depth int) error {
		n, err := uvarint()
		if err != nil || n > uint64(len(b)) {
			return fmt.Errorf("name: %v", err)
		}
		name := string(b[:n])
		b = b[n:]
		self, err := uvarint()
		if err != nil {
			return err
		}
		children, err := uvarint()
		if err != nil {
			return err
		}
		if depth > 0 {
			path = strings.TrimPrefix(path+";"+name, ";")
		}
		if self > 0 {
			stacks[path] += int64(self)
		}
		for range children {
			if err := node(path, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := node("", 0); err != nil {
		return nil, err
	}
	if len(b) > 0 {
		return nil, fmt.Errorf("%d bytes after the tree", len(b))
	}
	return stacks, nil
}
