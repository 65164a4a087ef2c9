package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// ClaimedRun is an unfinished run (see Unfinished) whose thread this agent
// has claimed: it holds the thread's lease, renewed until Resume's run ends
// or Release is called, so no other agent or replica runs it meanwhile.
// Call exactly one of Resume (and range over it) or Release.
type ClaimedRun struct {
	// Thread is the claimed thread.
	Thread string

	a    *Agent
	held *heldLease
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
		c, isClaimer := a.cfg.Store.(checkpoint.Claimer)
		lr, isLeaser := a.cfg.Store.(checkpoint.Leaser)
		if isClaimer && isLeaser {
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
				if !a.lock(l.Thread) {
					// A Run or Resume of this agent is starting on it; it
					// takes over the lease (same owner) and releases it.
					continue
				}
				cr, ok, err := a.claimed(ctx, a.keep(ctx, lr, true, l))
				if err != nil {
					yield(nil, err)
					return
				}
				if ok && !yield(cr, nil) {
					return
				}
			}
		}
		threads, err := a.Unfinished(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, th := range threads {
			held, err := a.acquire(ctx, th)
			if errors.Is(err, graph.ErrThreadBusy) {
				continue // another agent runs it, or will once its lease expires
			}
			if err != nil {
				yield(nil, err)
				return
			}
			cr, ok, err := a.claimed(ctx, held)
			if err != nil {
				yield(nil, err)
				return
			}
			if ok && !yield(cr, nil) {
				return
			}
		}
	}
}

// claimed checks, under the lease held, that the thread's run is still
// unfinished; if not (or on an error) it releases the lease.
func (a *Agent) claimed(ctx context.Context, held *heldLease) (*ClaimedRun, bool, error) {
	thread := held.l.Thread
	ok, err := a.resumable(ctx, thread)
	if err != nil || !ok {
		held.release()
		if err != nil {
			return nil, false, fmt.Errorf("agent: recover thread %q: %w", thread, err)
		}
		return nil, false, nil
	}
	return &ClaimedRun{Thread: thread, a: a, held: held}, true, nil
}

// resumable reads the thread's latest checkpoint and says whether its run
// was cut between two steps and is this agent's to continue (ownership.go):
// another application's, or one another graph started, is left alone.
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
		if !c.held.use() {
			return
		}
		defer c.held.release()
		ok, err := c.a.resumable(ctx, c.Thread)
		if err != nil || !ok {
			if err != nil {
				p := &pump{a: c.a, thread: c.Thread, yield: yield}
				p.fail(err)
			}
			return
		}
		rctx, unbind := c.held.bind(ctx)
		defer unbind()
		p := &pump{a: c.a, thread: c.Thread, yield: leaseYield(rctx, yield)}
		c.a.resume(rctx, p, c.Thread, Answer{})
	}
}

// Release gives the claim up without running it: the lease is released, so
// another agent may take the thread. It does nothing after Resume ran or a
// first Release.
func (c *ClaimedRun) Release() {
	if c.held.use() {
		c.held.release()
	}
}

// heldLease is a thread lease this agent holds, with the thread locked in
// the agent, renewed in the background until release.
type heldLease struct {
	a      *Agent
	lr     checkpoint.Leaser
	l      checkpoint.Lease // as acquired: fencing compares its token
	fenced bool
	// lost is canceled, with the *checkpoint.LeaseLostError as cause,
	// when a renewal finds the lease lost or it runs out unrenewed.
	lost   context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	used     bool
	released bool
}

// acquire locks thread in this agent and takes its lease from the store
// (or the agent's own lease table); see claim for the busy errors.
func (a *Agent) acquire(ctx context.Context, thread string) (*heldLease, error) {
	if !a.lock(thread) {
		return nil, fmt.Errorf("%w: %q", graph.ErrThreadBusy, thread)
	}
	lr, fromStore := a.cfg.Store.(checkpoint.Leaser)
	if !fromStore {
		lr = a.cfg.Leases.local
	}
	l, err := lr.AcquireLease(ctx, thread, a.cfg.Leases.Owner, a.cfg.Leases.TTL)
	if err != nil {
		a.unlock(thread)
		if errors.Is(err, checkpoint.ErrLeaseHeld) {
			return nil, fmt.Errorf("%w: %q: %w", graph.ErrThreadBusy, thread, err)
		}
		return nil, fmt.Errorf("agent: lease thread %q: %w", thread, err)
	}
	return a.keep(ctx, lr, fromStore, l), nil
}

// keep starts renewing lease l, which this agent holds and whose thread it
// has locked. fenced says whether l came from the store, which can then
// fence the run's writes with it. The renewals do not end with ctx (a claim
// outlives the call that made it), only with release.
func (a *Agent) keep(ctx context.Context, lr checkpoint.Leaser, fenced bool, l checkpoint.Lease) *heldLease {
	lost, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	h := &heldLease{a: a, lr: lr, l: l, fenced: fenced, lost: lost, cancel: cancel,
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		keepLease(lost, lr, l, a.cfg.Leases.TTL, h.stop, cancel)
	}()
	return h
}

// use marks the lease as taken by Resume or Release; false if it was.
func (h *heldLease) use() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.used {
		return false
	}
	h.used = true
	return true
}

// bind returns the run's ctx: it carries the lease (so the store refuses
// the run's writes once the lease is lost) and is canceled, with the loss
// as cause, when the keeper finds the lease lost. Call unbind when the run
// ends, before release.
func (h *heldLease) bind(ctx context.Context) (context.Context, func()) {
	// Only the store that granted the lease can fence writes with it; a
	// store wrapped by something that is no Leaser would refuse a lease
	// it never saw.
	if h.fenced {
		ctx = checkpoint.WithLease(ctx, h.l)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(h.lost, func() { cancel(context.Cause(h.lost)) })
	return rctx, func() {
		stop()
		cancel(nil)
	}
}

// release stops renewing, releases the lease and unlocks the thread; later
// calls do nothing.
func (h *heldLease) release() {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return
	}
	h.released = true
	h.mu.Unlock()
	close(h.stop)
	<-h.done
	h.cancel(nil)
	// The lease would expire anyway; a release that fails only makes other
	// replicas wait for the TTL.
	rel, rcancel := context.WithTimeout(context.WithoutCancel(h.lost), h.a.cfg.Leases.TTL)
	defer rcancel()
	_ = h.lr.ReleaseLease(rel, h.l)
	h.a.unlock(h.l.Thread)
}
