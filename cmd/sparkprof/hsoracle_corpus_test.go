package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sparkprof/sparkprof/internal/corpus"
	"github.com/sparkprof/sparkprof/internal/sparktest"
)

// corpusHistoryLogs are the corpus event logs given to the History Server:
// one log per app (the corpus's variants of one app would stand for each
// other), among them an app of two attempts.
var corpusHistoryLogs = [][]string{
	{"apache", "app-20161116163331-0000"},
	{"apache", "application_1536831636016_59384_1"},
	{"apache", "eventlog_v2_local-1766844910796"},
	{"apache", "local-1430917381535_1"},
	{"apache", "local-1430917381535_2"},
	{"apache", "local-1642039451826"},
	{"sparklens", "local-1532512550423"},
	{"nvidia", "aqeshuffle_eventlog.zstd"},
	{"nvidia", "eventlog_4nodes_8cores_dynamic_alloc.zstd"},
	{"nvidia", "eventlog_v2_local-1623876083964"},
	{"nvidia", "rp_sql_eventlog.zstd"},
	{"nvidia", "spark2-eventlog.zstd"},
	{"nvidia", "tasks_executors_fail_compressed_eventlog.zstd"},
}

// TestHistoryServerCorpus runs the History Server of the first Spark line
// on corpus event logs and compares its answers for each app it lists with
// analyze's and serve's, as TestHistoryServerOracle does for the logs real
// Spark writes here.
func TestHistoryServerCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the History Server")
	}
	s := sparktest.Lines(t)[0]
	bin := buildBinary(t)
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	if err := os.MkdirAll(events, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs []generatedLog
	for _, rel := range corpusHistoryLogs {
		src := corpus.Path(t, append([]string{"eventlogs"}, rel...)...)
		dst := filepath.Join(events, rel[len(rel)-1])
		if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v\n%s", src, err, out)
		}
		code, stdout, stderr := sparkprof(t, "analyze", "--json", dst)
		if code != 0 {
			t.Fatalf("analyze --json %s: exit %d\n%s", dst, code, stderr)
		}
		var rep jsonObj
		decodeJSON(t, dst, []byte(stdout), &rep)
		logs = append(logs, generatedLog{app: jsonPath(rep, "app.id").(string), attempt: hsNorm(jsonPath(rep, "app.attemptId")),
			kind: "corpus " + rel[0], path: dst})
	}
	hs, hsLog := startHistoryServer(t, s, events, dir)
	cmd, base := startServe(t, bin, filepath.Join(dir, "data"), "--eventlog-dir", events, "--eventlog-poll", "1s")
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()

	// The History Server says of each log that it parsed it, or why not.
	verdict := func(name string) string {
		for _, line := range hsLog.Lines() {
			if !strings.Contains(line, name) {
				continue
			}
			if strings.Contains(line, "Finished parsing") {
				return "parsed"
			}
			if strings.Contains(line, "WARN") || strings.Contains(line, "ERROR") || strings.Contains(line, "Exception") {
				return line
			}
		}
		return ""
	}
	waitFor(t, "the History Server to parse every corpus log", func() bool {
		for _, l := range logs {
			if verdict(filepath.Base(l.path)) == "" {
				return false
			}
		}
		return true
	})
	tally := hsTally{}
	var table []string
	for _, l := range logs {
		name := filepath.Base(l.path)
		if v := verdict(name); v != "parsed" {
			table = append(table, fmt.Sprintf("%-6s %-18s %-48s analyze, serve; not the History Server: %s", s.Version, l.kind, name, v))
			continue
		}
		table = append(table, oracleApp(t, s, l, hs, base, tally))
	}
	t.Logf("corpus event log → read by:\n%s", strings.Join(table, "\n"))
	tally.report(t)
}
