package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Thread ownership: a Run, a Resume or a claimed recovery owns its thread
// for as long as it lasts, in two layers:
//
//   - in this process, the graph's hold on the thread (graph.HoldThread):
//     the engine's one busy-thread set, so that no other run of this agent's
//     graph starts on it, and no store round trip is made when it is busy;
//   - across processes, the store's lease (checkpoint.Leaser), renewed every
//     TTL/3 and fencing the run's writes, so that replicas sharing the store
//     never run one thread at once.
//
// An owner's runs go through the engine under the hold (graph.WithThreadHold)
// and under the lease (checkpoint.WithLease), and stop when the lease is
// lost. See docs/architecture.md, "Thread ownership".

// DefaultLeaseTTL is how long a thread lease lasts without renewal. A run
// renews it every TTL/3; a replica that dies leaves its threads to others
// after at most this long.
const DefaultLeaseTTL = 30 * time.Second

// LeaseConfig configures thread leases. Every Run and Resume holds the
// thread's lease (checkpoint.Leaser) for as long as it runs, so that agents
// sharing one store, in this process or in other replicas, never run one
// thread at once. A store that is no checkpoint.Leaser gets an in-process
// lease table of the agent's own, which excludes nothing beyond this Agent;
// so a wrapper around a store (a type embedding checkpoint.Store) must
// forward the Leaser methods (and checkpoint.Claimer's) to keep replicas
// apart. See docs/persistence.md, "Several replicas".
type LeaseConfig struct {
	// Owner names this agent in leases (and in the busy errors other
	// replicas see). It must differ between replicas. Default: host name,
	// process id and a random suffix, new for every Agent.
	Owner string
	// TTL is the lease duration, renewed every TTL/3 while a run lasts.
	// Default DefaultLeaseTTL. A shorter TTL hands the threads of a dead
	// replica over sooner but needs the store to answer a renewal within
	// TTL/3 or so.
	TTL time.Duration

	local *checkpoint.LocalLeases // for a store that is no Leaser
}

func (c LeaseConfig) validate() error {
	if c.TTL < 0 {
		return &ConfigError{Field: "Leases.TTL", Problem: fmt.Sprintf("%s is negative", c.TTL)}
	}
	if c.TTL > 0 && c.TTL < 3*time.Millisecond {
		return &ConfigError{Field: "Leases.TTL", Problem: fmt.Sprintf("%s is too short to renew every TTL/3", c.TTL)}
	}
	return nil
}

