package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
)

// stamp identifies a version of a file or rolling event-log directory.
type stamp struct {
	size  int64
	mtime time.Time
}

// WatchEventLogs analyses the event logs in dir for tenant as the History
// Server does: at start and then every interval until ctx ends, logs that
// are new or changed (in-progress logs grow) are analysed again, in place.
// Single files in any codec and rolling eventlog_v2_* directories count;
// other files are skipped.
func (s *Server) WatchEventLogs(ctx context.Context, tenant, dir string, every time.Duration) {
	seen := map[string]stamp{}
	for {
		s.scanEventLogs(tenant, dir, seen)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// scanEventLogs analyses what changed in dir since seen and returns how
// many logs it analysed.
func (s *Server) scanEventLogs(tenant, dir string, seen map[string]stamp) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		s.log.Warn("event log dir unreadable", "dir", dir, "err", err)
		return 0
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") {
			continue
		}
		path := filepath.Join(dir, name)
		st, ok := stampOf(path)
		if !ok || seen[path] == st {
			continue
		}
		seen[path] = st
		if kind, err := analysis.Classify(path); err != nil || kind != "eventlog" {
			continue
		}
		if _, err := s.apps.analyse(tenant, []string{path}, ""); err != nil {
			s.log.Warn("event log not analysed", "path", path, "err", err)
			continue
		}
		n++
	}
	return n
}

// stampOf returns the size and modification time of a file, or the sums
// and latest time of a directory's files.
func stampOf(path string) (stamp, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, false
	}
	if !fi.IsDir() {
		return stamp{fi.Size(), fi.ModTime()}, true
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return stamp{}, false
	}
	var st stamp
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !info.IsDir() {
			st.size += info.Size()
			if info.ModTime().After(st.mtime) {
				st.mtime = info.ModTime()
			}
		}
	}
	return st, true
}
