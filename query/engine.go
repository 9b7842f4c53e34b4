// Package query answers questions about the stored profiles: it parses
// selectors, selects uploads and samples, joins samples to the tasks of
// their application's model, and merges, sums and lists what it selected,
// reading compacted blocks' rollups and timelines where they answer as the
// samples would, and reading ahead of the work on another core. It knows
// no HTTP: package server adapts it to the HTTP and Connect APIs.
package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"time"

	"github.com/sparkprof/sparkprof/appstore"
	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/compare"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/spark"
	"github.com/sparkprof/sparkprof/store"
)

// Config configures an Engine.
type Config struct {
	Store store.Store
	// Apps holds the analysed applications, whose task models join
	// samples to tasks.
	Apps *appstore.Store
	// MaxSamples bounds the samples a query that keeps labels merges its
	// selection into (a pprof export with every label keeps one per stack,
	// task and thread): past it the query fails rather than holding
	// gigabytes. A flame graph, which keeps one per stack, type and state,
	// is not bounded. Zero means 1,048,576.
	MaxSamples int
	Logger     *slog.Logger
	// JobKey is the Spark property whose value names the job an app is a
	// run of; "" for compare.JobOf's.
	JobKey string
	// SumsCacheBytes bounds the memory (estimated) of the compacted
	// blocks' rollups and timelines summed over the labels a query does
	// not name, kept for later queries (blockSums); 0 keeps none.
	SumsCacheBytes int64
}

// Engine answers queries of a store.
type Engine struct {
	store      store.Store
	apps       *appstore.Store
	maxSamples int
	log        *slog.Logger
	jobOf      func(*spark.App) string
	// orders keeps the stage task table's last sorts (StageTasks).
	orders taskOrders
	// sums keeps compacted blocks' parts summed (nil for none).
	sums *blockSums
}

