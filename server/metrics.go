package server

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sparkprof/sparkprof/profile"
)

// metrics are the server's own counters, served in Prometheus text format.
type metrics struct {
	mu                       sync.Mutex
	uploads, samples, bytes  int64
	errors                   map[int]int64
	ingestSeconds, querySecs float64
	queries                  int64
}

func newMetrics() *metrics { return &metrics{errors: map[int]int64{}} }

func (m *metrics) uploaded(bytes, samples int, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uploads++
	m.bytes += int64(bytes)
	m.samples += int64(samples)
	m.ingestSeconds += d.Seconds()
}

func (m *metrics) uploadError(code int) {
	m.mu.Lock()
	m.errors[code]++
	m.mu.Unlock()
}

// queried counts a query that began at start.
func (m *metrics) queried(start time.Time) {
	d := time.Since(start)
	m.mu.Lock()
	m.queries++
	m.querySecs += d.Seconds()
	m.mu.Unlock()
}

// handleMetrics serves the server's counters and the store's state in
// Prometheus text format.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.metrics.write(w)
	st := s.cfg.Store.Stats()
	for _, m := range []struct {
		name, help, typ string
		v               int64
	}{
		{"sparkprof_store_head_uploads", "Uploads in the write-ahead log, not compacted yet.", "gauge", int64(st.HeadUploads)},
		{"sparkprof_store_head_bytes", "Estimated memory of the uploads not compacted yet.", "gauge", st.HeadBytes},
		{"sparkprof_store_blocks", "Compacted blocks.", "gauge", int64(st.Blocks)},
		{"sparkprof_store_block_uploads", "Uploads the compacted blocks hold.", "gauge", int64(st.BlockUploads)},
		{"sparkprof_store_compactions_total", "Blocks written by compaction.", "counter", st.Compactions},
		{"sparkprof_store_compaction_errors_total", "Compactions that failed; their uploads stay in the log.", "counter", st.CompactionErrors},
		{"sparkprof_store_cache_bytes", "Estimated memory of the block parts cached for queries.", "gauge", st.CacheBytes},
		{"sparkprof_store_cache_hits_total", "Block part reads the cache answered.", "counter", st.CacheHits},
		{"sparkprof_store_cache_misses_total", "Block part reads that went to disk.", "counter", st.CacheMisses},
		{"sparkprof_store_cache_evictions_total", "Block parts dropped from the cache to stay within its budget.", "counter", st.CacheEvictions},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", m.name, m.help, m.name, m.typ, m.name, m.v)
	}
	fmt.Fprintf(w, "# HELP sparkprof_store_compaction_seconds_total Time spent compacting uploads into blocks.\n# TYPE sparkprof_store_compaction_seconds_total counter\nsparkprof_store_compaction_seconds_total %g\n", st.CompactionTime.Seconds())
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintf(w, "# HELP sparkprof_uploads_total Profiles ingested.\n# TYPE sparkprof_uploads_total counter\nsparkprof_uploads_total %d\n", m.uploads)
	fmt.Fprintf(w, "# HELP sparkprof_upload_bytes_total Request bytes ingested.\n# TYPE sparkprof_upload_bytes_total counter\nsparkprof_upload_bytes_total %d\n", m.bytes)
	fmt.Fprintf(w, "# HELP sparkprof_samples_total Samples ingested.\n# TYPE sparkprof_samples_total counter\nsparkprof_samples_total %d\n", m.samples)
	fmt.Fprintf(w, "# HELP sparkprof_ingest_seconds_total Time spent ingesting.\n# TYPE sparkprof_ingest_seconds_total counter\nsparkprof_ingest_seconds_total %g\n", m.ingestSeconds)
	fmt.Fprintf(w, "# HELP sparkprof_upload_errors_total Rejected uploads by status code.\n# TYPE sparkprof_upload_errors_total counter\n")
	codes := make([]int, 0, len(m.errors))
	for c := range m.errors {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		fmt.Fprintf(w, "sparkprof_upload_errors_total{code=\"%d\"} %d\n", c, m.errors[c])
	}
	fmt.Fprintf(w, "# HELP sparkprof_queries_total Flame graph queries.\n# TYPE sparkprof_queries_total counter\nsparkprof_queries_total %d\n", m.queries)
	fmt.Fprintf(w, "# HELP sparkprof_query_seconds_total Time spent answering queries.\n# TYPE sparkprof_query_seconds_total counter\nsparkprof_query_seconds_total %g\n", m.querySecs)
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
	Dropped   int64  `json:"dropped"`
	Errors    int64  `json:"errors"`
	LastError string `json:"lastError,omitempty"`
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
// windows it dropped so far.
func (a *agents) uploaded(s sender, bytes int, dropped int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ag := a.of(s, false)
	ag.Uploads++
	ag.Bytes += int64(bytes)
	ag.Dropped = max(ag.Dropped, dropped)
	ag.Last = time.Now().UnixMilli()
}

// maxFailedAgents bounds the senders the list keeps for failed uploads
// alone: a sender that never succeeds (a wrong token, a broken name) gets
// a row until then, so that anyone on the network cannot grow it without
// end.
const maxFailedAgents = 10_000

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