func (c *LeaseConfig) defaults() {
	if c.TTL == 0 {
		c.TTL = DefaultLeaseTTL
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	c.local = &checkpoint.LocalLeases{}
}

// LeaseOwner returns the name this agent holds thread leases under.
func (a *Agent) LeaseOwner() string { return a.cfg.Leases.Owner }

// LeaseTTL returns the duration of this agent's thread leases.
func (a *Agent) LeaseTTL() time.Duration { return a.cfg.Leases.TTL }

// owned is a thread this agent owns: held in its graph, leased in the store
// (or the agent's own lease table), the lease renewed in the background
// until release.
type owned struct {
	a      *Agent
	hold   *graph.ThreadHold
	lr     checkpoint.Leaser
	l      checkpoint.Lease // as acquired: fencing compares its token
	fenced bool             // l came from the store, which can fence writes with it
	// lost is canceled, with the *checkpoint.LeaseLostError as cause,
	// when a renewal finds the lease lost or it runs out unrenewed.
	lost   context.Context
	cancel context.CancelCauseFunc
	keeper *leaseKeeper

	mu       sync.Mutex
	used     bool
	released bool
}

// ownThread takes thread for one Run or Resume and returns the run's ctx
// (see bind) and the release to call once when it ends. A busy thread is
// graph.ErrThreadBusy; when another owner holds the lease the error also
// wraps its *checkpoint.LeaseHeldError (holder, expiry).
func (a *Agent) ownThread(ctx context.Context, thread string) (context.Context, func(), error) {
	o, err := a.own(ctx, thread)
	if err != nil {
		return ctx, nil, err
	}
	if !o.use() {
		return ctx, nil, ErrClosed // Close released it meanwhile
	}
	rctx, unbind := o.bind(ctx)
	return rctx, func() {
		unbind()
		o.release()
	}, nil
}

// own holds thread in the graph, then takes its lease from the store (or
// the agent's own lease table); see ownThread for the busy errors.
func (a *Agent) own(ctx context.Context, thread string) (*owned, error) {
	if a.life.isClosed() {
		return nil, ErrClosed
	}
	hold, err := a.g.HoldThread(thread)
	if err != nil {
		return nil, err
	}
	lr, fromStore := a.cfg.Store.(checkpoint.Leaser)
	if !fromStore {
		lr = a.cfg.Leases.local
	}
	l, err := lr.AcquireLease(ctx, thread, a.cfg.Leases.Owner, a.cfg.Leases.TTL)
	if err != nil {
		hold.Release()
		if errors.Is(err, checkpoint.ErrLeaseHeld) {
			return nil, fmt.Errorf("%w: %q: %w", graph.ErrThreadBusy, thread, err)
		}
		return nil, fmt.Errorf("agent: lease thread %q: %w", thread, err)
	}
	return a.ownLeased(ctx, hold, lr, fromStore, l)
}

// ownLeased starts renewing lease l, whose thread this agent holds. The
// renewals do not end with ctx (a claim outlives the call that made it),
// only with release or Close. Once the agent is closed, the lease and the
// hold are given up again and the error is ErrClosed.
func (a *Agent) ownLeased(ctx context.Context, hold *graph.ThreadHold, lr checkpoint.Leaser, fenced bool, l checkpoint.Lease) (*owned, error) {
	lost, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	o := &owned{a: a, hold: hold, lr: lr, l: l, fenced: fenced, lost: lost, cancel: cancel,
		keeper: keepLease(lost, lr, l, a.cfg.Leases.TTL, cancel)}
	if err := a.life.add(o); err != nil {
		o.unlease()
		return nil, err
	}
	return o, nil
}

// use marks the ownership as taken by a run or a Release; false if it was.
func (o *owned) use() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.used {
		return false
	}
	o.used = true
	return true
}

