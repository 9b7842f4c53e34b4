package applog

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sparkprof/sparkprof/containerlog"
)

// OpenDir parses every container log of a YARN application log directory
// (container_*/stderr, stdout, optionally gzipped). Each containerlog.Log's Source is
// the file path and Container the container directory name. A log is
// marked as the driver when Spark's driver lines identify it, or, failing
// that, when it is the stderr of the first container (_000001, the
// ApplicationMaster, which hosts the driver in cluster mode).
func OpenDir(dir string, opt Options) ([]*containerlog.Log, error) {
	files, err := containerFiles(dir)
	if err != nil {
		return nil, err
	}
	var logs []*containerlog.Log
	for _, f := range files {
		l, err := Open(f.path, opt)
		if err != nil {
			return nil, err
		}
		l.Container = f.container
		if l.Role == "" && f.logType == "stderr" && strings.HasSuffix(f.container, "_000001") {
			l.Role = "driver"
		}
		logs = append(logs, l)
	}
	return logs, nil
}

// containerFile is one stderr or stdout of a YARN application log directory.
type containerFile struct {
	path, container, logType string
}

// containerFiles lists the container_*/stderr and stdout files (optionally
// gzipped) of dir, sorted by path.
func containerFiles(dir string) ([]containerFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("applog: %w", err)
	}
	var out []containerFile
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "container_") {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("applog: %w", err)
		}
		for _, f := range files {
			base := strings.TrimSuffix(f.Name(), ".gz")
			if f.IsDir() || (base != "stderr" && base != "stdout") {
				continue
			}
			out = append(out, containerFile{filepath.Join(dir, e.Name(), f.Name()), e.Name(), base})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("applog: %s: no container_*/stderr or stdout files", dir)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// WriteYarnLogs writes the container logs of a YARN application log
// directory to w as one text in the layout of "yarn logs -applicationId"
// (without hosts, which a log directory does not record), so that they can
// travel as one file and be read back by ParseYarnLogs as OpenDir reads
// them.
func WriteYarnLogs(w io.Writer, dir string) error {
	files, err := containerFiles(dir)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for _, f := range files {
		fmt.Fprintf(bw, "Container: %s\nLogType:%s\nLogContents:\n", f.container, f.logType)
		if err := copyLog(bw, f.path); err != nil {
			return err
		}
		fmt.Fprintf(bw, "End of LogType:%s\n\n", f.logType)
	}
	return bw.Flush()
}

// copyLog copies the log file at path, gunzipped if named .gz, to w, ending
// it with a newline.
func copyLog(w *bufio.Writer, path string) error {
	r, err := openFile(path)
	if err != nil {
		return err
	}
	defer r.Close()
	cw := &lastByteWriter{w: w}
	if _, err := io.Copy(cw, r); err != nil {
		return fmt.Errorf("applog: %s: %w", path, err)
	}
	if cw.last != '\n' && cw.n > 0 {
		return w.WriteByte('\n')
	}
	return nil
}

// lastByteWriter passes writes on and remembers the last byte written.
type lastByteWriter struct {
	w    io.Writer
	n    int64
	last byte
}

func (lw *lastByteWriter) Write(p []byte) (int, error) {
	n, err := lw.w.Write(p)
	if n > 0 {
		lw.n += int64(n)
		lw.last = p[n-1]
	}
	return n, err
}
