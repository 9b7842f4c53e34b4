package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/cespare/xxhash/v2"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/sparkprof/sparkprof/format"
	"github.com/sparkprof/sparkprof/profile"
	"github.com/sparkprof/sparkprof/store"
)

// pusher accepts Pyroscope's push API (push.v1.PusherService/Push over the
// Connect protocol): series of pprof profiles with their labels, as Grafana
// Alloy's pyroscope.write sends them (its pyroscope.java component profiles
// the JVMs of Kubernetes pods, Spark's driver and executors among them) and
// Pyroscope's newer SDKs do.
type pusher struct{ s *Server }

// handlePush routes the push API under its service path.
func (s *Server) handlePush() (string, http.Handler) {
	return pushv1connect.NewPusherServiceHandler(pusher{s: s}, connect.WithReadMaxBytes(int(s.cfg.MaxBodyBytes)))
}

// Push stores each profile of each series as an upload labelled with its
// series' labels. Every profile is decoded before any is stored, so a push
// with a bad profile stores nothing.
func (p pusher) Push(ctx context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	s := p.s
	start := time.Now()
	ten := headerTenant(req.Header())
	client := req.Header().Get("User-Agent") // Alloy names itself here
	if client == "" {
		client = "push"
	}
	who := sender{tenant: ten, remote: req.Peer().Addr, spyName: client}
	fail := func(code connect.Code, status int, err error) *connect.Error {
		s.metrics.uploadError(status)
		s.agents.failed(who, err.Error())
		return connect.NewError(code, err)
	}
	if ok, wait := s.allow(ten); !ok {
		err := fail(connect.CodeResourceExhausted, http.StatusTooManyRequests, fmt.Errorf("tenant %q is over its upload rate (%g/s); retry in %s", ten, s.cfg.RatePerSecond, wait.Round(time.Millisecond)))
		err.Meta().Set("Retry-After", retryAfter(wait))
		return nil, err
	}
	// The push's body is read already: its turn bounds the decoding.
	release, err := s.turn(ctx)
	if err != nil {
		return nil, fail(connect.CodeUnavailable, http.StatusServiceUnavailable, err)
	}
	defer release()
	type pushed struct {
		who     sender
		uploads []*store.Upload
		retried int // profiles stored by an earlier attempt of the push
	}
	var all []pushed
	for i, series := range req.Msg.Series {
		labels, err := pushLabels(series.Labels)
		if err != nil {
			return nil, fail(connect.CodeInvalidArgument, http.StatusBadRequest, fmt.Errorf("series %d: %w", i, err))
		}
		who.labels = labels
		ps := pushed{who: who}
		for j, smp := range series.Samples {
			key := pushKey(labels, smp)
			if _, ok := s.keyStored(ten, key); ok {
				ps.retried++
				continue // a retried push: this profile is stored
			}
			prof, err := format.Decode(smp.RawProfile, fmt.Sprintf("series %d, profile %d", i, j), format.Options{Format: "pprof", MaxSize: s.cfg.MaxDecodedBytes})
			if errors.Is(err, format.ErrTooLarge) {
				// Not resource_exhausted, which Alloy retries: the
				// same profile would be refused again.
				return nil, fail(connect.CodeInvalidArgument, http.StatusRequestEntityTooLarge, err)
			}
			if err != nil {
				return nil, fail(connect.CodeInvalidArgument, http.StatusUnprocessableEntity, err)
			}
			prof.Labels = prof.Labels.Merge(labels)
			from, until := prof.Start, prof.End
			if from == 0 {
				from = start.UnixNano() // a profile without its time counts from its arrival
			}
			until = max(until, from)
			ps.uploads = append(ps.uploads, &store.Upload{From: from, Until: until, Labels: labels, Agent: client, Bytes: len(smp.RawProfile), Profile: prof, Key: key})
		}
		all = append(all, ps)
	}
	last := start // each upload's ingest time is the time since the one before, so a push's add up to its own
	for _, ps := range all {
		bytes := 0
		var end int64 // the latest window's end
		for _, u := range ps.uploads {
			end = max(end, u.Until)
			err := s.cfg.Store.Append(ten, u)
			if errors.Is(err, store.ErrDuplicate) {
				ps.retried++
				continue
			}
			if err != nil {
				s.log.Error("store append failed", "tenant", ten, "err", err)
				return nil, fail(connect.CodeUnavailable, http.StatusServiceUnavailable, fmt.Errorf("storing the profile failed: %w", err))
			}
			now := time.Now()
			s.metrics.uploaded(u.Bytes, len(u.Profile.Samples), now.Sub(last))
			last = now
			bytes += u.Bytes
		}
		if bytes > 0 || ps.retried == 0 {
			s.agents.uploaded(ps.who, bytes, 0, end)
		}
		for range ps.retried {
			s.metrics.duplicates.Inc()
			s.agents.retried(ps.who)
		}
	}
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

// pushKey names a pushed profile for the store (Upload.Key), the same in a
// retry of the push: a digest of the ID its client gave it (Alloy gives
// each a UUID), its series' labels and its bytes. A retry of a push whose
// answer was lost then stores nothing twice, and a client that gives every
// profile the same ID still has each stored.
func pushKey(labels profile.Labels, smp *pushv1.RawSample) string {
	h := xxhash.New()
	for _, s := range []string{smp.ID, labels.String()} {
		h.WriteString(s)
		h.Write([]byte{0})
	}
	h.Write(smp.RawProfile)
	return fmt.Sprintf("push:%016x", h.Sum64())
}

// pushLabels turns a pushed series' labels into upload labels: Pyroscope's
// own (__name__, __delta__, __session_id__, ...) are left out, as the
// profile's sample types say what it measures, and other agents' names for
// Spark's labels map to the standard ones. service_name is required.
func pushLabels(pairs []*typesv1.LabelPair) (profile.Labels, error) {
	var ls profile.Labels
	for _, l := range pairs {
		if strings.HasPrefix(l.Name, "__") || l.Value == "" {
			continue
		}
		name := l.Name
		if std, ok := labelAliases[name]; ok {
			name = std
		}
		ls = append(ls, profile.Label{Name: name, Value: l.Value})
	}
	ls = ls.Normalize()
	if v, _ := ls.Get(profile.LabelServiceName); v == "" {
		return nil, errors.New("no service_name label: it names the application, as in Pyroscope")
	}
	ls = driverExecutor(ls)
	if err := checkLabels(ls); err != nil {
		return nil, err
	}
	return ls, nil
}
