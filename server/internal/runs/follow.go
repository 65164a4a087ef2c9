package runs

import (
	"context"
	"time"

	"github.com/capgraph/capgraph/agent"
)

// Batcher is where a follower writes the frames of the events at hand:
// Hold keeps them, Release writes them together (one write to the
// connection for all of them). Its methods accept a nil receiver.
type Batcher interface {
	Hold()
	Release()
}

// Follow hands the run's events after seq after to fn, in order, calling
// beat every heartbeat while waiting, until the run finishes (true) or ctx
// ends (false). The frames fn writes to b for the events at hand are
// released together.
func (r *Run[D]) Follow(ctx context.Context, after int, heartbeat time.Duration, b Batcher, fn func(agent.Event), beat func()) bool {
	if b == nil {
		b = noBatch{}
	}
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	var evs []agent.Event // reused: every wake-up copies the events at hand into it
	for {
		var (
			changed  <-chan struct{}
			finished bool
		)
		evs, changed, finished = r.Since(after, evs)
		b.Hold()
		for _, ev := range evs {
			fn(ev)
			after = ev.Seq
		}
		clear(evs) // what fn was handed is not kept alive by the buffer
		b.Release()
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

// noBatch writes nothing.
type noBatch struct{}

func (noBatch) Hold()    {}
func (noBatch) Release() {}
