package server

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// metrics are the server's own metrics and the store's state, served at
// /metrics in Prometheus format with the Go runtime's and the process's
// (process_cpu_seconds_total over sparkprof_uploads_total is the server's
// CPU per upload).
type metrics struct {
	reg                     *prometheus.Registry
	uploads, bytes, samples prometheus.Counter
	duplicates              prometheus.Counter
	ingest, query           prometheus.Histogram
	errors                  *prometheus.CounterVec
	waiting                 prometheus.Gauge
}

func newMetrics(st store.Store) *metrics {
	m := &metrics{
		reg:     prometheus.NewRegistry(),
		uploads: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_uploads_total", Help: "Profiles ingested."}),
		bytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_upload_bytes_total", Help: "Request bytes ingested."}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_samples_total", Help: "Samples ingested."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_upload_duplicates_total",
			Help: "Uploads not stored again: retries whose Idempotency-Key was stored already."}),
		ingest: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sparkprof_ingest_duration_seconds",
			Help: "Time from an upload's arrival to its acknowledgement (decode, label, write-ahead log with fsync).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		query: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sparkprof_query_duration_seconds",
			Help: "Time to answer a query (flame graphs, diffs, series, labels).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sparkprof_upload_errors_total", Help: "Rejected uploads by HTTP status code."}, []string{"code"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sparkprof_uploads_waiting",
			Help: "Uploads waiting for a turn to be read and decoded (serve --max-concurrent-uploads)."}),
	}
	m.reg.MustRegister(m.uploads, m.bytes, m.samples, m.duplicates, m.ingest, m.query, m.errors, m.waiting, storeCollector{st},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) uploaded(bytes, samples int, d time.Duration) {
	m.uploads.Inc()
	m.bytes.Add(float64(bytes))
	m.samples.Add(float64(samples))
	m.ingest.Observe(d.Seconds())
}

func (m *metrics) uploadError(code int) {
	m.errors.WithLabelValues(strconv.Itoa(code)).Inc()
}

// handler serves the metrics in Prometheus format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// storeCollector reports the store's state, read once per scrape.
type storeCollector struct{ st store.Store }

