package server

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"

	"github.com/sparkprof/sparkprof/ingest"
)

// pusher adapts Pyroscope's push API (push.v1.PusherService/Push over the
// Connect protocol) to the ingest pipeline (ingest.Pipeline.Push).
type pusher struct{ s *Server }

// handlePush routes the push API under its service path.
func (s *Server) handlePush() (string, http.Handler) {
	return pushv1connect.NewPusherServiceHandler(pusher{s: s}, connect.WithReadMaxBytes(int(s.cfg.MaxBodyBytes)))
}

// Push stores the push's profiles, each as an upload labelled with its
// series' labels.
func (p pusher) Push(ctx context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	client := req.Header().Get("User-Agent") // Alloy names itself here
	if client == "" {
		client = "push"
	}
	who := ingest.Sender{Tenant: headerTenant(req.Header()), Remote: req.Peer().Addr, SpyName: client}
	if err := p.s.ingest.Push(ctx, who.Tenant, who, req.Msg); err != nil {
		p.s.metrics.uploadError(statusOf(err))
		return nil, connectError(err)
	}
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}
