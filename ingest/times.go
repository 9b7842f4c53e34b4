package ingest

import (
	"time"

	"github.com/sparkprof/sparkprof/internal/english"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/store"
)

// Bounds on an upload's window, the time its sender says (from, until) or
// its profile's own start and end: a recording whose chunk header is
// damaged dates its samples centuries away, which no time range or
// timeline could hold.
const (
	// maxWindow is the longest window an upload may cover: a month of a
	// recording that ran all along.
	maxWindow = 31 * 24 * time.Hour
	// maxAhead is how far after its arrival an upload's window may end:
	// clocks of other hosts drift, but not by days.
	maxAhead = 24 * time.Hour
	// timeSlack is how far outside its window, beyond the window's own
	// length, a sample's time may lie before it is clamped: a recording's
	// chunk starts a little before the sender's window.
	timeSlack = time.Minute
)

// earliest is the earliest time an upload's window may start: before it,
// its times are a damaged header's, not a recording's.
var earliest = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// checkTimes checks the window of u (its From and Until, else its
// profile's start and end) against its arrival: it must start after 2000,
// end at most a day after arrived, and span at most a month, else the
// upload is refused as errkind.BadInput. Samples and series points whose
// times lie farther outside it than the window's length and a minute are
// moved to its nearest end; it returns how many. The profile's start and
// end are moved alike, uncounted: a query's range judges the samples of a
// rollup, which have no times, by them.
func checkTimes(u *store.Upload, arrived time.Time) (int, error) {
	p := u.Profile
	from, until := u.From, u.Until
	if from == 0 {
		from = p.Start
	}
	if until == 0 {
		until = p.End
	}
	u.From, u.Until = from, until
	if from == 0 && until == 0 {
		return 0, nil // no window: the times are the samples' own, or none
	}
	if from == 0 || until == 0 {
		from, until = max(from, until), max(from, until)
	}
	switch {
	case until < from:
		return 0, errkind.Errorf(errkind.BadInput, "the profile's window ends (%s) before it starts (%s)", fmtTime(until), fmtTime(from))
	case from < earliest:
		return 0, errkind.Errorf(errkind.BadInput, "the profile's window starts at %s, before 2000: its recording's start time is damaged; send its window as from and until", fmtTime(from))
	case until > arrived.Add(maxAhead).UnixNano():
		return 0, errkind.Errorf(errkind.BadInput, "the profile's window ends at %s, more than a day after it arrived (%s): its recording's times are damaged, or the sender's clock is wrong",
			fmtTime(until), fmtTime(arrived.UnixNano()))
	case time.Duration(until-from) > maxWindow:
		return 0, errkind.Errorf(errkind.BadInput, "the profile's window spans %s (%s to %s), more than a month: a recording's start time is damaged; send its window as from and until",
			english.Duration(time.Duration(until-from)), fmtTime(from), fmtTime(until))
	}
	span := until - from
	lo, hi := from-span-int64(timeSlack), until+span+int64(timeSlack)
	clamp := func(t *int64) int {
		switch {
		case *t == 0:
			return 0
		case *t < lo:
			*t = from
		case *t > hi:
			*t = until
		default:
			return 0
		}
		return 1
	}
	clamp(&p.Start)
	clamp(&p.End)
	n := 0
	for i := range p.Samples {
		n += clamp(&p.Samples[i].Time)
	}
	for i := range p.Series {
		for j := range p.Series[i].Points {
			n += clamp(&p.Series[i].Points[j].Time)
		}
	}
	return n, nil
}

// fmtTime writes Unix ns t for people: RFC 3339, UTC.
func fmtTime(t int64) string {
	return time.Unix(0, t).UTC().Format(time.RFC3339)
}
