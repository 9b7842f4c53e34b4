package query

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sparkprof/sparkprof/internal/duration"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/internal/unixtime"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// Request is a parsed query: which uploads, which samples, which type, and
// which labels a merge keeps.
type Request struct {
	Query  store.Query
	Filter profile.Filter
	// Type names the sample type asked for ("" for the default: CPU time
	// if the selection has it, else its first type with samples).
	Type string
	// Keep says which sample labels, and whether threads, a merge keeps.
	Keep LabelsKept
	// Missing, when set, collects the blocks of a bucket that could not be
	// read, which the answer then leaves out; without it such a block
	// fails the query.
	Missing *Missing
}

// LabelsKept says which of the samples' labels a merge keeps, and whether
// it keeps their threads.
type LabelsKept int

const (
	// KeepAll keeps every label and thread.
	KeepAll LabelsKept = iota
	// KeepCoarse keeps the labels a block's rollup keeps (all but
	// store.RollupDropped, which have a value per task or thread), and no
	// threads.
	KeepCoarse
	// KeepNone keeps no labels or threads: a flame graph needs only
	// stacks, types and states.
	KeepNone
	// KeepPage keeps what the /flame page filters by: the thread pool,
	// the stage and the thread's name.
	KeepPage
)

// Threads reports whether a merge keeping k keeps threads.
func (k LabelsKept) Threads() bool { return k == KeepAll || k == KeepPage }

// NewRequest selects the samples of type typ ("" for the default) that
// the matchers ms select over from–until (Unix ns, 0 open), keeping every
// label.
func NewRequest(ms []profile.Matcher, typ string, from, until int64) Request {
	req := Request{Query: store.Query{Matchers: ms, SampleMatchers: storedMatchers(ms), From: from, Until: until}, Type: typ}
	req.Filter.Labels = ms
	req.Filter.From, req.Filter.Until = from, until
	return req
}

// ParseRequest reads the request of query parameters q: the selector in
// parameter selParam, the range (from, until; for a diff's side "base" or
// "next" its own baseFrom, nextUntil, ...), the type (type, or the
// selector's name suffix) and the thread states (state). Errors are
// errkind.BadInput and name the parameter.
func ParseRequest(q url.Values, selParam string) (Request, error) {
	ms, suffixType, err := ParseSelector(q.Get(selParam))
	if err != nil {
		return Request{}, errkind.Errorf(errkind.BadInput, "%s: %w", selParam, err)
	}
	side := ""
	if selParam == "base" || selParam == "next" {
		side = selParam // a diff side's own range: baseFrom, nextUntil
	}
	from, until, err := ParseRange(q, side)
	if err != nil {
		return Request{}, errkind.Errorf(errkind.BadInput, "%s: %w", selParam, err)
	}
	typ := q.Get("type")
	if typ == "" {
		typ = suffixType.Name // Pyroscope's queries: app.alloc_space{...}
	}
	req := NewRequest(ms, typ, from, until)
	if st := q.Get("state"); st != "" {
		for _, name := range strings.Split(st, ",") {
			state := profile.ParseThreadState(name)
			if state == profile.StateUnknown {
				return Request{}, errkind.Errorf(errkind.BadInput, "%s: state %q: want RUNNABLE, BLOCKED, WAITING, TIMED_WAITING, SLEEPING or NATIVE", selParam, name)
			}
			req.Filter.States = append(req.Filter.States, state)
		}
	}
	if req.Filter.Focus, err = parseFrameRegexp(q, "focus"); err != nil {
		return Request{}, err
	}
	if req.Filter.Ignore, err = parseFrameRegexp(q, "ignore"); err != nil {
		return Request{}, err
	}
	return req, nil
}

// maxFrameRegexp bounds the length of a focus or ignore expression.
const maxFrameRegexp = 4096

// parseFrameRegexp compiles the regular expression of parameter name
// (focus keeps the samples with a frame matching it, ignore drops them),
// or returns nil when it is absent.
func parseFrameRegexp(q url.Values, name string) (*regexp.Regexp, error) {
	expr := q.Get(name)
	if expr == "" {
		return nil, nil
	}
	if len(expr) > maxFrameRegexp {
		return nil, errkind.Errorf(errkind.BadInput, "%s: %d bytes, more than %d: match fewer frames", name, len(expr), maxFrameRegexp)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, errkind.Errorf(errkind.BadInput, "%s: %w", name, err)
	}
	return re, nil
}

// ParseRange parses a query's optional from and until, or, when given,
// side's own (side "base": baseFrom and baseUntil).
func ParseRange(q url.Values, side string) (from, until int64, err error) {
	parse := func(name string) (int64, error) {
		if side != "" {
			if own := side + strings.ToUpper(name[:1]) + name[1:]; q.Has(own) {
				name = own
			}
		}
		t, err := ParseTime(q.Get(name))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return t, nil
	}
	if from, err = parse("from"); err != nil {
		return 0, 0, err
	}
	if until, err = parse("until"); err != nil {
		return 0, 0, err
	}
	if from != 0 && until != 0 && until < from {
		return 0, 0, fmt.Errorf("the range ends before it starts (%s before %s): swap them", time.Unix(0, until).UTC().Format(time.RFC3339), time.Unix(0, from).UTC().Format(time.RFC3339))
	}
	return from, until, nil
}

// ParseTime accepts Unix times in s/ms/µs/ns, "now", and Pyroscope's
// relative "now-1h" and "now-7d" forms; "" is 0 (open). A time before 1970
// or after 2262 is an error.
func ParseTime(s string) (int64, error) {
	if s == "now" {
		return time.Now().UnixNano(), nil
	}
	if rel, ok := strings.CutPrefix(s, "now-"); ok {
		d, err := duration.Parse(rel)
		if err != nil {
			return 0, err
		}
		t := time.Now().Add(-d)
		if t.Before(time.Unix(0, 0)) {
			return 0, fmt.Errorf("time %q: %s, before 1970, the first a Unix time holds; leave it out for all time", s, t.UTC().Format(time.DateOnly))
		}
		return t.UnixNano(), nil
	}
	return unixtime.Parse(s)
}
