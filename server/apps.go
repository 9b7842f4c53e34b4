package server

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/input"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// apps holds the analysed applications of each tenant, from imported
// event logs and container logs. The files are kept in dir and analysed
// again at start: an event log as a file of its own, the container logs
// (and metric records) of one app together in a bundle directory.
type apps struct {
	dir     string
	mu      sync.RWMutex
	by      map[string]map[string]*analysedApp // tenant -> app id -> app
	bundles map[string]map[string]*analysedApp // tenant -> bundle name -> app
}

// analysedApp is an app's report with its tasks indexed by id, for joining
// samples to task windows.
type analysedApp struct {
	report *analysis.Report
	tasks  map[int64]*spark.Task
	// stageWindows holds, by stage id, the time its tasks can have
	// samples in (tasksWindow), made when first asked for: an app has
	// hundreds of thousands of tasks, and a stage's queries ask each time.
	windowsOnce  sync.Once
	stageWindows map[int][2]int64
}

// stageWindow returns the time (Unix ns) the tasks of stage can have
// samples in (tasksWindow); false when the stage has no tasks.
func (a *analysedApp) stageWindow(stage int) (from, until int64, ok bool) {
	a.windowsOnce.Do(func() {
		byStage := map[int][]*spark.Task{}
		for _, t := range a.tasks {
			byStage[t.StageID] = append(byStage[t.StageID], t)
		}
		a.stageWindows = make(map[int][2]int64, len(byStage))
		for id, ts := range byStage {
			from, until := tasksWindow(ts)
			a.stageWindows[id] = [2]int64{from, until}
		}
	})
	w, ok := a.stageWindows[stage]
	return w[0], w[1], ok
}

func newApps(dir string) *apps {
	return &apps{dir: dir, by: map[string]map[string]*analysedApp{}, bundles: map[string]map[string]*analysedApp{}}
}

