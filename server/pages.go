package server

import (
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/sparkprof/sparkprof/analysis"
	"github.com/sparkprof/sparkprof/flamegraph"
	"github.com/sparkprof/sparkprof/profile"
)

// The landing page lists the applications with data and links to their
// flame graphs, until the web UI (issue 5) replaces it.
var landing = template.Must(template.New("landing").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>sparkprof</title>
<style>body{font:14px system-ui,sans-serif;margin:24px}td,th{padding:3px 10px;text-align:left}</style></head>
<body><h1>sparkprof</h1>
<h2>Spark applications</h2>
<table><tr><th>application</th><th>id</th><th>Spark</th><th>duration</th><th>tasks</th><th>findings</th></tr>
{{range .Analysed}}<tr><td><a href="/apps/{{.ID}}/report">{{.Name}}</a></td><td>{{.ID}}</td><td>{{.SparkVersion}}</td><td>{{.Duration}}</td><td>{{.TaskCount}} ({{.FailedTaskCount}} not successful)</td><td>{{.FindingsCount}} ({{.Critical}} critical)</td></tr>
{{else}}<tr><td colspan="6">No event logs yet: <code>sparkprof import --server URL EVENTLOG</code>.</td></tr>{{end}}
</table>
<h2>Profiles</h2>
<p>Applications with profiles on this server (tenant {{printf "%q" .Tenant}}):</p>
<table><tr><th>application</th><th>flame graphs</th><th>export</th></tr>
{{range .Apps}}<tr><td>{{.Name}}</td><td>{{range .Types}}<a href="/flame?{{.Query}}">{{.Family}}</a> {{end}}</td>
<td><a href="/api/v1/export?format=pprof&amp;{{.Export}}">pprof</a> <a href="/api/v1/export?format=folded&amp;{{.Export}}">folded</a> <a href="/api/v1/export?format=speedscope&amp;{{.Export}}">speedscope</a></td></tr>
{{else}}<tr><td colspan="3">No data yet: point an agent at /ingest or start with --preload.</td></tr>{{end}}
</table>
<p>API: <a href="/api/v1/agents">agents</a> · <a href="/api/v1/labels">label names</a> · <a href="/metrics">metrics</a> · <a href="/healthz">health</a></p>
</body></html>`))

type landingApp struct {
	Name   string
	Export template.URL
	Types  []struct {
		Family string
		Query  template.URL
	}
}

func (s *Server) handleLanding(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	vals, err := s.labelValues(r)
	if err != nil {
		httpError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	var apps []landingApp
	names := make([]string, 0, len(vals[profile.LabelServiceName]))
	for n := range vals[profile.LabelServiceName] {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sel := `{service_name="` + n + `"}`
		a := landingApp{Name: n, Export: template.URL(url.Values{"query": {sel}}.Encode())}
		for _, fam := range []string{"cpu", "wall", "alloc", "lock", "samples"} {
			a.Types = append(a.Types, struct {
				Family string
				Query  template.URL
			}{fam, template.URL(url.Values{"query": {sel}, "type": {fam}}.Encode())})
		}
		apps = append(apps, a)
	}
	type analysed struct {
		AppSummary
		Duration string
	}
	var list []analysed
	s.apps.mu.RLock()
	for _, rep := range s.apps.by[tenant(r)] {
		a := analysed{AppSummary: AppSummary{AppSummary: rep.App, FindingsCount: len(rep.Findings)}, Duration: (time.Duration(rep.App.DurationMs) * time.Millisecond).String()}
		for _, f := range rep.Findings {
			if f.Severity == analysis.Critical {
				a.Critical++
			}
		}
		list = append(list, a)
	}
	s.apps.mu.RUnlock()
	sort.Slice(list, func(i, j int) bool { return list[i].StartMs > list[j].StartMs })
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	landing.Execute(w, map[string]any{"Tenant": tenant(r), "Apps": apps, "Analysed": list})
}

// handleReport serves an application's offline HTML report (timeline,
// findings, stages, executors).
func (s *Server) handleReport(w http.ResponseWriter, r *http.Request) {
	rep := s.apps.get(tenant(r), r.PathValue("id"))
	if rep == nil {
		httpError(w, http.StatusNotFound, "no application %q", r.PathValue("id"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := analysis.WriteHTML(w, rep); err != nil {
		s.log.Warn("report failed", "err", err)
	}
}

// handleFlame renders the selection as the self-contained HTML flame graph
// of package flamegraph.
func (s *Server) handleFlame(w http.ResponseWriter, r *http.Request) {
	p, req, ok := s.selection(w, r, "query")
	if !ok {
		return
	}
	if len(p.Samples) == 0 {
		httpError(w, http.StatusNotFound, "no samples match %s", r.URL.Query().Get("query"))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := flamegraph.HTML(w, p, flamegraph.Options{Title: r.URL.Query().Get("query"), Type: req.typ}); err != nil {
		s.log.Warn("flame page failed", "err", err)
	}
}