// NewEngine returns an engine over cfg.Store.
func NewEngine(cfg Config) *Engine {
	if cfg.MaxSamples == 0 {
		cfg.MaxSamples = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Engine{store: cfg.Store, apps: cfg.Apps, maxSamples: cfg.MaxSamples, log: cfg.Logger, jobOf: compare.JobBy(cfg.JobKey),
		sums: newBlockSums(cfg.SumsCacheBytes)}
}

// Merge returns the samples req selects as one profile, keeping the labels
// req.Keep says. A merge that keeps labels and grows past the engine's
// MaxSamples fails with an errkind.Unprocessable error.
func (e *Engine) Merge(ctx context.Context, tenant string, req Request) (*profile.Profile, error) {
	opts := profile.MergeOptions{Aggregate: true, DropLabels: req.Keep == KeepNone, DropThreads: !req.Keep.Threads(), ThreadNames: req.Keep == KeepPage}
	switch req.Keep {
	case KeepCoarse:
		opts.Relabel = func(ls profile.Labels) profile.Labels { return ls.Without(store.RollupDropped...) }
	case KeepPage:
		opts.Relabel = func(ls profile.Labels) profile.Labels {
			return ls.Only(profile.LabelThreadPool, profile.LabelStageID, profile.LabelThreadName)
		}
	}
	m := profile.NewMerger(opts)
	req = narrowToStage(req, e.stageWindowOf(tenant))
	err := e.eachUpload(ctx, tenant, req, e.sums.flameSource(ctx), func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error {
		m.AddFunc(p, keep)
		// A merge that keeps labels grows with tasks, threads and
		// executors; a flame graph's only with the stacks the store holds.
		if n := len(m.Profile().Samples); req.Keep != KeepNone && n > e.maxSamples {
			return errkind.New(errkind.Unprocessable, &tooManySamplesError{max: e.maxSamples, labels: req.Keep})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m.Profile(), nil
}

// sideLabel labels the samples of one side of a split merge.
const sideLabel = "__side__"

// SplitMerge merges the samples req selects as a flame graph does (stacks,
// types and states), those inSide selects into in and the others into
// out, reading each upload once for both: the two sides of slow-vs-rest
// are the tasks of one stage, in the same time slices.
func (e *Engine) SplitMerge(ctx context.Context, tenant string, req Request, inSide profile.Matcher) (in, out *profile.Profile, err error) {
	m := profile.NewMerger(profile.MergeOptions{Aggregate: true, DropThreads: true, Relabel: func(ls profile.Labels) profile.Labels {
		return ls.Only(sideLabel)
	}})
	sideOf := profile.Filter{Labels: []profile.Matcher{inSide}}
	err = e.eachUpload(ctx, tenant, req, source, func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error {
		isIn := sideOf.Selector(p)
		p.OwnLabelSets() // p shares its tables with the stored profile
		sides := [2]profile.LabelSetID{p.AppendLabels(profile.Labels{{Name: sideLabel, Value: "out"}}), p.AppendLabels(profile.Labels{{Name: sideLabel, Value: "in"}})}
		m.AddFunc(p, func(smp *profile.Sample) bool {
			if !keep(smp) {
				return false
			}
			if isIn(smp) {
				smp.Labels = sides[1]
			} else {
				smp.Labels = sides[0]
			}
			return true
		})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	merged := m.Profile()
	side := func(v string) *profile.Profile {
		p := *merged
		p.Samples = nil
		for _, smp := range merged.Samples {
			if merged.Label(smp, sideLabel) == v {
				p.Samples = append(p.Samples, smp)
			}
		}
		return &p
	}
	return side("in"), side("out"), nil
}

// tooManySamplesError is a merge that grew past Config.MaxSamples.
type tooManySamplesError struct {
	max    int
	labels LabelsKept
}

func (e *tooManySamplesError) Error() string {
	msg := fmt.Sprintf("the selection merges into more than %d samples (serve --max-query-samples); narrow its time range or selector", e.max)
	if e.labels == KeepAll {
		msg += ", or keep fewer labels (a pprof export without labels=all keeps those without a value per task or thread)"
	}
	return msg
}

// stageWindowOf returns the function that gives the time the tasks of a
// stage of one of the tenant's apps can have samples in (appstore.Store.StageWindow).
func (e *Engine) stageWindowOf(tenant string) func(app string, stage int) (from, until int64, ok bool) {
	return func(app string, stage int) (int64, int64, bool) { return e.apps.StageWindow(tenant, app, stage) }
}

// tasksOf returns the function that gives the tasks by id of one of the
// tenant's apps, nil when its task model is not known.
func (e *Engine) tasksOf(tenant string) attribution.TasksOf {
	return func(app, attempt string) map[int64]*spark.Task { return e.apps.Tasks(tenant, app, attempt) }
}

// sourceFunc returns the profile of upload u that answers req, or nil for
// its samples; tasksOf returns an app's tasks by id, nil when its task
// model is not known.
type sourceFunc func(u *store.Upload, req Request, tasksOf attribution.TasksOf) (*profile.Profile, error)

// eachUpload calls add with each upload req selects, the profile of it
// that answers req (src) as a copy carrying the upload's labels, and the
// filter of that profile's samples, which first joins a sample to its
// task (changing its labels) and then reports whether req selects it. The
// stored profile is not modified. An error from add ends the walk, and
// eachUpload returns it. The profiles are read ahead of add (readAhead).
func (e *Engine) eachUpload(ctx context.Context, tenant string, req Request, src sourceFunc, add func(u *store.Upload, p *profile.Profile, keep func(*profile.Sample) bool) error) error {
	tasksOf := e.tasksOf(tenant)
	reads, stop := e.readAhead(ctx, tenant, req, func(u *store.Upload) (*profile.Profile, error) { return src(u, req, tasksOf) })
	defer stop()
	for r := range reads {
		if r.err != nil {
			return r.err
		}
		// Upload labels go onto the profile; the filter then sees them
		// for every sample.
		cp := *r.p
		cp.Labels = cp.Labels.Merge(r.u.Labels)
		join := attribution.NewJoiner(&cp, tasksOf)
		// A range that holds all the upload's samples cuts none: not the
		// rows of a timeline either, whose times are rounded down.
		f := req.Filter
		if coversSamples(r.u, f) {
			f.From, f.Until = 0, 0
		}
		keep := f.Selector(&cp)
		// A selection by thread passes over the other threads' samples
		// first: a thread's flame graph of a block reads all its samples.
		// The upload's label values tell whether a thread_name label, which
		// a matcher reads first, can be on them.
		threads := req.Filter.Threads(&cp, func() bool {
			vals := r.u.LabelValues()
			_, labelled := vals[profile.LabelThreadName]
			return vals == nil || labelled
		})
		if err := add(r.u, &cp, func(s *profile.Sample) bool {
			if threads != nil && !threads[s.Thread] {
				return false
			}
			join(s)
			return keep(s)
		}); err != nil {
			return err
		}
	}
	return nil
}

// uploadRead is a profile readAhead read, of upload u, or the error that
// ended its reading.
type uploadRead struct {
	u   *store.Upload
	p   *profile.Profile
	err error
}

// readAhead reads, on a goroutine of its own, the profile of each upload
// req selects that answers the query (src), or when src returns nil the
// upload's samples, a block cut into time slices a slice at a time, and
// hands them over on the channel it returns, in the store's order; an
// error is the last thing handed over. The reading overlaps the work on
// what it handed over before, on another core, and is never more than one
// profile ahead of it: a query over many large blocks holds no more than
// two slices' samples beyond the cache. It stops when the client goes away
// (ctx) or stop is called, which waits for it; a panic in it is an error,
// since net/http's recovery does not reach its goroutine.
func (e *Engine) readAhead(ctx context.Context, tenant string, req Request, src func(*store.Upload) (*profile.Profile, error)) (reads <-chan uploadRead, stop func()) {
	next := make(chan uploadRead)
	done := make(chan struct{})
	// send hands r over, or reports errStopped once stop is called.
	send := func(r uploadRead) error {
		select {
		case next <- r:
			return nil
		case <-done:
			return errStopped
		}
	}
	// stopped reports whether stop was called. A read starts only before
	// then: stop's draining takes what the reader sends, so a send can
	// win over done, and the reader must not go on to read more.
	stopped := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	read := func(u *store.Upload) error {
		if stopped() {
			return errStopped
		}
		p, err := src(u)
		switch {
		case req.Missing.skip(err, e.log):
			return nil
		case err != nil:
			return err
		case p != nil:
			return send(uploadRead{u: u, p: p})
		}
		parts := u.Slices()
		if parts == nil {
			parts = []*store.Upload{u}
		}
		for _, part := range parts {
			if stopped() {
				return errStopped
			}
			p, err := part.Load()
			if req.Missing.skip(err, e.log) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := send(uploadRead{u: u, p: p}); err != nil {
				return err
			}
		}
		return nil
	}
	go func() {
		defer close(next)
		defer func() {
			if v := recover(); v != nil {
				e.log.Error("reading uploads failed", "panic", v, "stack", string(debug.Stack()))
				send(uploadRead{err: fmt.Errorf("reading uploads failed: %v", v)})
			}
		}()
		err := e.store.Select(tenant, req.Query, func(u *store.Upload) error {
			if err := ctx.Err(); err != nil {
				return err // the client went away: read no more blocks
			}
			return read(u)
		})
		if err != nil && err != errStopped {
			send(uploadRead{err: err})
		}
	}()
	return next, func() {
		close(done)
		for range next { // until the reader has stopped
		}
	}
}

// errStopped ends a walk of uploads whose reader has gone.
var errStopped = errors.New("stopped")

// source returns the profile of u that answers req: a compacted block's
// rollup, or thread rollup, when it serves, else nil: its samples
// (eachUpload reads them).
func source(u *store.Upload, req Request, tasksOf attribution.TasksOf) (*profile.Profile, error) {
	load := u.LoadRollup
	switch {
	case rollupMayServe(u, req):
	case threadRollupMayServe(u, req):
		load = u.LoadThreadRollup
	default:
		return nil, nil
	}
	r, err := load()
	if err != nil || r == nil {
		return nil, err
	}
	if rollupServes(r, req, tasksOf) {
		return r, nil
	}
	return nil, nil
}

// seriesSource returns the sourceFunc of a time series per value of the
// labels by and step: an upload's timeline when it serves, its samples
// (nil) otherwise. A timeline that keeps times coarser than its samples' (an
// upload in the head) serves only a step and range its resolution divides.
func seriesSource(ctx context.Context, sums *blockSums, by []string, step time.Duration, origin int64) sourceFunc {
	return func(u *store.Upload, req Request, tasksOf attribution.TasksOf) (*profile.Profile, error) {
		f := req.Filter
		dropped := func(name string) bool { return slices.Contains(store.RollupDropped, name) }
		// The timeline's times, rounded down to res, fall in the steps
		// their samples' times do when res divides the steps; and the
		// range cuts its rows as it cuts the samples when res divides its
		// bounds too, or when the range holds every sample (eachUpload
		// then does not cut): a dashboard's range of the last minutes
		// reads the samples of the uploads at its start alone.
		res := u.TimelineResolution()
		aligned := res == 0 || ((step == AllTime || int64(step)%res == 0) && origin%res == 0 &&
			(f.From%res == 0 && f.Until%res == 0 || coversSamples(u, f)))
		needsSamples := f.Thread != nil || f.ByStack() || slices.ContainsFunc(by, dropped) ||
			slices.ContainsFunc(f.Labels, func(m profile.Matcher) bool { return dropped(m.Name) })
		if aligned && !needsSamples {
			tl, err := sums.timeline(ctx, u, req, by)
			if err != nil {
				return nil, err
			}
			if tl != nil && timelineServes(tl, req, by, tasksOf) {
				return tl, nil
			}
		}
		return nil, nil
	}
}

// timelineServes reports whether timeline tl answers a series of req per
// value of the labels by as its samples would: not when req matches, or
// by names, a stage label and the join to task windows may change stages
// (stagesJoined).
func timelineServes(tl *profile.Profile, req Request, by []string, tasksOf attribution.TasksOf) bool {
	return !(slices.ContainsFunc(by, isStageLabel) || matchesStage(req)) || !stagesJoined(tl, tasksOf)
}

// rollupMayServe reports whether the rollup of u (a compacted block, or an
// upload in the head) can answer req as its samples would: a flame graph
// or a merge keeping only the labels the rollup keeps (no threads or
// times), over a range covering its samples, with no thread filter and no
// matcher on a label the rollup dropped.
func rollupMayServe(u *store.Upload, req Request) bool {
	return u.HasRollup() && !req.Keep.Threads() && req.Filter.Thread == nil &&
		coversSamples(u, req.Filter) && !matchesAny(req.Filter, store.RollupDropped)
}

// threadRollupMayServe reports whether the thread rollup of u (a
// compacted block) can answer req as its samples would: a flame graph or a
// merge keeping threads but no label the thread rollup dropped, over a
// range covering its samples, with no matcher on such a label. A thread
// name's flame graph then reads a row per stack, thread and label set of
// a block, not every sample.
func threadRollupMayServe(u *store.Upload, req Request) bool {
	return u.Compacted() && req.Keep != KeepAll && coversSamples(u, req.Filter) && !matchesAny(req.Filter, store.ThreadRollupDropped)
}

// coversSamples reports whether f's range covers the samples of u.
// Samples without a time are kept when the profile overlaps the range,
// which a range covering every sample time implies.
func coversSamples(u *store.Upload, f profile.Filter) bool {
	lo, hi := u.SampleSpan()
	return (f.From == 0 || lo != 0 && f.From <= lo) && (f.Until == 0 || f.Until > hi)
}

// matchesAny reports whether f has a matcher on one of the labels names.
func matchesAny(f profile.Filter, names []string) bool {
	return slices.ContainsFunc(f.Labels, func(m profile.Matcher) bool { return slices.Contains(names, m.Name) })
}

// rollupServes reports whether rollup r, which rollupMayServe admitted,
// answers req: a matcher on a stage label, or stage labels kept, need the
// block's apps to have no task model, since joining samples to task
// windows changes their stage labels.
func rollupServes(r *profile.Profile, req Request, tasksOf attribution.TasksOf) bool {
	return !(matchesStage(req) || req.Keep == KeepCoarse) || !stagesJoined(r, tasksOf)
}

// isStageLabel reports whether name is a stage label, which the join to
// task windows may change.
func isStageLabel(name string) bool {
	return name == profile.LabelStageID || name == profile.LabelStageAttempt
}

// matchesStage reports whether req has a matcher on a stage label.
func matchesStage(req Request) bool {
	return slices.ContainsFunc(req.Filter.Labels, func(m profile.Matcher) bool { return isStageLabel(m.Name) })
}

// stagesJoined reports whether an app of p has a task model, so that
// joining p's samples to task windows may change their stage labels.
func stagesJoined(p *profile.Profile, tasksOf attribution.TasksOf) bool {
	return slices.ContainsFunc(labelValuesOf(p, profile.LabelAppID), func(app string) bool { return tasksOf(app, "") != nil })
}

// labelValuesOf lists the values label name takes in p.
func labelValuesOf(p *profile.Profile, name string) []string {
	var out []string
	if v, ok := p.Labels.Get(name); ok {
		out = append(out, v)
	}
	for i := range p.NumLabelSets() {
		if v, ok := p.LabelSet(profile.LabelSetID(i)).Get(name); ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
