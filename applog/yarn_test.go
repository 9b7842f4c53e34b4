package applog

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
)

// TestYarnLogs reads testdata/yarn_logs.txt, a generated fixture in the
// layout of "yarn logs -applicationId" output.
func TestYarnLogs(t *testing.T) {
	logs, err := OpenAll("testdata/yarn_logs.txt", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ container, host, role string }{
		{"container_1700000000000_0007_01_000001", "worker-1.example.com", "driver"},
		{"container_1700000000000_0007_01_000002", "worker-2.example.com", "executor"},
	}
	if len(logs) != len(want) {
		t.Fatalf("got %d logs, want %d", len(logs), len(want))
	}
	for i, w := range want {
		l := logs[i]
		if l.Container != w.container || l.Host != w.host || l.Role != w.role {
			t.Errorf("log %d = %s on %s role %q, want %+v", i, l.Container, l.Host, l.Role, w)
		}
	}
	if len(logs[0].Jobs) != 1 || logs[1].Lines != 2 {
		t.Errorf("driver jobs %d, executor lines %d", len(logs[0].Jobs), logs[1].Lines)
	}
}

func TestYarnLogsErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"bad header", "Container: x y\n", "want \"Container: <id> on"},
		{"no header", "LogContents:\n", "before a Container/LogType header"},
		{"unterminated", "Container: c_1 on h_1\nLogType:stderr\nLogContents:\nx\n", "not closed"},
		{"empty", "Container: c_1 on h_1\n", "no stderr/stdout sections"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseYarnLogs(strings.NewReader(tt.in), "in", Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseYarnLogs(f *testing.F) {
	b, err := os.ReadFile("testdata/yarn_logs.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(append([]byte("Container: c_1 on h_1\nLogType:stderr\nLogContents:\n"), corpus.Read(f, "applogs", "nvidia", "driverlog")[:4096]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		logs, err := ParseYarnLogs(bytes.NewReader(b), "fuzz", Options{})
		if err == nil && len(logs) == 0 {
			t.Error("no error and no logs")
		}
	})
}
