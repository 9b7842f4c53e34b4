package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/internal/errkind"
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
// other files are skipped. Unlike the History Server it also looks in
// subdirectories (down to maxWatchDepth), so one directory can hold the
// log directories of several clusters.
func (p *Pipeline) WatchEventLogs(ctx context.Context, tenant, dir string, every time.Duration) {
	w := newLogWatch()
	for first := true; ; first = false {
		start := time.Now()
		if n := p.scanEventLogs(tenant, dir, w); first || n > 0 {
			p.log.Info("event log directory scanned", "dir", dir, "analysed", n, "took", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// maxWatchDepth bounds how deep WatchEventLogs looks below its directory.
const maxWatchDepth = 3

// logWatch is what a watch has seen: each path's version when it was last
// looked at, and the directories that are not event logs themselves, into
// which every scan looks again.
type logWatch struct {
	seen  map[string]stamp
	plain map[string]bool
}

func newLogWatch() *logWatch {
	return &logWatch{seen: map[string]stamp{}, plain: map[string]bool{}}
}

// scanEventLogs analyses what changed in dir and its subdirectories since
// the watch last looked, and returns how many logs it analysed.
func (p *Pipeline) scanEventLogs(tenant, dir string, w *logWatch) int {
	return p.scanLogDir(tenant, dir, w, maxWatchDepth)
}

func (p *Pipeline) scanLogDir(tenant, dir string, w *logWatch, depth int) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		p.log.Warn("event log dir unreadable", "dir", dir, "err", err)
		return 0
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") {
			continue
		}
		path := filepath.Join(dir, name)
		if w.plain[path] {
			n += p.scanLogDir(tenant, path, w, depth-1)
			continue
		}
		st, ok := stampOf(path)
		if old, seen := w.seen[path]; !ok || seen && old == st {
			continue
		}
		w.seen[path] = st
		var kind string
		err := p.withLogMemory(func(mem eventlog.Memory) (err error) {
			kind, err = input.Classify(path, mem)
			return err
		})
		if err != nil {
			if errkind.Of(err) == errkind.Unavailable {
				delete(w.seen, path)
			}
			continue
		}
		if kind != "eventlog" {
			if e.IsDir() && depth > 0 {
				w.plain[path] = true
				n += p.scanLogDir(tenant, path, w, depth-1)
			}
			continue
		}
		err = p.withLogMemory(func(mem eventlog.Memory) error {
			_, err := p.cfg.Apps.Analyse(tenant, path, mem)
			return err
		})
		if err != nil {
			if errkind.Of(err) == errkind.Unavailable {
				delete(w.seen, path) // the uploads in progress held the memory: the next scan tries again
			}
			p.log.Warn("event log not analysed", "path", path, "err", err)
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
