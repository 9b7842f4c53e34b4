package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/sparkprof/sparkprof/attribution"
	"github.com/sparkprof/sparkprof/internal/errkind"
	"github.com/sparkprof/sparkprof/internal/pyroscope"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// Push stores each profile of each series of a push of Pyroscope's push
// API (push.v1.PusherService/Push: series of pprof profiles with their
// labels, as Grafana Alloy's pyroscope.write and Pyroscope's newer SDKs
// send them) as an upload labelled with its series' labels, from the
// client who (its remote address and client name; the series' labels are
// added). Every profile is decoded before any is stored, so a push with a
// bad profile stores nothing; a profile stored by an earlier attempt of
// the push is not stored again. Errors are typed (errkind): a bad series
// or profile is BadInput, Unprocessable or TooLarge; a full server
// Unavailable; a tenant over its rate OverLimit.
func (p *Pipeline) Push(ctx context.Context, tenant string, who Sender, req *pushv1.PushRequest) error {
	start := time.Now()
	if err := p.Allow(tenant); err != nil {
		p.senders.Failed(who, err.Error())
		return err
	}
	if err := p.behind(); err != nil {
		p.senders.Failed(who, err.Error())
		return err
	}
	// The push's body is read already: its turn bounds the decoding.
	release, err := p.Turn(ctx)
	if err != nil {
		p.senders.Failed(who, err.Error())
		return err
	}
	defer release()
	// The push's profiles draw their memory with its body's, when the
	// server read it (WithBody): the push is judged whole.
	res := &reservation{b: p.mem}
	if b := bodyOf(ctx); b != nil {
		res = b.res
	}
	mark := res.n
	defer res.resize(mark)
	all, err := p.decodePush(tenant, &who, req, res, start)
	if err != nil {
		p.senders.Failed(who, err.Error()) // with the labels of the series that failed
		return err
	}
	last := start // each upload's ingest time is the time since the one before, so a push's add up to its own
	for _, ps := range all {
		bytes := 0
		var end int64 // the latest window's end
		for _, u := range ps.uploads {
			end = max(end, u.Until)
			duplicate, err := p.Store(tenant, u, last)
			if err != nil {
				p.senders.Failed(ps.who, err.Error())
				return err
			}
			if duplicate {
				ps.retried++
				continue
			}
			last = time.Now()
			bytes += u.Bytes
		}
		if bytes > 0 || ps.retried == 0 {
			p.senders.Uploaded(ps.who, bytes, 0, end)
		}
		for range ps.retried {
			p.senders.Retried(ps.who)
		}
	}
	return nil
}

// pushed is a series of a push, decoded.
type pushed struct {
	who     Sender
	uploads []*store.Upload
	retried int // profiles stored by an earlier attempt of the push
}

// decodePush decodes every profile of the push that is not stored yet,
// drawing their memory into res. It leaves in who the sender of the
// series it read last. What it returns holds ingest memory, even with an
// error: the caller releases it.
func (p *Pipeline) decodePush(tenant string, who *Sender, req *pushv1.PushRequest, res *reservation, start time.Time) (all []pushed, err error) {
	for i, series := range req.Series {
		labels, err := PushLabels(series.Labels)
		if err != nil {
			return all, errkind.Errorf(errkind.BadInput, "series %d: %w", i, err)
		}
		who.Labels = labels
		ps := pushed{who: *who}
		for j, smp := range series.Samples {
			key := PushKey(labels, smp)
			if _, ok := p.KeyStored(tenant, key); ok {
				ps.retried++
				continue // a retried push: this profile is stored
			}
			d := p.decodeInto(res, Profile{Source: fmt.Sprintf("series %d, profile %d", i, j), Format: "pprof", Data: smp.RawProfile,
				Labels: labels, Agent: who.SpyName, Bytes: len(smp.RawProfile), Key: key}, start)
			if d.err != nil {
				// Not resource_exhausted for a profile too large, which
				// Alloy retries: the same profile would be refused again.
				return append(all, ps), d.err
			}
			u := d.u
			if u.From == 0 {
				u.From = start.UnixNano() // a profile without its time counts from its arrival
			}
			u.Until = max(u.Until, u.From)
			ps.uploads = append(ps.uploads, u)
		}
		all = append(all, ps)
	}
	return all, nil
}

// PushLabels turns a pushed series' labels into upload labels: Pyroscope's
// own (__name__, __delta__, __session_id__, ...) are left out, as the
// profile's sample types say what it measures, and other agents' names for
// Spark's labels map to the standard ones. service_name is required.
func PushLabels(pairs []*typesv1.LabelPair) (profile.Labels, error) {
	var ls profile.Labels
	for _, l := range pairs {
		if strings.HasPrefix(l.Name, "__") || l.Value == "" {
			continue
		}
		ls = append(ls, profile.Label{Name: pyroscope.StandardLabel(l.Name), Value: l.Value})
	}
	ls = ls.Normalize()
	if v, _ := ls.Get(profile.LabelServiceName); v == "" {
		return nil, errors.New("no service_name label: it names the application, as in Pyroscope")
	}
	ls = attribution.DriverExecutor(ls)
	if err := checkLabels(ls); err != nil {
		return nil, err
	}
	return ls, nil
}
