package agent

import (
	"context"
	"sync"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// The retention of a finished turn's intermediate checkpoints
// (Config.KeepIntermediate). The Put that ends a turn prunes its thread in
// the same transaction (checkpoint.WithPruning), so the default costs no
// commit of its own; a positive retention also needs the threads no turn
// comes back to swept now and then, which ending turns start.

// graphCtx is the context of a run of the graph on thread: the thread for
// the node wrappers and, unless intermediate checkpoints are kept for good,
// the pruning of the thread when the run ends.
func (a *Agent) graphCtx(ctx context.Context, thread string) context.Context {
	ctx = withThread(ctx, thread)
	if a.pruner != nil && a.cfg.KeepIntermediate >= 0 {
		ctx = checkpoint.WithPruning(ctx, a.cfg.KeepIntermediate)
	}
	return ctx
}

// Prune prunes the intermediate checkpoints of this application's finished
// turns that Config.KeepIntermediate no longer keeps, in every thread of
// the application (its own, by their metadata, in a store other
// applications may share): with a zero KeepIntermediate every finished
// turn's, with a positive one those of turns that ended longer ago than
// that, with a negative one none. A store that does not prune has nothing
// to do. Safe while turns run, here and in other replicas.
func (a *Agent) Prune(ctx context.Context) (checkpoint.PruneResult, error) {
	ctx, end, err := a.life.join(ctx)
	if err != nil {
		return checkpoint.PruneResult{}, err
	}
	defer end()
	return a.prune(ctx)
}

// prune is Prune, registered with the agent's lifetime by the caller.
func (a *Agent) prune(ctx context.Context) (checkpoint.PruneResult, error) {
	if a.pruner == nil || a.cfg.KeepIntermediate < 0 {
		return checkpoint.PruneResult{}, nil
	}
	opts := checkpoint.PruneOptions{}
	if a.cfg.Application != "" {
		opts.Metadata = map[string]string{MetaApplication: a.cfg.Application}
	}
	if a.cfg.KeepIntermediate > 0 {
		opts.FinishedBefore = a.cfg.Now().Add(-a.cfg.KeepIntermediate)
	}
	return a.pruner.Prune(ctx, opts)
}

// sweeper runs Prune in the background after turns end, at most once per
// interval and one at a time, when turns keep their intermediate
// checkpoints for a while (a positive KeepIntermediate).
type sweeper struct {
	mu      sync.Mutex
	last    time.Time
	running bool
}

// sweepInterval is how often turns ending start a sweep: a quarter of the
// retention, between a minute and an hour.
func sweepInterval(keep time.Duration) time.Duration {
	return min(max(keep/4, time.Minute), time.Hour)
}

// afterTurn starts a sweep when one is due.
func (a *Agent) afterTurn() {
	keep := a.cfg.KeepIntermediate
	if a.pruner == nil || keep <= 0 {
		return
	}
	now := a.cfg.Now()
	sw := &a.sweep
	sw.mu.Lock()
	if sw.running || (!sw.last.IsZero() && now.Sub(sw.last) < sweepInterval(keep)) {
		sw.mu.Unlock()
		return
	}
	end, err := a.life.begin()
	if err != nil {
		sw.mu.Unlock()
		return // closed: nothing starts any more
	}
	sw.running, sw.last = true, now
	sw.mu.Unlock()
	// The sweep is the agent's: Close cancels it and waits for it.
	go func() {
		defer end()
		defer func() {
			sw.mu.Lock()
			sw.running = false
			sw.mu.Unlock()
		}()
		// Best effort: a failed sweep is tried again by a later turn, and
		// each turn's own thread is pruned when it ends anyway.
		_, _ = a.prune(a.life.ctx)
	}()
}
