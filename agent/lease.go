package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

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

// claim takes thread for one Run or Resume: the in-process lock first (no
// store round trip when this Agent is busy with it), then the store's
// lease. A busy thread is graph.ErrThreadBusy; when another owner holds the
// lease the error also wraps its *checkpoint.LeaseHeldError (holder,
// expiry). The returned ctx carries the lease, so the store refuses the
// run's writes once it is lost, and is canceled with the
// *checkpoint.LeaseLostError as cause when a renewal finds it lost: the run
// stops at its next step instead of computing work nobody can store.
// release stops renewing, releases the lease and unlocks; call it once.
func (a *Agent) claim(ctx context.Context, thread string) (context.Context, func(), error) {
	held, err := a.acquire(ctx, thread)
	if err != nil {
		return ctx, nil, err
	}
	held.use()
	rctx, unbind := held.bind(ctx)
	return rctx, func() {
		unbind()
		held.release()
	}, nil
}

// keepLease renews l every ttl/3 until stop is closed. A renewal that finds
// the lease lost cancels the run with the loss as cause. A renewal that
// merely failed (the database unreachable for a moment) is tried again next
// tick, but when the lease runs out by the local clock before a renewal
// succeeds, the run is canceled then, not at the next tick: from that moment
// another replica may take the thread over.
func keepLease(ctx context.Context, lr checkpoint.Leaser, l checkpoint.Lease, ttl time.Duration,
	stop <-chan struct{}, cancel context.CancelCauseFunc) {
	every := ttl / 3
	// Measured from before the acquisition returned, so never later than the
	// store's own expiry unless the clocks drift apart by more than the margin.
	margin := every / 2
	tick := time.NewTimer(every)
	defer tick.Stop()
	expire := time.NewTimer(ttl - margin)
	defer expire.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-expire.C:
			cancel(&checkpoint.LeaseLostError{Lease: l})
			return
		case <-tick.C:
		}
		start := time.Now()
		rctx, rcancel := context.WithTimeout(ctx, every)
		nl, err := lr.RenewLease(rctx, l, ttl)
		rcancel()
		switch {
		case err == nil:
			l = nl
			expire.Reset(ttl - margin - time.Since(start))
		case errors.Is(err, checkpoint.ErrLeaseLost):
			cancel(err)
			return
		}
		tick.Reset(every)
	}
}

// leaseYield makes a run stopped by a lost lease say so: its error is the
// context's, wrapped with the *checkpoint.LeaseLostError.
func leaseYield(ctx context.Context, yield func(Event, error) bool) func(Event, error) bool {
	return func(e Event, err error) bool {
		if err != nil && isCtxErr(err) {
			if cause := context.Cause(ctx); errors.Is(cause, checkpoint.ErrLeaseLost) {
				err = fmt.Errorf("%w: %w", cause, err)
				e.Err = err.Error()
			}
		}
		return yield(e, err)
	}
}

func (a *Agent) lock(thread string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy == nil {
		a.busy = map[string]bool{}
	}
	if a.busy[thread] {
		return false
	}
	a.busy[thread] = true
	return true
}

func (a *Agent) unlock(thread string) {
	a.mu.Lock()
	delete(a.busy, thread)
	a.mu.Unlock()
}
