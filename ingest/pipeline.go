// Package ingest is the one path by which data enters sparkprof: every
// profile, whether sent to /ingest, pushed through Pyroscope's Connect API,
// imported (POST /api/v1/import, serve --preload) or found in a watched
// directory (serve --profile-dir), is decoded, labelled, attributed to its
// Spark tasks and stored by the Pipeline; event logs and container logs
// go to the app store. It knows no HTTP: package server adapts it, mapping
// its typed errors (package errkind) to statuses in one place.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// Config configures a Pipeline.
type Config struct {
	Store store.Store
	// Apps keeps the event logs and container logs imported.
	Apps *appstore.Store
	// MaxDecodedBytes bounds an upload's decompressed size (gzip bombs are
	// refused as errkind.TooLarge). Zero means 512 MiB.
	MaxDecodedBytes int64
	// MaxLogBytes bounds an event log or container log imported (they
	// stream to disk instead of memory). Zero means 16 GiB.
	MaxLogBytes int64
	// RatePerSecond bounds uploads per tenant and second (a burst of twice
	// that is allowed); zero means no limit.
	RatePerSecond float64
	// MaxConcurrentUploads bounds the uploads decoded at once (Turn);
	// zero means twice GOMAXPROCS.
	MaxConcurrentUploads int
	// MaxMemory bounds the memory (estimated) that uploads in progress
	// hold at once — bodies read (ReadBody), data inflated, profiles
	// decoded until they are stored — so that concurrent uploads, gzip
	// bombs among them, cannot exceed it: past it an upload is refused as
	// errkind.Unavailable, to retry. Zero means 1 GiB.
	MaxMemory int64
	// Registerer, if set, gets the pipeline's metrics.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Pipeline decodes, labels, attributes and stores what is sent to the
// server.
type Pipeline struct {
	cfg     Config
	log     *slog.Logger
	limits  sync.Map      // tenant -> *rate.Limiter
	turns   chan struct{} // one element per upload being decoded
	mem     *budget       // the memory of the uploads in progress
	metrics *metrics
	senders *Senders
}

// New returns a pipeline into cfg.Store and cfg.Apps.
func New(cfg Config) *Pipeline {
	if cfg.MaxDecodedBytes == 0 {
		cfg.MaxDecodedBytes = 512 << 20
	}
	if cfg.MaxLogBytes == 0 {
		cfg.MaxLogBytes = 16 << 30
	}
	if cfg.MaxConcurrentUploads <= 0 {
		cfg.MaxConcurrentUploads = 2 * runtime.GOMAXPROCS(0)
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = 1 << 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	mem := newBudget(cfg.MaxMemory)
	p := &Pipeline{cfg: cfg, log: cfg.Logger, turns: make(chan struct{}, cfg.MaxConcurrentUploads), mem: mem,
		metrics: newMetrics(mem), senders: newSenders()}
	if cfg.Registerer != nil {
		p.metrics.register(cfg.Registerer)
	}
	return p
}

// Senders returns who sent data, for the agents list.
func (p *Pipeline) Senders() *Senders { return p.senders }

// MaxDecodedBytes is the bound on an upload's decompressed size.
func (p *Pipeline) MaxDecodedBytes() int64 { return p.cfg.MaxDecodedBytes }

// Profile is one profile an entry point hands the pipeline, with what its
// sender said about it.
type Profile struct {
	// Source names the profile in errors ("upload", a file's path).
	Source string
	// Format names the decoder (format.Options); "" detects it.
	Format string
	Data   []byte
	// JFRLabels is the Pyroscope LabelsSnapshot of a JFR's contexts, sent
	// or saved beside it, compressed or not.
	JFRLabels []byte
	// Labels are the upload's labels (service_name, app, executor, ...);
	// the profile's own are merged under them.
	Labels profile.Labels
	// NameType, Units and SampleRate type the samples of a format without
	// types of its own (see typeUntyped); zero values leave them.
	NameType   profile.SampleType
	Units      string
	SampleRate int64
	// TaskRuns are the agent's task runs, which attribute samples whose
	// thread names do not say their task (attribution.ApplyTaskRuns).
	TaskRuns []attribution.TaskRun
	// GCs are the agent's garbage collections, added as a metric series.
	GCs []GC
	// From and Until bound the window the profile covers (Unix ns);
	// zero takes the profile's own.
	From, Until int64
	// Agent names the client; Bytes is what was sent; Key names the
	// upload for its sender (store.Upload.Key), "" for none.
	Agent string
	Bytes int
	Key   string
	// Body, when Data came in a body read by ReadBody, draws the upload's
	// memory with the body's, so that an upload the whole ingest memory
	// could never hold is told from one it cannot hold now.
	Body *Body
	// Hint, added to the error of data that is not a profile the pipeline
	// reads, says what of the request is likely wrong ("" for nothing).
	Hint string
	// Dropped is the sparkprof agent's count of windows it dropped, for
	// the agents list.
	Dropped int64
}

// Decode decodes in into an upload ready to store: the profile decoded (a
// format-less one typed by its name, units and rate), its labels under the
// upload's, its samples attributed to the agent's task runs and the
// agent's collections added, its sample times checked against its window
// (checkTimes). Errors are errkind.TooLarge past the size limit, or when
// the whole ingest memory would not hold the upload, errkind.Unavailable
// when the ingest memory is spent, errkind.BadInput for labels, times or
// values no query could use, else errkind.Unprocessable: the data is not a
// profile it reads, or a gzip stream cut short or corrupt.
func (p *Pipeline) Decode(in Profile) (*store.Upload, error) {
	d := p.decode(in, time.Now())
	d.release()
	return d.u, d.err
}

// decoded is an upload decoded: the ingest memory it holds (its decoded
// profile) in res above mark, for the caller to release once it is
// stored, and how many of its samples' times were clamped into its
// window.
type decoded struct {
	u       *store.Upload
	clamped int
	res     *reservation
	mark    int64
	err     error
}

// release returns the memory the decoded upload holds.
func (d decoded) release() { d.res.resize(d.mark) }

// decode is Decode, keeping the upload's memory reserved: in the
// reservation of its body when it has one, so that what the upload holds
// is judged whole.
func (p *Pipeline) decode(in Profile, arrived time.Time) decoded {
	res := &reservation{b: p.mem}
	if in.Body != nil {
		res = in.Body.res
	}
	return p.decodeInto(res, in, arrived)
}

// decodeInto is decode, drawing the upload's memory into res.
func (p *Pipeline) decodeInto(res *reservation, in Profile, arrived time.Time) decoded {
	d := decoded{res: res, mark: res.n}
	d.u, d.clamped, d.err = p.decodeIn(d.res, in, arrived)
	if d.err != nil {
		d.release()
		d.u = nil
	}
	return d
}

func (p *Pipeline) decodeIn(res *reservation, in Profile, arrived time.Time) (*store.Upload, int, error) {
	held := res.n
	if in.From != 0 && in.Until != 0 && in.Until < in.From {
		return nil, 0, errkind.Errorf(errkind.BadInput, "until (%s) is before from (%s): the window ends before it starts", fmtTime(in.Until), fmtTime(in.From))
	}
	data, err := p.inflate(res, in.Data, in.Source)
	if err != nil {
		return nil, 0, err
	}
	if len(data) == 0 {
		return nil, 0, errkind.Errorf(errkind.BadInput, "%s: empty body: send a profile", in.Source)
	}
	opts := format.Options{Format: in.Format, MaxSize: p.cfg.MaxDecodedBytes, Start: in.From}
	if in.JFRLabels != nil {
		labels, err := p.inflate(res, in.JFRLabels, in.Source+" labels")
		if err != nil {
			return nil, 0, errkind.Errorf(errkind.Of(err), "labels part: %w", err)
		}
		opts.JFRLabels = labels
	}
	if err := res.reserve(decodeFactor*int64(len(data)), "decoding "+in.Source); err != nil {
		return nil, 0, err
	}
	prof, err := format.Decode(data, in.Source, opts)
	switch {
	case errors.Is(err, format.ErrTooLarge):
		return nil, 0, errkind.New(errkind.TooLarge, err)
	case errors.Is(err, profile.ErrValueRange):
		return nil, 0, errkind.New(errkind.BadInput, err)
	case err != nil:
		return nil, 0, errkind.New(errkind.Unprocessable, err)
	}
	// What is left is the profile: the data and the decoder's work are
	// garbage.
	res.resize(held + prof.MemSize())
	if err := checkProfileLabels(prof); err != nil {
		return nil, 0, errkind.Errorf(errkind.BadInput, "%s: %w", in.Source, err)
	}
	if in.SampleRate > 0 && untyped(prof) {
		// A text body with no stack is a mistake; a recording with no
		// sample is a window in which nothing was sampled (an idle JVM's),
		// whose task and GC parts are kept.
		if len(prof.Samples) == 0 && len(prof.Series) == 0 {
			return nil, 0, errkind.Errorf(errkind.BadInput, "%s: no stacks in the body: want lines of frame;frame;... count", in.Source)
		}
		typeUntyped(prof, in.NameType, in.Units, in.SampleRate)
	}
	prof.LabelAll(in.Labels) // the upload's labels, not its samples', as Pyroscope
	attribution.ApplyTaskRuns(prof, in.TaskRuns)
	attribution.ApplyWorkerRuns(prof, in.TaskRuns)
	addGCs(prof, in.GCs)
	u := &store.Upload{From: in.From, Until: in.Until, Labels: in.Labels, Agent: in.Agent, Bytes: in.Bytes, Profile: prof, Key: in.Key}
	clamped, err := checkTimes(u, arrived)
	if err != nil {
		return nil, 0, err
	}
	p.metrics.clamped.Add(float64(clamped))
	return u, clamped, nil
}

// Store stores u for tenant: the one way into storage. An upload whose key
// was stored before is not stored again: it reports duplicate, with u.ID
// set to the stored one's. A store that fails is errkind.Unavailable: the
// sender should retry. arrived is when the upload came, for the ingest
// latency metric.
func (p *Pipeline) Store(tenant string, u *store.Upload, arrived time.Time) (duplicate bool, err error) {
	if err := p.behind(); err != nil {
		return false, err
	}
	err = p.cfg.Store.Append(tenant, u)
	if errors.Is(err, store.ErrDuplicate) {
		p.metrics.duplicates.Inc()
		return true, nil
	}
	if err != nil {
		return false, p.storeFailed(tenant, err)
	}
	p.metrics.uploaded(u.Bytes, len(u.Profile.Samples), time.Since(arrived))
	return false, nil
}

// storeFailed is the error of a store that failed with err: BadInput for
// a tenant name it cannot keep, Unprocessable for a new tenant past its
// limit or a node that takes no uploads, else errkind.Unavailable, logged in full and answered without
// the server's paths.
func (p *Pipeline) storeFailed(tenant string, err error) error {
	switch {
	case errors.Is(err, store.ErrBadTenant):
		return errkind.New(errkind.BadInput, err)
	case errors.Is(err, store.ErrTooManyTenants), errors.Is(err, store.ErrNotIngesting):
		return errkind.New(errkind.Unprocessable, err)
	}
	p.log.Error("store append failed", "tenant", tenant, "err", err)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the operator's log has the path; the sender needs the reason
	}
	return &errkind.Error{Kind: errkind.Unavailable, RetryAfter: budgetRetry, Err: fmt.Errorf("storing failed: %w", err)}
}

// Stored says what Ingest stored.
type Stored struct {
	// Upload is the upload stored, or with Duplicate the one stored
	// before: its ID is the stored one's.
	Upload *store.Upload
	// Duplicate says that an upload with the same key was stored before,
	// and this one was not stored again.
	Duplicate bool
	// Clamped counts the samples whose times lay far outside the upload's
	// window, and were moved to its nearest end (checkTimes).
	Clamped int
}

// Ingest decodes in and stores it for tenant (Decode, then Store).
func (p *Pipeline) Ingest(tenant string, in Profile, arrived time.Time) (Stored, error) {
	d := p.decode(in, arrived)
	defer d.release()
	if errkind.Of(d.err) == errkind.Unprocessable && in.Hint != "" {
		return Stored{}, errkind.Errorf(errkind.Unprocessable, "%w%s", d.err, in.Hint)
	}
	if d.err != nil {
		return Stored{}, d.err
	}
	duplicate, err := p.Store(tenant, d.u, arrived)
	return Stored{Upload: d.u, Duplicate: duplicate, Clamped: d.clamped}, err
}

// KeyStored reports whether tenant stored an upload under key, when the
// store can tell before an upload is decoded (store.KeyIndex); Store
// decides otherwise. A duplicate found so is counted as one.
func (p *Pipeline) KeyStored(tenant, key string) (uint64, bool) {
	ki, ok := p.cfg.Store.(keyIndex)
	if !ok || key == "" {
		return 0, false
	}
	id, stored := ki.KeyStored(tenant, key)
	if stored {
		p.metrics.duplicates.Inc()
	}
	return id, stored
}

// backlogged is a store that can tell that it is behind: its head holds
// more than it should (store.DB.Backlogged). Uploads are then refused, to
// retry, rather than grow the server's memory without bound.
type backlogged interface{ Backlogged() bool }

// backlogRetry is how long a sender refused for a store behind is told to
// wait: a compaction takes seconds.
const backlogRetry = 10 * time.Second

// behind returns the errkind.Unavailable error of a store that is behind,
// else nil. Uploads ask before their bodies are read and decoded, so that
// a server behind spends no CPU on what it will refuse; Store asks again.
func (p *Pipeline) behind() error {
	if b, ok := p.cfg.Store.(backlogged); ok && b.Backlogged() {
		return &errkind.Error{Kind: errkind.Unavailable, RetryAfter: backlogRetry,
			Err: errors.New("the server's store is behind: its uploads not yet compacted hold twice their memory, or with a bucket (serve --storage) those not yet shipped hold theirs (serve --head-mb); retry later")}
	}
	return nil
}

// keyIndex is a store that can tell whether an upload key was stored, so
// that a retry is answered before its body is read or decoded: a client
// that sent "Expect: 100-continue" then does not send it at all.
type keyIndex interface {
	KeyStored(tenant, key string) (id uint64, ok bool)
}

// Allow takes one upload from the tenant's rate limit, which lets bursts of
// two seconds' uploads through. Over the limit, it returns an
// errkind.OverLimit error that says how long until the next upload would
// be allowed.
func (p *Pipeline) Allow(tenant string) error {
	limit := p.cfg.RatePerSecond
	if limit <= 0 {
		return nil
	}
	v, ok := p.limits.Load(tenant)
	if !ok {
		v, _ = p.limits.LoadOrStore(tenant, rate.NewLimiter(rate.Limit(limit), max(1, int(math.Ceil(2*limit)))))
	}
	lim := v.(*rate.Limiter)
	now := time.Now()
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return &errkind.Error{Kind: errkind.OverLimit, RetryAfter: d,
			Err: fmt.Errorf("tenant %q is over its upload rate (%g/s); retry in %s", tenant, limit, d.Round(time.Millisecond))}
	}
	return nil
}

