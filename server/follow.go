package server

import (
	"context"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/sse"
)

// follow hands the run's events after seq after to fn, in order, calling
// beat every Heartbeat while waiting, until the run finishes (true) or ctx
// ends (false). The frames fn writes to sse (nil: none) for the events at
// hand are flushed together, one write to the connection for all of them.
func (s *Server) follow(ctx context.Context, r *run, after int, sse *sse.Writer, fn func(agent.Event), beat func()) bool {
	return r.Follow(ctx, after, s.cfg.Heartbeat, sse, fn, beat)
}