// load analyses every event log and bundle saved under dir.
func (a *apps) load() error {
	if a.dir == "" {
		return nil
	}
	tenants, err := os.ReadDir(a.dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	for _, t := range tenants {
		name, err := store.TenantName(t.Name())
		if err != nil {
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(a.dir, t.Name()))
		for _, e := range entries {
			path := filepath.Join(a.dir, t.Name(), e.Name())
			var err error
			if e.IsDir() {
				_, err = a.analyseBundle(name, path)
			} else if !strings.HasSuffix(e.Name(), ".tmp") {
				_, err = a.analyse(name, []string{path}, "")
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// safeName turns name into a file name of its own.
func safeName(name string) string {
	return unsafeName.ReplaceAllString(filepath.Base(strings.ReplaceAll(name, "\\", "/")), "_")
}

// bundleDirPrefix marks bundle directories, so that no event log name can
// collide with one.
const bundleDirPrefix = "app-"

// add saves an event log for tenant and analyses it. A log that cannot be
// analysed is not kept and leaves a saved one of the same name in place.
func (a *apps) add(tenant, name string, data io.Reader) (*analysis.Report, error) {
	dir := filepath.Join(a.dir, store.TenantDir(tenant))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, safeName(name))
	tmp := path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		os.Remove(tmp)
		return nil, err
	}
	r, err := a.analyse(tenant, []string{tmp}, "")
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	for i := range r.Sources {
		r.Sources[i].Path = filepath.Base(name)
	}
	return r, nil
}

// addToBundle saves a container log or metric record file as part of the
// bundle named app and analyses the bundle again. The app id is the one the
// logs print, else the bundle name.
func (a *apps) addToBundle(tenant, app, name string, data io.Reader) (*analysis.Report, error) {
	dir := filepath.Join(a.dir, store.TenantDir(tenant), bundleDirPrefix+safeName(app))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, safeName(name))
	tmp := path + ".tmp"
	err := writeSynced(tmp, data)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, err
	}
	r, err := a.analyseBundle(tenant, dir)
	if err != nil {
		os.Remove(path)
		a.analyseBundle(tenant, dir) // restore the bundle's previous analysis
		return nil, err
	}
	return r, nil
}

// writeSynced copies data to a new file at path and syncs it.
func writeSynced(path string, data io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// analyseBundle analyses the files of a bundle directory as one app.
func (a *apps) analyseBundle(tenant, dir string) (*analysis.Report, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), ".tmp") {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return a.analyse(tenant, paths, strings.TrimPrefix(filepath.Base(dir), bundleDirPrefix))
}

// analyse analyses paths as one app and makes it the tenant's app of its
// id: an event log (file or rolling directory), or the files of the bundle
// named bundle, whose name stands in for an id and name the logs lack.
func (a *apps) analyse(tenant string, paths []string, bundle string) (*analysis.Report, error) {
	in, err := input.Read(paths, input.Options{})
	if err != nil {
		return nil, err
	}
	reps := in.Reports(analysis.DefaultThresholds)
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
	app := &analysedApp{report: r, tasks: make(map[int64]*spark.Task, len(r.Tasks))}
	for _, t := range r.Tasks {
		if cur := app.tasks[t.ID]; cur == nil || t.LaunchMs > cur.LaunchMs {
			app.tasks[t.ID] = t
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by[tenant] == nil {
		a.by[tenant] = map[string]*analysedApp{}
		a.bundles[tenant] = map[string]*analysedApp{}
	}
	a.by[tenant][r.App.ID] = app
	if bundle != "" {
		a.bundles[tenant][bundle] = app
	}
	return r, nil
}

// bundle returns the report of the bundle named app, or nil.
func (a *apps) bundle(tenant, app string) *analysis.Report {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if b := a.bundles[tenant][safeName(app)]; b != nil {
		return b.report
	}
	return nil
}

// get returns the report of the tenant's app id, or nil.
func (a *apps) get(tenant, id string) *analysis.Report {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if app := a.by[tenant][id]; app != nil {
		return app.report
	}
	return nil
}

// tasks returns the tasks of the tenant's app id by task id, or nil.
func (a *apps) tasks(tenant, id string) map[int64]*spark.Task {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if app := a.by[tenant][id]; app != nil {
		return app.tasks
	}
	return nil
}

// stageWindow returns the time the tasks of a stage of an app can have
// samples in (analysedApp.stageWindow); false when the app's task model
// is not known or the stage has no tasks.
func (a *apps) stageWindow(tenant, id string, stage int) (from, until int64, ok bool) {
	a.mu.RLock()
	app := a.by[tenant][id]
	a.mu.RUnlock()
	if app == nil {
		return 0, 0, false
	}
	return app.stageWindow(stage)
}

// AppSummary is one row of the apps list.
type AppSummary struct {
	spark.Summary
	// Status is finished, running (no ApplicationEnd), or profiles (an app
	// whose samples carry its id, from an agent, but whose event log the
	// server has not read).
	Status        string `json:"status"`
	FindingsCount int    `json:"findingsCount"`
	Critical      int    `json:"criticalFindings"`
}

func (s *Server) handleApps(w http.ResponseWriter, r *http.Request) {
	ten := tenant(r)
	s.apps.mu.RLock()
	out := []AppSummary{}
	analysed := map[string]bool{}
	for id, app := range s.apps.by[ten] {
		analysed[id] = true
		rep := app.report
		row := AppSummary{Summary: rep.App, Status: "finished", FindingsCount: len(rep.Findings)}
		if rep.App.EndMs == 0 {
			row.Status = "running"
		}
		for _, f := range rep.Findings {
			if f.Severity == analysis.Critical {
				row.Critical++
			}
		}
		row.Config = nil
		out = append(out, row)
	}
	s.apps.mu.RUnlock()
	profiled, err := s.profiledApps(r, ten, analysed)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	out = append(out, profiled...)
	sort.Slice(out, func(i, j int) bool { return out[i].StartMs > out[j].StartMs })
	writeJSON(w, out)
}

// profiledApps returns a row for each app id the tenant's samples carry
// (an agent's uploads name their app) that is not among the analysed
// apps: a user who set up the agent but not the event logs finds the app
// in the list, with the span of its uploads and its service name.
func (s *Server) profiledApps(r *http.Request, ten string, analysed map[string]bool) ([]AppSummary, error) {
	ids, err := s.labelValues(r.Context(), ten, profile.LabelAppID, store.Query{})
	if err != nil {
		return nil, err
	}
	var out []AppSummary
	for id := range ids[profile.LabelAppID] {
		if analysed[id] || id == "" {
			continue
		}
		row := AppSummary{Summary: spark.Summary{ID: id}, Status: "profiles"}
		m := []profile.Matcher{{Name: profile.LabelAppID, Op: profile.MatchEqual, Value: id}}
		err := s.cfg.Store.Select(ten, store.Query{Matchers: m, SampleMatchers: m}, func(u *store.Upload) error {
			if u.From > 0 && (row.StartMs == 0 || u.From/1e6 < row.StartMs) {
				row.StartMs = u.From / 1e6
			}
			row.EndMs = max(row.EndMs, u.Until/1e6)
			if row.Name == "" {
				row.Name = serviceName(u)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		// Still receiving, or not: there is no end event to tell.
		row.DurationMs, row.EndMs = max(row.EndMs-row.StartMs, 0), 0
		out = append(out, row)
	}
	return out, nil
}

// serviceName returns the service name of upload u: its own label, or for
// a compacted block the one its samples carry, when they carry one only.
func serviceName(u *store.Upload) string {
	if name, ok := u.Labels.Get(profile.LabelServiceName); ok {
		return name
	}
	if names := u.LabelValues()[profile.LabelServiceName]; len(names) == 1 {
		return names[0]
	}
	return ""
}

// appDetail is the answer of /api/v1/apps/{id}: the analysis report with
// the tasks (for timelines).
type appDetail struct {
	*analysis.Report
	Tasks any `json:"tasks"` // []*spark.Task, or []briefTask
}

// briefTask is what the app page's timeline draws of a task: a fifth of
// the bytes of a task with its metrics, for apps of hundreds of thousands.
type briefTask struct {
	ID         int64  `json:"taskId"`
	StageID    int    `json:"stageId"`
	Partition  int    `json:"partition"`
	ExecutorID string `json:"executorId"`
	LaunchMs   int64  `json:"launchMs"`
	FinishMs   int64  `json:"finishMs"`
	Status     string `json:"status"`
}

func briefTasks(ts []*spark.Task) []briefTask {
	out := make([]briefTask, len(ts))
	for i, t := range ts {
		out[i] = briefTask{t.ID, t.StageID, t.Partition, t.ExecutorID, t.LaunchMs, t.FinishMs, t.Status}
	}
	return out
}

func (s *Server) handleApp(w http.ResponseWriter, r *http.Request) {
	rep := s.apps.get(tenant(r), r.PathValue("id"))
	if rep == nil {
		httpError(w, http.StatusNotFound, "no application %q: import its event log first", r.PathValue("id"))
		return
	}
	withLive := s.withLive(r.Context(), tenant(r), rep)
	var tasks any = rep.Tasks
	switch v := r.URL.Query().Get("tasks"); v {
	case "", "all":
	case "brief":
		tasks = briefTasks(rep.Tasks)
	default:
		httpError(w, http.StatusBadRequest, "tasks=%q: want all (with their metrics) or brief (what a timeline draws)", v)
		return
	}
	writeJSON(w, appDetail{withLive, tasks})
}

// withLive returns a copy of rep with what the store holds of the app
// now: its live uploads' metric series, and stragglers explained from
// their tasks' samples.
func (s *Server) withLive(ctx context.Context, ten string, rep *analysis.Report) *analysis.Report {
	live := *rep
	live.Metrics = s.withLiveMetrics(ten, rep)
	live.Findings = s.explainStragglers(ctx, ten, rep)
	return &live
}

// explainStragglers returns the findings of rep, each straggler's saying
// where its task's samples in the store went, if any are there (agents
// may send them after the event log came). It reads only the task's
// window; a query that fails leaves the finding as it was.
func (s *Server) explainStragglers(ctx context.Context, ten string, rep *analysis.Report) []analysis.Finding {
	var out []analysis.Finding // a copy, once a finding changes: rep is shared
	tasks := s.apps.tasks(ten, rep.App.ID)
	for i, f := range rep.Findings {
		ev, ok := f.Evidence.(*analysis.StragglerEvidence)
		if !ok || f.TaskID == nil || ev.Profile != nil {
			continue
		}
		task := tasks[*f.TaskID]
		if task == nil {
			continue
		}
		ms := []profile.Matcher{
			{Name: profile.LabelAppID, Op: profile.MatchEqual, Value: rep.App.ID},
			{Name: profile.LabelTaskID, Op: profile.MatchEqual, Value: strconv.FormatInt(task.ID, 10)},
		}
		from, until := tasksWindow([]*spark.Task{task})
		req := newRequest(ms, "", from, until)
		req.labels = noLabels
		p, err := s.merge(ctx, ten, req)
		if err != nil {
			s.log.Warn("straggler samples", "app", rep.App.ID, "task", task.ID, "err", err)
			continue
		}
		if analysis.ExplainStraggler(&f, p) {
			if out == nil {
				out = slices.Clone(rep.Findings)
			}
			out[i] = f
		}
	}
	if out == nil {
		return rep.Findings
	}
	return out
}

// handleSlowVsRest diffs the slowest percent of a stage's tasks against the
// others: base = typical tasks, next = slow tasks, by spark_task_id labels,
// restricted to the app's samples.
func (s *Server) handleSlowVsRest(w http.ResponseWriter, r *http.Request) {
	rep := s.apps.get(tenant(r), r.PathValue("id"))
	if rep == nil {
		httpError(w, http.StatusNotFound, "no application %q", r.PathValue("id"))
		return
	}
	stage, err := strconv.Atoi(r.PathValue("stage"))
	if err != nil {
		httpError(w, http.StatusBadRequest, "stage: %v", err)
		return
	}
	pct := 10.0
	if p := r.URL.Query().Get("percent"); p != "" {
		if pct, err = strconv.ParseFloat(p, 64); err != nil || pct <= 0 || pct >= 100 {
			httpError(w, http.StatusBadRequest, "percent: want a number between 0 and 100")
			return
		}
	}
	var tasks []*spark.Task
	for _, t := range rep.Tasks {
		if t.StageID == stage && t.FinishMs > 0 {
			tasks = append(tasks, t)
		}
	}
	if len(tasks) < 2 {
		httpError(w, http.StatusNotFound, "stage %d has %d finished tasks; a diff needs two", stage, len(tasks))
		return
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].DurationMs() > tasks[j].DurationMs() })
	nSlow := min(max(1, int(float64(len(tasks))*pct/100+0.5)), len(tasks)-1) // neither side empty
	ids := func(ts []*spark.Task) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = strconv.FormatInt(t.ID, 10)
		}
		return strings.Join(parts, "|")
	}
	app := `spark_app_id="` + rep.App.ID + `"`
	q := r.URL.Query()
	// Task ids are unique within an app, and Spark 2.x thread names carry
	// no stage: select by task id alone, the stage's tasks in one pass,
	// split into the slow and the rest.
	q.Set("query", fmt.Sprintf(`{%s, spark_task_id=~"%s"}`, app, ids(tasks)))
	slowTasks, err := profile.NewMatcher(profile.LabelTaskID, profile.MatchRegexp, ids(tasks[:nSlow]))
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// Only the time the stage's tasks ran holds their samples (the join
	// to task windows takes a task's labels off samples outside its
	// window): a range narrowed to it reads a stage of a long app from
	// the blocks' time slices it overlaps, not from every block.
	if from, until, err := parseRange(q, ""); err == nil {
		lo, hi := tasksWindow(tasks)
		from, until = narrowRange(from, until, lo, hi)
		for name, t := range map[string]int64{"from": from, "until": until} {
			if t != 0 {
				q.Set(name, strconv.FormatInt(t, 10))
			}
		}
	}
	r.URL.RawQuery = q.Encode()
	limit, err := maxNodes(r, 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	req, err := parseRequest(r, "query")
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	slowMerged, restMerged, err := s.splitMerge(r.Context(), tenant(r), req, slowTasks)
	if err != nil {
		mergeFailed(w, err)
		return
	}
	slow := make([]int64, nSlow)
	for i, t := range tasks[:nSlow] {
		slow[i] = t.ID
	}
	writeDiff(w, restMerged, slowMerged, req.typ, limit, map[string]any{
		"slowTaskIds":  slow,
		"restTasks":    len(tasks) - nSlow,
		"thresholdMs":  tasks[nSlow-1].DurationMs(), // the shortest slow task
		"restMedianMs": tasks[nSlow+(len(tasks)-nSlow)/2].DurationMs(),
	})
}
