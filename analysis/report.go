package analysis

import (
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
)

// Report is the result of `sparkprof analyze` for one application; its JSON
// form is documented in docs/analyze-json.md and kept stable.
type Report struct {
	App       spark.Summary         `json:"app"`
	Executors []*spark.Executor     `json:"executors"`
	Jobs      []*spark.Job          `json:"jobs"`
	Stages    []*spark.Stage        `json:"stages"`
	SQL       []*spark.SQLExecution `json:"sql"`
	// Environment is the application's full environment (Spark, Hadoop
	// and system properties, classpath), when its event log has one.
	Environment *spark.Environment `json:"environment,omitempty"`
	Findings    []Finding          `json:"findings"`
	// Exclusions are the executors and nodes excluded after failures,
	// and let back in.
	Exclusions []spark.ExclusionEvent `json:"exclusions"`
	// Recommendations are the costly code patterns the profiles show.
	Recommendations []Recommendation `json:"recommendations"`
	// Python is the time PySpark's Python workers spent serving tasks, when
	// the profiles have their samples.
	Python *PythonTime `json:"python,omitempty"`
	// Metrics are per-executor metric series (CPU load, heap, GC) from
	// profiler records, for the timeline.
	Metrics []Series `json:"metrics,omitempty"`
	// Sources lists the inputs, with what each was read as.
	Sources []Source `json:"sources"`
	// Tasks are kept for the HTML timeline; JSON leaves them out.
	Tasks []*spark.Task `json:"-"`
}

// Series is a metric over time for one executor (or process).
type Series struct {
	Name       string `json:"name"`
	Unit       string `json:"unit"`
	ExecutorID string `json:"executorId,omitempty"`
	Source     string `json:"source,omitempty"`
	// Labels tell apart the series of one name and executor: the garbage
	// collector, memory pool or process ("gc": "PS Scavenge").
	Labels map[string]string `json:"labels,omitempty"`
	Points [][2]int64        `json:"points"` // [time ms, value]; fractions are scaled by 1000 (unit "permille")
}

// Source is one input of an analysis, as its report lists it: the path
// and what it was read as.
type Source struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // eventlog, logs, profile
}

// NewReport assembles the report of in with its findings.
func NewReport(in Input, findings []Finding, sources []Source, profiles []*profile.Profile) *Report {
	app := in.App
	r := &Report{
		App:       app.Summary,
		Executors: nonNil(app.Executors), Jobs: nonNil(app.Jobs), Stages: nonNil(app.Stages), SQL: nonNil(app.SQL),
		Environment: app.Environment, Findings: nonNil(findings), Exclusions: nonNil(app.Exclusion), Recommendations: []Recommendation{},
		Sources: sources, Tasks: app.Tasks,
	}
	for _, p := range profiles {
		r.Metrics = append(r.Metrics, metricSeries(p)...)
	}
	return r
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// metricSeries converts a profile's series to report series.
func metricSeries(p *profile.Profile) []Series {
	exec, _ := p.Labels.Get(profile.LabelExecutorID)
	return ReportSeries(p.Series, exec, p.Source)
}

// ReportSeries converts metric series to report series: times in ms,
// fractional values (CPU load) in permille so that they stay integers, at
// most ~2,000 points each. A series without an executor label gets exec.
func ReportSeries(ss []profile.Series, exec, source string) []Series {
	var out []Series
	for _, s := range ss {
		rs := Series{Name: s.Name, Unit: s.Unit, ExecutorID: exec, Source: source}
		for _, l := range s.Labels {
			if l.Name == profile.LabelExecutorID {
				rs.ExecutorID = l.Value
				continue
			}
			if rs.Labels == nil {
				rs.Labels = make(map[string]string, len(s.Labels))
			}
			rs.Labels[l.Name] = l.Value
		}
		scale := 1.0
		if rs.Unit == "" || rs.Unit == "ratio" || rs.Unit == "fraction" {
			scale, rs.Unit = 1000, "permille"
		}
		step := max(len(s.Points)/2000, 1) // keep reports small
		for i := 0; i < len(s.Points); i += step {
			pt := s.Points[i]
			rs.Points = append(rs.Points, [2]int64{pt.Time / 1e6, int64(pt.Value * scale)})
		}
		out = append(out, rs)
	}
	return out
}
