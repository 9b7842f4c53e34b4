// Package appstore keeps the tenants' analysed Spark applications: the
// event logs and container logs imported into the server, saved on disk and
// analysed again at start, each with its task model, which ties profile
// samples to tasks (package attribution) and narrows stage queries.
package appstore

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/spark"
)

// Store holds the analysed applications of each tenant, from imported
// event logs and container logs. The files are kept in its directory and
// analysed again at start: an event log as a file of its own, the
// container logs (and metric records) of one app together in a bundle
// directory. Event logs analysed in place (Analyse) are not copied. The
// attempts of an app (each attempt's event log) are kept apart, as the
// History Server keeps them; an app's id alone names its latest attempt.
type Store struct {
	dir     string
	tempDir bool // dir was made by Open, and Close removes it
	mu      sync.RWMutex
	by      map[string]map[string]attempts // tenant -> app id -> its attempts
	bundles map[string]map[string]*app     // tenant -> bundle name -> app
	th      analysis.Thresholds            // what the analyses judge by
	skipped []Skipped                      // what Open could not load

	// saving serialises the changes to one saved event log or bundle
	// (lock), keyed by its path.
	savingMu sync.Mutex
	saving   map[string]*pathLock
}

// attempts are the attempts of one app, by attempt id ("" for an app
// that names none).
type attempts map[string]*app

// latest returns the attempt that started last (of equal starts, the
// greatest id), or nil.
func (as attempts) latest() *app {
	var out *app
	for _, a := range as {
		if out == nil || later(a.report.App, out.report.App) {
			out = a
		}
	}
	return out
}

// later reports whether attempt a comes after attempt b: it started later,
// or at the same time with a greater attempt id.
func later(a, b spark.Summary) bool {
	if a.StartMs != b.StartMs {
		return a.StartMs > b.StartMs
	}
	return attemptOrder(a.AttemptID, b.AttemptID) > 0
}

// attemptOrder compares attempt ids as numbers where both are, else as
// text.
func attemptOrder(a, b string) int {
	na, errA := strconv.Atoi(a)
	nb, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return cmp.Compare(na, nb)
	}
	return cmp.Compare(a, b)
}

// app is an app's report with its tasks indexed by id, for joining
// samples to task windows.
type app struct {
	report *analysis.Report
	tasks  map[int64]*spark.Task
	// stageWindows holds, by stage id, the time its tasks can have
	// samples in (attribution.TaskSpan), made when first asked for: an app
	// has hundreds of thousands of tasks, and a stage's queries ask each
	// time.
	windowsOnce  sync.Once
	stageWindows map[int][2]int64
}

// stageWindow returns the time (Unix ns) the tasks of stage can have
// samples in (attribution.TaskSpan); false when the stage has no tasks.
func (a *app) stageWindow(stage int) (from, until int64, ok bool) {
	a.windowsOnce.Do(func() {
		byStage := map[int][]*spark.Task{}
		for _, t := range a.tasks {
			byStage[t.StageID] = append(byStage[t.StageID], t)
		}
		a.stageWindows = make(map[int][2]int64, len(byStage))
		for id, ts := range byStage {
			from, until := attribution.TaskSpan(ts)
			a.stageWindows[id] = [2]int64{from, until}
		}
	})
	w, ok := a.stageWindows[stage]
	return w[0], w[1], ok
}

// Open returns the store of the files saved under dir, analysing each of
// them with the thresholds th. What cannot be loaded is skipped and listed
// by Skipped, and the temporary files of imports a stop cut short are
// removed; the error is that of a dir that cannot be read. An empty dir
// keeps the files in a temporary directory that Close removes.
func Open(dir string, th analysis.Thresholds) (*Store, error) {
	s := &Store{dir: dir, by: map[string]map[string]attempts{}, bundles: map[string]map[string]*app{}, th: th, saving: map[string]*pathLock{}}
	if dir == "" {
		d, err := os.MkdirTemp("", "sparkprof-eventlogs-")
		if err != nil {
			return nil, fmt.Errorf("a directory for imported event logs: %w", err)
		}
		s.dir, s.tempDir = d, true
		return s, nil
	}
	if err := s.load(); err != nil {
		return s, fmt.Errorf("loading the apps saved in %s: %w", dir, err)
	}
	return s, nil
}

// Close removes the temporary directory Open made, if it made one.
func (s *Store) Close() error {
	if s.tempDir {
		return os.RemoveAll(s.dir)
	}
	return nil
}

// Analyse analyses the event log at path (a file or rolling directory) in
// place, as the tenant's app of its id, drawing the memory of reading it
// from mem if not nil (input.Options.Memory).
func (s *Store) Analyse(tenant, path string, mem eventlog.Memory) (*analysis.Report, error) {
	r, err := s.analyse([]string{path}, "", mem)
	if err != nil {
		return nil, err
	}
	s.put(tenant, r, "")
	return r, nil
}

