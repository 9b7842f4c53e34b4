package applog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sparkprof/sparkprof/containerlog"
)

// ParseYarnLogs parses the concatenated output of "yarn logs
// -applicationId ...": sections headed "Container: <id> on <host>_<port>",
// each log between "LogContents:" (or "Log Contents:") and
// "End of LogType:<name>". It returns one containerlog.Log per stderr/stdout section;
// the driver is identified as in OpenDir. One section is held in memory
// at a time.
func ParseYarnLogs(r io.Reader, source string, opt Options) ([]*containerlog.Log, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		logs                     []*containerlog.Log
		container, host, logType string
		inBody                   bool
		body                     bytes.Buffer
		n, start                 int
	)
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if inBody {
			if strings.HasPrefix(line, "End of LogType:") {
				inBody = false
				if logType != "stderr" && logType != "stdout" {
					continue
				}
				l, err := Parse(&body, fmt.Sprintf("%s:%d", source, start), opt)
				if err != nil {
					return nil, err
				}
				l.Container, l.Host = container, host
				if l.Role == "" && logType == "stderr" && strings.HasSuffix(container, "_000001") {
					l.Role = "driver"
				}
				logs = append(logs, l)
				continue
			}
			body.WriteString(line)
			body.WriteByte('\n')
			continue
		}
		switch {
		case strings.HasPrefix(line, "Container: "):
			// "Container: <id>" alone is WriteYarnLogs' header for a log
			// directory, which does not say the host.
			f := strings.Fields(line)
			if len(f) != 2 && (len(f) != 4 || f[2] != "on") {
				return nil, fmt.Errorf("applog: %s:%d: want \"Container: <id> on <host>_<port>\", got %q", source, n, line)
			}
			container, host = f[1], ""
			if len(f) == 4 {
				host = f[3]
				if i := strings.LastIndexByte(host, '_'); i > 0 {
					host = host[:i]
				}
			}
		case strings.HasPrefix(line, "LogType:"):
			logType = strings.TrimSpace(strings.TrimPrefix(line, "LogType:"))
		case line == "LogContents:" || line == "Log Contents:":
			if container == "" || logType == "" {
				return nil, fmt.Errorf("applog: %s:%d: log contents before a Container/LogType header", source, n)
			}
			inBody, start = true, n+1
			body.Reset()
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("applog: %s: after line %d: %w", source, n, err)
	}
	if inBody {
		return nil, fmt.Errorf("applog: %s: log %s of %s not closed by \"End of LogType:\" at end of input", source, logType, container)
	}
	if len(logs) == 0 {
		return nil, fmt.Errorf("applog: %s: no stderr/stdout sections found", source)
	}
	return logs, nil
}

// OpenAll opens path as a YARN application log directory, a yarn-logs
// concatenation or a single log file (plain or .gz, including a
// Kubernetes pod log), and returns its logs.
func OpenAll(path string, opt Options) ([]*containerlog.Log, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("applog: %w", err)
	}
	if fi.IsDir() {
		return OpenDir(path, opt)
	}
	r, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	br := bufio.NewReader(r)
	head, _ := br.Peek(512)
	if bytes.HasPrefix(bytes.TrimLeft(head, "\r\n"), []byte("Container: ")) {
		return ParseYarnLogs(br, path, opt)
	}
	l, err := Parse(br, path, opt)
	if err != nil {
		return nil, err
	}
	return []*containerlog.Log{l}, nil
}
