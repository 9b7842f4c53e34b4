package server

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/store"
)

// metrics are the server's own metrics (the ingest pipeline registers its
// own with them) and the store's state, served at
// /metrics in Prometheus format with the Go runtime's and the process's
// (process_cpu_seconds_total over sparkprof_uploads_total is the server's
// CPU per upload).
type metrics struct {
	reg    *prometheus.Registry
	query  prometheus.Histogram
	errors *prometheus.CounterVec
	panics prometheus.Counter
}

func newMetrics(st store.Store, apps *appstore.Store) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		query: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sparkprof_query_duration_seconds",
			Help: "Time to answer a query (flame graphs, diffs, series, labels).", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sparkprof_upload_errors_total", Help: "Rejected uploads by HTTP status code."}, []string{"code"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_http_panics_total",
			Help: "Requests whose handler panicked, answered 500 with the request id the log names."}),
	}
	skipped := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sparkprof_apps_skipped",
		Help: "Saved event logs and container-log bundles not loaded at start, as they could not be analysed (the log names them)."},
		func() float64 { return float64(len(apps.Skipped())) })
	m.reg.MustRegister(m.query, m.errors, m.panics, skipped, storeCollector{st},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
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

// bucketMetrics are reported by a store with a bucket (serve --storage).
var bucketMetrics = []struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	value func(*store.BucketStats) float64
}{
	{prometheus.NewDesc("sparkprof_bucket_flushes_total", "Head segments shipped to the bucket.", nil, nil), prometheus.CounterValue,
		func(s *store.BucketStats) float64 { return float64(s.Flushes) }},
	{prometheus.NewDesc("sparkprof_bucket_errors_total", "Requests to the bucket that failed.", nil, nil), prometheus.CounterValue,
		func(s *store.BucketStats) float64 { return float64(s.Errors) }},
	{prometheus.NewDesc("sparkprof_bucket_compactions_total", "Blocks this node compacted into the bucket.", nil, nil), prometheus.CounterValue,
		func(s *store.BucketStats) float64 { return float64(s.Compactions) }},
	{prometheus.NewDesc("sparkprof_bucket_blocks", "Blocks in the bucket that queries read, at the last listing.", nil, nil), prometheus.GaugeValue,
		func(s *store.BucketStats) float64 { return float64(s.Blocks) }},
	{prometheus.NewDesc("sparkprof_bucket_block_uploads", "Uploads those blocks hold.", nil, nil), prometheus.GaugeValue,
		func(s *store.BucketStats) float64 { return float64(s.BlockUploads) }},
	{prometheus.NewDesc("sparkprof_bucket_segments", "Segments in the bucket, at the last listing.", nil, nil), prometheus.GaugeValue,
		func(s *store.BucketStats) float64 { return float64(s.Segments) }},
	{prometheus.NewDesc("sparkprof_bucket_segment_uploads", "Uploads of those segments that no block holds.", nil, nil), prometheus.GaugeValue,
		func(s *store.BucketStats) float64 { return float64(s.SegmentUploads) }},
	{prometheus.NewDesc("sparkprof_bucket_up", "Whether the bucket answered the last request (1) or not (0).", nil, nil), prometheus.GaugeValue,
		func(s *store.BucketStats) float64 {
			if s.Up {
				return 1
			}
			return 0
		}},
}

func (storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range storeMetrics {
		ch <- m.desc
	}
	for _, m := range bucketMetrics {
		ch <- m.desc
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.st.Stats()
	for _, m := range storeMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(st))
	}
	if st.Bucket != nil {
		for _, m := range bucketMetrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(st.Bucket))
		}
	}
}
