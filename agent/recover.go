package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Unfinished lists the threads whose last run stopped between two steps
// without ending: the process crashed or was stopped, or the caller
// canceled. Runs waiting for an approval, finished runs and runs that failed
// (a FATAL failure) are not listed. A run in progress (here or on another
// replica) looks the same in the store and is listed too; RecoverRuns
// tells them apart by the thread's lease. Only this agent's runs are
// listed: threads of another application, and runs another version of the
// graph started, are not (application.go).
func (a *Agent) Unfinished(ctx context.Context) ([]string, error) {
	infos, err := a.cfg.Store.Threads(ctx, checkpoint.ThreadFilter{Metadata: a.ownedFilter()})
	if err != nil {
		return nil, fmt.Errorf("agent: list threads: %w", err)
	}
	var out []string
	for _, info := range infos {
		t, err := a.cfg.Store.Get(ctx, info.ThreadID, info.Latest)
		if errors.Is(err, checkpoint.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return out, fmt.Errorf("agent: read thread %q: %w", info.ThreadID, err)
		}
		if graph.StatusOf(t) == graph.StatusCanceled && a.checkOwner(info.ThreadID, t.Checkpoint.Metadata, true) == nil {
			out = append(out, info.ThreadID)
		}
	}
	return out, nil
}