// bind returns the run's ctx: it carries the graph hold (so the engine runs
// the thread for this owner), the lease (so the store refuses the run's
// writes once the lease is lost), and is canceled, with the loss as cause,
// when the keeper finds the lease lost: the run stops at its next step
// instead of computing work nobody can store. Call unbind when the run
// ends, before release.
func (o *owned) bind(ctx context.Context) (context.Context, func()) {
	ctx = graph.WithThreadHold(ctx, o.hold)
	// Only the store that granted the lease can fence writes with it; a
	// store wrapped by something that is no Leaser would refuse a lease
	// it never saw.
	if o.fenced {
		ctx = checkpoint.WithLease(ctx, o.l)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(o.lost, func() { cancel(context.Cause(o.lost)) })
	return rctx, func() {
		stop()
		cancel(nil)
	}
}

// release stops renewing, releases the lease and the graph hold, and
// tells the agent the thread is no longer owned; later calls do nothing.
func (o *owned) release() {
	if o.unlease() {
		o.a.life.remove(o)
	}
}

// unlease is release but for the agent's lifetime; false if it ran before.
func (o *owned) unlease() bool {
	o.mu.Lock()
	if o.released {
		o.mu.Unlock()
		return false
	}
	o.released = true
	o.mu.Unlock()
	o.keeper.stop()
	o.cancel(nil)
	// The lease would expire anyway; a release that fails only makes other
	// replicas wait for the TTL.
	rel, rcancel := context.WithTimeout(context.WithoutCancel(o.lost), o.a.cfg.Leases.TTL)
	defer rcancel()
	_ = o.lr.ReleaseLease(rel, o.l)
	o.hold.Release()
	return true
}

// leaseKeeper renews a lease every ttl/3 until stopped. A renewal that
// finds the lease lost cancels the run with the loss as cause. A renewal
// that merely failed (the database unreachable for a moment) is tried again
// next tick, but when the lease runs out by the local clock before a
// renewal succeeds, the run is canceled then, not at the next tick: from
// that moment another replica may take the thread over.
//
// It runs on timers, not on a goroutine of its own: most turns end before
// the first renewal is due, and a goroutine per run cost two hand-offs at
// every run's end, on the way to its last event.
type leaseKeeper struct {
	lr     checkpoint.Leaser
	ttl    time.Duration
	ctx    context.Context // renewals stop with it
	cancel context.CancelCauseFunc

	mu          sync.Mutex
	l           checkpoint.Lease
	deadline    time.Time // when the lease runs out by the local clock
	stopped     bool
	tick, timer *time.Timer
	renewing    sync.WaitGroup
}

func keepLease(ctx context.Context, lr checkpoint.Leaser, l checkpoint.Lease, ttl time.Duration, cancel context.CancelCauseFunc) *leaseKeeper {
	k := &leaseKeeper{lr: lr, ttl: ttl, ctx: ctx, cancel: cancel, l: l}
	every := ttl / 3
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setDeadline(time.Now())
	k.timer = time.AfterFunc(time.Until(k.deadline), k.expire)
	k.tick = time.AfterFunc(every, k.renew)
	return k
}

// setDeadline starts the lease's local expiry from start, a moment before
// the store granted or renewed it: never later than the store's own expiry
// unless the clocks drift apart by more than the margin (k.mu held).
func (k *leaseKeeper) setDeadline(start time.Time) {
	margin := k.ttl / 6
	k.deadline = start.Add(k.ttl - margin)
}

// expire cancels the run when the lease ran out unrenewed.
func (k *leaseKeeper) expire() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if wait := time.Until(k.deadline); wait > 0 { // renewed meanwhile
		k.timer.Reset(wait)
		return
	}
	k.stopped = true
	k.tick.Stop()
	k.cancel(&checkpoint.LeaseLostError{Lease: k.l})
}

func (k *leaseKeeper) renew() {
	k.mu.Lock()
	if k.stopped || k.ctx.Err() != nil {
		k.mu.Unlock()
		return
	}
	k.renewing.Add(1)
	l := k.l
	k.mu.Unlock()
	defer k.renewing.Done()

	every := k.ttl / 3
	start := time.Now()
	rctx, rcancel := context.WithTimeout(k.ctx, every)
	nl, err := k.lr.RenewLease(rctx, l, k.ttl)
	rcancel()

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	switch {
	case err == nil:
		k.l = nl
		k.setDeadline(start)
		k.timer.Reset(time.Until(k.deadline))
	case errors.Is(err, checkpoint.ErrLeaseLost):
		k.stopped = true
		k.timer.Stop()
		k.cancel(err)
		return
	}
	k.tick.Reset(every)
}

// stop ends the renewals; a renewal under way is waited for.
func (k *leaseKeeper) stop() {
	k.mu.Lock()
	k.stopped = true
	k.tick.Stop()
	k.timer.Stop()
	k.mu.Unlock()
	k.renewing.Wait()
}

// leaseYield makes a run stopped by a lost lease, or by Close, say so: its
// error is the context's, wrapped with the *checkpoint.LeaseLostError or
// ErrClosed.
func leaseYield(ctx context.Context, yield func(Event, error) bool) func(Event, error) bool {
	return func(e Event, err error) bool {
		if err != nil && isCtxErr(err) {
			if cause := context.Cause(ctx); errors.Is(cause, checkpoint.ErrLeaseLost) || errors.Is(cause, ErrClosed) {
				err = fmt.Errorf("%w: %w", cause, err)
				e.Err = err.Error()
			}
		}
		return yield(e, err)
	}
}
