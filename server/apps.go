package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/eventlog"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// apps holds the analysed applications of each tenant, from imported
// event logs. The logs themselves are kept in dir and analysed again at
// start.
type apps struct {
	dir string
	mu  sync.RWMutex
	by  map[string]map[string]*analysis.Report // tenant -> app id -> report
}

func newApps(dir string) *apps {
	return &apps{dir: dir, by: map[string]map[string]*analysis.Report{}}
}

// load analyses every event log saved under dir.
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
		logs, _ := os.ReadDir(filepath.Join(a.dir, t.Name()))
		for _, l := range logs {
			if _, err := a.analyse(name, filepath.Join(a.dir, t.Name(), l.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// add saves an event log for tenant and analyses it.
func (a *apps) add(tenant, name string, data []byte) (*analysis.Report, error) {
	dir := filepath.Join(a.dir, store.TenantDir(tenant))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, unsafeName.ReplaceAllString(filepath.Base(name), "_"))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, err
	}
	r, err := a.analyse(tenant, tmp)
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

func (a *apps) analyse(tenant, path string) (*analysis.Report, error) {
	rd, err := eventlog.Open(path)
	if err != nil {
		return nil, err
	}
	app, rep, err := spark.Build(rd)
	rd.Close()
	if err != nil {
		return nil, err
	}
	if app.ID == "" {
		return nil, fmt.Errorf("%s: no SparkListenerApplicationStart: not an event log", filepath.Base(path))
	}
	in := analysis.Input{App: app, Report: rep}
	r := analysis.NewReport(in, analysis.Analyze(in, analysis.DefaultThresholds), []analysis.Source{{Path: filepath.Base(path), Kind: "eventlog"}}, nil)
	a.mu.Lock()
	if a.by[tenant] == nil {
		a.by[tenant] = map[string]*analysis.Report{}
	}
	a.by[tenant][app.ID] = r
	a.mu.Unlock()
	return r, nil
}

func (a *apps) get(tenant, id string) *analysis.Report {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.by[tenant][id]
}

// AppSummary is one row of the apps list.
type AppSummary struct {
	analysis.AppSummary
	Status        string `json:"status"` // finished or running (no ApplicationEnd)
	FindingsCount int    `json:"findingsCount"`
	Critical      int    `json:"criticalFindings"`
}

func (s *Server) handleApps(w http.ResponseWriter, r *http.Request) {
	s.apps.mu.RLock()
	out := []AppSummary{}
	for _, rep := range s.apps.by[tenant(r)] {
		row := AppSummary{AppSummary: rep.App, Status: "finished", FindingsCount: len(rep.Findings)}
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
	sort.Slice(out, func(i, j int) bool { return out[i].StartMs > out[j].StartMs })
	writeJSON(w, out)
}

// appDetail is the answer of /api/v1/apps/{id}: the analysis report with
// the tasks (for timelines).
type appDetail struct {
	*analysis.Report
	Tasks []*spark.Task `json:"tasks"`
}

func (s *Server) handleApp(w http.ResponseWriter, r *http.Request) {
	rep := s.apps.get(tenant(r), r.PathValue("id"))
	if rep == nil {
		httpError(w, http.StatusNotFound, "no application %q: import its event log first", r.PathValue("id"))
		return
	}
	writeJSON(w, appDetail{rep, rep.Tasks})
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
	nSlow := max(1, int(float64(len(tasks))*pct/100+0.5))
	ids := func(ts []*spark.Task) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = strconv.FormatInt(t.ID, 10)
		}
		return strings.Join(parts, "|")
	}
	app := `spark_app_id="` + rep.App.ID + `"`
	q := r.URL.Query()
	q.Set("base", fmt.Sprintf(`{%s, spark_stage_id="%d", spark_task_id=~"%s"}`, app, stage, ids(tasks[nSlow:])))
	q.Set("next", fmt.Sprintf(`{%s, spark_stage_id="%d", spark_task_id=~"%s"}`, app, stage, ids(tasks[:nSlow])))
	r.URL.RawQuery = q.Encode()
	s.handleDiff(w, r)
}

// ImportEventLog saves and analyses an event log for tenant, as POST
// /api/v1/import does.
func (s *Server) ImportEventLog(tenant, name string, data []byte) error {
	_, err := s.apps.add(tenant, name, data)
	return err
}