// RecoverRuns resumes every unfinished run of this agent (see Unfinished),
// up to MaxConcurrency at once, each under its thread's lease, and returns
// the threads it resumed once they have all stopped. Call it when a process
// starts, before serving, or periodically on every replica of a shared
// store. A run ending in a FATAL failure is not an error of RecoverRuns;
// other failures are joined. What it resumes, skips and repeats:
// docs/persistence.md, "Agent runs after a crash".
func (a *Agent) RecoverRuns(ctx context.Context) ([]string, error) {
	ctx, end, err := a.life.join(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	limit := a.RecoveryLimit()
	var (
		mu      sync.Mutex
		errs    []error
		resumed []string
		wg      sync.WaitGroup
		sem     = make(chan struct{}, limit)
	)
	// A slot is taken before each claim, so no claimed lease waits for a
	// free worker.
	next, stop := iter.Pull2(a.ClaimUnfinished(ctx))
	defer stop()
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return resumed, errors.Join(append(errs, ctx.Err())...)
		}
		cr, err, ok := next()
		if err != nil || !ok {
			<-sem
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ran, runErr := false, error(nil)
			for _, err := range cr.Resume(ctx) {
				ran = true
				if err != nil {
					runErr = err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if ran {
				resumed = append(resumed, cr.Thread)
			}
			var fe *FatalError
			if runErr != nil && !errors.As(runErr, &fe) {
				errs = append(errs, fmt.Errorf("agent: recover thread %q: %w", cr.Thread, runErr))
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(resumed)
	return resumed, errors.Join(errs...)
}

// RecoveryLimit is how many recovered runs RecoverRuns resumes at once:
// Config.MaxConcurrency, default 8. A server recovering through this agent
// uses it as its bound when it has none of its own.
func (a *Agent) RecoveryLimit() int {
	if a.cfg.MaxConcurrency > 0 {
		return a.cfg.MaxConcurrency
	}
	return 8
}

// ClaimedRun is an unfinished run (see Unfinished) whose thread this agent
// has claimed: it holds the thread's lease, renewed until Resume's run ends
// or Release is called, so no other agent or replica runs it meanwhile.
// Call exactly one of Resume (and range over it) or Release.
type ClaimedRun struct {
	// Thread is the claimed thread.
	Thread string

	a     *Agent
	owned *owned
}

// ClaimUnfinished claims the unfinished runs one at a time, as the caller
// pulls them: each thread at most once per iteration, only threads nobody
// else holds (a thread leased by another agent or replica is skipped, as is
// one this agent runs right now), and only runs still unfinished once the
// lease is held (read again under it: another replica may have finished the
// run since it was listed). On a store that is a checkpoint.Claimer
// (PostgreSQL) the store picks and leases each thread in one statement;
// otherwise the unfinished threads are listed once when the iteration
// starts and leased in turn. Pull only as many as you can run at once:
// every claimed lease is renewed until its run ends. An error ends the
// iteration.
func (a *Agent) ClaimUnfinished(ctx context.Context) iter.Seq2[*ClaimedRun, error] {
	return func(yield func(*ClaimedRun, error) bool) {
		if a.life.isClosed() {
			yield(nil, ErrClosed)
			return
		}
		c, isClaimer := a.cfg.Store.(checkpoint.Claimer)
		lr, isLeaser := a.cfg.Store.(checkpoint.Leaser)
		if isClaimer && isLeaser {
			a.claimFromStore(ctx, c, lr, yield)
			return
		}
		a.claimListed(ctx, yield)
	}
}

// claimFromStore is ClaimUnfinished on a store that picks and leases each
// thread in one statement.
func (a *Agent) claimFromStore(ctx context.Context, c checkpoint.Claimer, lr checkpoint.Leaser, yield func(*ClaimedRun, error) bool) {
	var handled []string
	for {
		ls, err := c.ClaimResumable(ctx, a.cfg.Leases.Owner, a.cfg.Leases.TTL, checkpoint.ClaimOptions{Limit: 1, Skip: handled, Metadata: a.ownedFilter()})
		if err != nil {
			yield(nil, fmt.Errorf("agent: claim unfinished runs: %w", err))
			return
		}
		if len(ls) == 0 {
			return
		}
		l := ls[0]
		handled = append(handled, l.Thread)
		hold, err := a.g.HoldThread(l.Thread)
		if err != nil {
			// A Run or Resume of this agent is starting on it; it takes
			// over the lease (same owner) and releases it.
			continue
		}
		o, err := a.ownLeased(ctx, hold, lr, true, l)
		if err != nil {
			yield(nil, err)
			return
		}
		cr, ok, err := a.claimed(ctx, o)
		if err != nil {
			yield(nil, err)
			return
		}
		if ok && !yield(cr, nil) {
			return
		}
	}
}

// claimListed is ClaimUnfinished on any other store: the unfinished
// threads are listed once, then leased in turn.
func (a *Agent) claimListed(ctx context.Context, yield func(*ClaimedRun, error) bool) {
	threads, err := a.Unfinished(ctx)
	if err != nil {
		yield(nil, err)
		return
	}
	for _, th := range threads {
		o, err := a.own(ctx, th)
		if errors.Is(err, graph.ErrThreadBusy) {
			continue // another agent runs it, or will once its lease expires
		}
		if err != nil {
			yield(nil, err)
			return
		}
		cr, ok, err := a.claimed(ctx, o)
		if err != nil {
			yield(nil, err)
			return
		}
		if ok && !yield(cr, nil) {
			return
		}
	}
}

// claimed checks, under the lease held, that the thread's run is still
// unfinished; if not (or on an error) it releases the lease.
func (a *Agent) claimed(ctx context.Context, o *owned) (*ClaimedRun, bool, error) {
	thread := o.l.Thread
	ok, err := a.resumable(ctx, thread)
	if err != nil || !ok {
		o.release()
		if err != nil {
			return nil, false, fmt.Errorf("agent: recover thread %q: %w", thread, err)
		}
		return nil, false, nil
	}
	return &ClaimedRun{Thread: thread, a: a, owned: o}, true, nil
}

// resumable reads the thread's latest checkpoint and says whether its run
// was cut between two steps.
func (a *Agent) resumable(ctx context.Context, thread string) (bool, error) {
	t, err := a.cfg.Store.Get(ctx, thread, uuid.Nil)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("read thread: %w", err)
	}
	return graph.StatusOf(t) == graph.StatusCanceled && a.checkOwner(thread, t.Checkpoint.Metadata, true) == nil, nil
}

// Resume continues the claimed run from its last checkpoint under the lease
// already held (see RecoverRuns for what a resumed run repeats), and
// releases the lease when the run ends or the consumer stops. If the run is
// no longer unfinished when read again (it cannot change while the lease is
// held, except by a store deleting the thread), it yields nothing. A second
// call, or one after Release, yields nothing either.
func (c *ClaimedRun) Resume(ctx context.Context) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if !c.owned.use() {
			if c.a.life.isClosed() {
				p := &pump{a: c.a, thread: c.Thread, yield: yield}
				p.fail(ErrClosed)
			}
			return
		}
		defer c.owned.release()
		ok, err := c.a.resumable(ctx, c.Thread)
		if err != nil || !ok {
			if err != nil {
				p := &pump{a: c.a, thread: c.Thread, yield: yield}
				p.fail(err)
			}
			return
		}
		rctx, unbind := c.owned.bind(ctx)
		defer unbind()
		p := &pump{a: c.a, thread: c.Thread, yield: leaseYield(rctx, yield)}
		c.a.resume(rctx, p, c.Thread, Answer{})
	}
}

// Release gives the claim up without running it: the lease is released, so
// another agent may take the thread. It does nothing after Resume ran or a
// first Release.
func (c *ClaimedRun) Release() {
	if c.owned.use() {
		c.owned.release()
	}
}