// Turn waits for one of the turns to decode an upload
// (Config.MaxConcurrentUploads), and returns the function that gives it
// back: a burst (a stage's executors ending together) costs the server
// time rather than memory and every core. An upload's body is read before
// its turn (ReadBody), so that a slow sender holds no turn. It fails with errkind.Unavailable when ctx ends
// first: the client gave up waiting, or the server is shutting down.
func (p *Pipeline) Turn(ctx context.Context) (release func(), err error) {
	select {
	case p.turns <- struct{}{}:
		return func() { <-p.turns }, nil
	default:
	}
	p.metrics.waiting.Inc()
	defer p.metrics.waiting.Dec()
	select {
	case p.turns <- struct{}{}:
		return func() { <-p.turns }, nil
	case <-ctx.Done():
		return nil, errkind.Errorf(errkind.Unavailable, "waited for a turn among %d uploads in progress: %w", cap(p.turns), ctx.Err())
	}
}

// metrics are the pipeline's own metrics.
type metrics struct {
	uploads, bytes, samples prometheus.Counter
	duplicates, clamped     prometheus.Counter
	ingest                  prometheus.Histogram
	waiting                 prometheus.Gauge
	memory, memoryLimit     prometheus.GaugeFunc
}

func newMetrics(mem *budget) *metrics {
	return &metrics{
		clamped: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_samples_clamped_total",
			Help: "Samples whose times lay far outside their upload's window, moved to its nearest end."}),
		memory: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sparkprof_ingest_memory_bytes",
			Help: "Estimated memory the uploads in progress hold (bodies, inflated data, decoded profiles)."}, func() float64 { return float64(mem.inUse()) }),
		memoryLimit: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sparkprof_ingest_memory_limit_bytes",
			Help: "The ingest memory budget (serve --ingest-memory)."}, func() float64 { return float64(mem.limit) }),
		uploads: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_uploads_total", Help: "Profiles ingested."}),
		bytes:   prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_upload_bytes_total", Help: "Request bytes ingested."}),
		samples: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_samples_total", Help: "Samples ingested."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "sparkprof_upload_duplicates_total",
			Help: "Uploads not stored again: retries whose Idempotency-Key was stored already."}),
		ingest: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sparkprof_ingest_duration_seconds",
			Help: "Time from an upload's arrival to its acknowledgement (decode, label, write-ahead log with fsync).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sparkprof_uploads_waiting",
			Help: "Uploads waiting for a turn to be decoded (serve --max-concurrent-uploads)."}),
	}
}

func (m *metrics) register(r prometheus.Registerer) {
	r.MustRegister(m.uploads, m.bytes, m.samples, m.duplicates, m.clamped, m.ingest, m.waiting, m.memory, m.memoryLimit)
}

func (m *metrics) uploaded(bytes, samples int, d time.Duration) {
	m.uploads.Inc()
	m.bytes.Add(float64(bytes))
	m.samples.Add(float64(samples))
	m.ingest.Observe(d.Seconds())
}
