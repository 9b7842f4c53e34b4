package applog

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// OpenDir parses every container log of a YARN application log directory
// (container_*/stderr, stdout, optionally gzipped). Each Log's Source is
// the file path and Container the container directory name. A log is
// marked as the driver when Spark's driver lines identify it, or, failing
// that, when it is the stderr of the first container (_000001, the
// ApplicationMaster, which hosts the driver in cluster mode).
func OpenDir(dir string, opt Options) ([]*Log, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("applog: %w", err)
	}
	var logs []*Log
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
			l, err := Open(filepath.Join(dir, e.Name(), f.Name()), opt)
			if err != nil {
				return nil, err
			}
			l.Container = e.Name()
			if l.Role == "" && base == "stderr" && strings.HasSuffix(e.Name(), "_000001") {
				l.Role = "driver"
			}
			logs = append(logs, l)
		}
	}
	if len(logs) == 0 {
		return nil, fmt.Errorf("applog: %s: no container_*/stderr or stdout files", dir)
	}
	sort.Slice(logs, func(i, j int) bool { return logs[i].Source < logs[j].Source })
	return logs, nil
}