// analyse analyses paths as one app: an event log (file or rolling
// directory), or the files of the bundle named bundle, whose name stands
// in for an id and name the logs lack; the memory of reading event logs
// is drawn from mem, if not nil.
func (s *Store) analyse(paths []string, bundle string, mem eventlog.Memory) (*analysis.Report, error) {
	if len(paths) == 0 {
		return nil, errors.New("no files")
	}
	in, err := input.Read(paths, input.Options{Memory: mem})
	if err != nil {
		return nil, err
	}
	// An app is an event log's or container logs': profiles alone (a
	// bundle's metric records before its logs) are not one, and must not
	// stand in for the app of their labels' id.
	if len(in.EventLogs) == 0 && len(in.Logs) == 0 {
		return nil, fmt.Errorf("%s: no event log or container log", filepath.Base(paths[0]))
	}
	reps := in.Reports(s.th, nil)
	if len(reps) == 0 {
		return nil, fmt.Errorf("%s: nothing to analyse", filepath.Base(paths[0]))
	}
	r := reps[0]
	if r.App.ID == "" && bundle == "" {
		return nil, fmt.Errorf("%s: no SparkListenerApplicationStart: not an event log", filepath.Base(paths[0]))
	}
	r.App.ID = cmp.Or(r.App.ID, bundle)
	r.App.Name = cmp.Or(r.App.Name, bundle)
	for i := range r.Sources {
		r.Sources[i].Path = filepath.Base(r.Sources[i].Path)
	}
	for i := range r.Metrics {
		r.Metrics[i].Source = filepath.Base(r.Metrics[i].Source)
	}
	return r, nil
}

// Thresholds returns the thresholds the store's analyses judge by.
func (s *Store) Thresholds() analysis.Thresholds { return s.th }

// Put makes r the tenant's app of its id: an app model built elsewhere,
// with no files behind it, is known until the store closes.
func (s *Store) Put(tenant string, r *analysis.Report) { s.put(tenant, r, "") }

// put makes r the tenant's attempt of its app id and attempt id, and the
// app of the bundle named bundle if not "", indexing its tasks by id (the
// latest attempt of a task id).
func (s *Store) put(tenant string, r *analysis.Report, bundle string) {
	a := &app{report: r, tasks: make(map[int64]*spark.Task, len(r.Tasks))}
	for _, t := range r.Tasks {
		if cur := a.tasks[t.ID]; cur == nil || t.LaunchMs > cur.LaunchMs {
			a.tasks[t.ID] = t
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by[tenant] == nil {
		s.by[tenant] = map[string]attempts{}
		s.bundles[tenant] = map[string]*app{}
	}
	if s.by[tenant][r.App.ID] == nil {
		s.by[tenant][r.App.ID] = attempts{}
	}
	s.by[tenant][r.App.ID][r.App.AttemptID] = a
	if bundle != "" {
		s.bundles[tenant][bundle] = a
	}
}

// Bundle returns the report of the tenant's bundle named app, or nil.
func (s *Store) Bundle(tenant, app string) *analysis.Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if b := s.bundles[tenant][safeName(app)]; b != nil {
		return b.report
	}
	return nil
}

// app returns the tenant's latest attempt of app id, or nil.
func (s *Store) app(tenant, id string) *app {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.by[tenant][id].latest()
}

// Report returns the report of the latest attempt of the tenant's app id,
// or nil.
func (s *Store) Report(tenant, id string) *analysis.Report {
	if a := s.app(tenant, id); a != nil {
		return a.report
	}
	return nil
}

// Attempt returns the report of attempt attempt of the tenant's app id
// ("" for an app that names no attempt), or nil.
func (s *Store) Attempt(tenant, id, attempt string) *analysis.Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if a := s.by[tenant][id][attempt]; a != nil {
		return a.report
	}
	return nil
}

// Attempts returns the reports of the attempts of the tenant's app id, the
// latest first, as the History Server lists them.
func (s *Store) Attempts(tenant, id string) []*analysis.Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*analysis.Report
	for _, a := range s.by[tenant][id] {
		out = append(out, a.report)
	}
	slices.SortFunc(out, func(a, b *analysis.Report) int {
		if later(a.App, b.App) {
			return -1
		}
		return 1
	})
	return out
}

// Reports returns the reports of the tenant's apps, every attempt of each,
// in no order.
func (s *Store) Reports(tenant string) []*analysis.Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*analysis.Report, 0, len(s.by[tenant]))
	for _, as := range s.by[tenant] {
		for _, a := range as {
			out = append(out, a.report)
		}
	}
	return out
}

// Tasks returns the tasks by task id of attempt attempt of the tenant's app
// id, of its latest attempt when attempt is "" or not known, or nil. It
// must not be modified.
func (s *Store) Tasks(tenant, id, attempt string) map[int64]*spark.Task {
	var a *app
	if attempt != "" {
		s.mu.RLock()
		a = s.by[tenant][id][attempt]
		s.mu.RUnlock()
	}
	if a == nil {
		a = s.app(tenant, id)
	}
	if a != nil {
		return a.tasks
	}
	return nil
}

// StageWindow returns the time (Unix ns) the tasks of a stage of an app can
// have samples in (attribution.TaskSpan), in any of its attempts (until 0
// while one runs); false when the app's task model is not known or the
// stage has no tasks.
func (s *Store) StageWindow(tenant, id string, stage int) (from, until int64, ok bool) {
	s.mu.RLock()
	as := slices.Collect(maps.Values(s.by[tenant][id]))
	s.mu.RUnlock()
	open := false
	for _, a := range as {
		lo, hi, found := a.stageWindow(stage)
		if !found {
			continue
		}
		if !ok || lo < from {
			from = lo
		}
		open = open || hi == 0
		until, ok = max(until, hi), true
	}
	if open {
		until = 0
	}
	return from, until, ok
}
