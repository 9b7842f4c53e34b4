package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestPyroscopePythonClient runs the real pyroscope-io client (py-spy
// inside, uploading with Pyroscope's Push API) in a short Python program
// against sparkprof serve, and checks that its Python functions arrive,
// named as Python frames are, with the client's and tag_wrapper's labels,
// and that the labels select them.
func TestPyroscopePythonClient(t *testing.T) {
	py := filepath.Join(pyTools(t), "python")
	sender, err := filepath.Abs(filepath.Join("testdata", "python", "pyroscope_send.py"))
	if err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	cmd, base := startServe(t, bin, filepath.Join(t.TempDir(), "data"))
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	const svc = "pyroscope-python"
	send := exec.Command(py, sender, base, svc)
	send.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1") // no __pycache__ beside crunch.py
	if b, err := send.CombinedOutput(); err != nil || !strings.Contains(string(b), "pyroscope_send: done") {
		t.Fatalf("pyroscope-io sender: %v\n%s", err, b)
	}
	type function struct {
		Name        string
		Self, Total int64
	}
	type top struct {
		Functions []function
		Total     int64
		Type      struct{ Name, Unit string }
	}
	topOf := func(selector string) top {
		var tp top
		mustGetJSON(t, base+"/api/v1/top?"+url.Values{"query": {selector}}.Encode(), &tp)
		return tp
	}
	all := `{service_name="` + svc + `"}`
	waitFor(t, "the client's uploads to be queryable", func() bool {
		return topOf(`{service_name="`+svc+`",step="crunch"}`).Total > 0
	})
	for _, tc := range []struct{ label, want string }{
		{"role", "driver"},
		{"spark_app_id", "local-1"},
		{"step", "crunch"},
	} {
		if vs := serverLabelValues(t, base, tc.label, all); !slices.Contains(vs, tc.want) {
			t.Errorf("label %s has values %v, want %s among them", tc.label, vs, tc.want)
		}
	}
	for _, tc := range []struct {
		name, selector string
		want           []string
	}{
		{"the whole run", all, []string{"crunch.py:crunch_numbers", "crunch.py:outer_loop"}},
		{"the tagged part", `{service_name="` + svc + `",step="crunch",role="driver",spark_app_id="local-1"}`, []string{"crunch.py:crunch_numbers"}},
	} {
		tp := topOf(tc.selector)
		t.Logf("%s: %s, %d %s", tc.name, tp.Type.Name, tp.Total, tp.Type.Unit)
		for _, w := range tc.want {
			if !slices.ContainsFunc(tp.Functions, func(f function) bool { return strings.HasSuffix(f.Name, w) && f.Total > 0 }) {
				t.Errorf("%s: no function %s among %+v", tc.name, w, tp.Functions)
			}
		}
		if len(tp.Functions) == 0 || !strings.HasSuffix(tp.Functions[0].Name, "crunch.py:crunch_numbers") {
			t.Errorf("%s: crunch_numbers is not first by self time: %+v", tc.name, tp.Functions)
		}
	}
}
