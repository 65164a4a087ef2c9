package server

import (
	"context"
	"time"

	"github.com/capgraph/capgraph/agent"
)

// follow hands the run's events after seq after to fn, in order, calling
// beat every Heartbeat while waiting, until the run finishes (true) or ctx
// ends (false).
func (s *Server) follow(ctx context.Context, r *run, after int, fn func(agent.Event), beat func()) bool {
	t := time.NewTicker(s.cfg.Heartbeat)
	defer t.Stop()
	for {
		evs, changed, finished := r.since(after)
		for _, ev := range evs {
			fn(ev)
			after = ev.Seq
		}
		if finished {
			return true
		}
		select {
		case <-changed:
		case <-t.C:
			if beat != nil {
				beat()
			}
		case <-ctx.Done():
			return false
		}
	}
}