var storeMetrics = []struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(store.Stats) float64
}{
	{prometheus.NewDesc("sparkprof_store_head_uploads", "Uploads in the write-ahead log, not compacted yet.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.HeadUploads) }},
	{prometheus.NewDesc("sparkprof_store_head_bytes", "Estimated memory of the uploads not compacted yet.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.HeadBytes) }},
	{prometheus.NewDesc("sparkprof_store_blocks", "Compacted blocks.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.Blocks) }},
	{prometheus.NewDesc("sparkprof_store_block_uploads", "Uploads the compacted blocks hold.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.BlockUploads) }},
	{prometheus.NewDesc("sparkprof_store_disk_bytes", "Bytes of the store's files: compacted blocks and write-ahead log segments.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.DiskBytes) }},
	{prometheus.NewDesc("sparkprof_store_upload_keys", "Upload keys remembered to refuse retries stored already (serve --key-window).", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.UploadKeys) }},
	{prometheus.NewDesc("sparkprof_store_compactions_total", "Blocks written by compaction.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.Compactions) }},
	{prometheus.NewDesc("sparkprof_store_compaction_errors_total", "Compactions that failed; their uploads stay in the log.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.CompactionErrors) }},
	{prometheus.NewDesc("sparkprof_store_compaction_seconds_total", "Time spent compacting uploads into blocks.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return s.CompactionTime.Seconds() }},
	{prometheus.NewDesc("sparkprof_store_cache_bytes", "Estimated memory of the block parts cached for queries.", nil, nil), prometheus.GaugeValue,
		func(s store.Stats) float64 { return float64(s.CacheBytes) }},
	{prometheus.NewDesc("sparkprof_store_cache_hits_total", "Block part reads the cache answered.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.CacheHits) }},
	{prometheus.NewDesc("sparkprof_store_cache_misses_total", "Block part reads that went to disk.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.CacheMisses) }},
	{prometheus.NewDesc("sparkprof_store_cache_evictions_total", "Block parts dropped from the cache to stay within its budget.", nil, nil), prometheus.CounterValue,
		func(s store.Stats) float64 { return float64(s.CacheEvictions) }},
}

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range storeMetrics {
		ch <- m.desc
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.st.Stats()
	for _, m := range storeMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(st))
	}
}

// agents tracks who sends data, so that a user sees at once why nothing
// shows up.
type agents struct {
	mu sync.Mutex
	by map[string]*Agent
}

// Agent is one sender: an app's executor on a host.
type Agent struct {
	Tenant     string `json:"tenant"`
	App        string `json:"app"`
	AppID      string `json:"appId,omitempty"`
	ExecutorID string `json:"executorId,omitempty"`
	Host       string `json:"host,omitempty"`
	Remote     string `json:"remote"`
	First      int64  `json:"firstUploadMs"`
	Last       int64  `json:"lastUploadMs"`
	SpyName    string `json:"spyName,omitempty"` // the client, as its uploads name it
	Uploads    int64  `json:"uploads"`
	Bytes      int64  `json:"bytes"`
	// Dropped counts the windows the agent dropped while it could not
	// send them (its uploads' dropped parameter).
	Dropped int64 `json:"dropped"`
	// Retried counts uploads sent again after they were stored: their
	// answers were lost (timeouts between sender and server), the retries
	// not stored twice.
	Retried int64 `json:"retried"`
	// WindowLagMs is how long before the server received it the last
	// upload's window ended (negative: after), for live uploads that say
	// their window. A live agent's is seconds; hours mean the sender's
	// clock is off, and its samples show that far from now.
	WindowLagMs *int64 `json:"windowLagMs,omitempty"`
	Errors      int64  `json:"errors"`
	LastError   string `json:"lastError,omitempty"`
}

func newAgents() *agents { return &agents{by: map[string]*Agent{}} }

// sender identifies the agent of an upload: its labels, or the name it
// gave when that did not parse.
type sender struct {
	tenant, remote, spyName string
	labels                  profile.Labels
	name                    string
}

// row returns the fields that tell s's row apart, and its key.
func (s sender) row() (Agent, string) {
	ag := Agent{Tenant: s.tenant, App: s.name}
	if s.labels != nil {
		get := func(n string) string { v, _ := s.labels.Get(n); return v }
		ag.App, ag.AppID, ag.ExecutorID, ag.Host = get(profile.LabelServiceName), get(profile.LabelAppID), get(profile.LabelExecutorID), get(profile.LabelHost)
	}
	return ag, strings.Join([]string{ag.Tenant, ag.App, ag.AppID, ag.ExecutorID, ag.Host}, "\x00")
}

// of returns s's row, adding it if needed; for a failed upload (failed)
// only while the list has room (maxFailedAgents), else it returns nil.
func (a *agents) of(s sender, failed bool) *Agent {
	row, key := s.row()
	ag := a.by[key]
	if ag == nil {
		if failed && len(a.by) >= maxFailedAgents {
			return nil
		}
		row.First = time.Now().UnixMilli()
		ag = &row
		a.by[key] = ag
	}
	ag.Remote = s.remote
	if s.spyName != "" {
		ag.SpyName = s.spyName
	}
	return ag
}

// uploaded counts an upload of bytes; dropped is the sender's count of
// windows it dropped so far, windowEnd the end of the upload's window
// (Unix ns; 0 for an import, whose files may be of any age).
func (a *agents) uploaded(s sender, bytes int, dropped, windowEnd int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, false)
	ag.Uploads++
	ag.Bytes += int64(bytes)
	ag.Dropped = max(ag.Dropped, dropped)
	now := time.Now()
	ag.Last = now.UnixMilli()
	if windowEnd != 0 {
		lag := now.Sub(time.Unix(0, windowEnd)).Milliseconds()
		ag.WindowLagMs = &lag
	}
}

// maxFailedAgents bounds the senders the list keeps for failed uploads
// alone: a sender that never succeeds (a wrong token, a broken name) gets
// a row until then, so that anyone on the network cannot grow it without
// end.
const maxFailedAgents = 10_000

// retried counts an upload that was stored before, sent again.
func (a *agents) retried(s sender) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, false)
	ag.Retried++
	ag.Last = time.Now().UnixMilli()
}

func (a *agents) failed(s sender, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, true)
	if ag == nil {
		return
	}
	ag.Errors++
	ag.LastError = why
	ag.Last = time.Now().UnixMilli()
}

func (s *Server) handleAgents(w http.ResponseWriter, r *http.Request) {
	s.agents.mu.Lock()
	out := []Agent{}
	for _, a := range s.agents.by {
		if a.Tenant == tenant(r) {
			out = append(out, *a)
		}
	}
	s.agents.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Last > out[j].Last })
	writeJSON(w, out)
}
