package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// scriptedLeaser answers renewals with err (nil: renewed), taking slow each.
type scriptedLeaser struct {
	mu      sync.Mutex
	err     error
	slow    time.Duration
	renewed []time.Time
}

func (s *scriptedLeaser) AcquireLease(context.Context, string, string, time.Duration) (checkpoint.Lease, error) {
	return checkpoint.Lease{}, nil
}

func (s *scriptedLeaser) RenewLease(ctx context.Context, l checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	time.Sleep(s.slow)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewed = append(s.renewed, time.Now())
	if s.err != nil {
		return checkpoint.Lease{}, s.err
	}
	l.Expires = time.Now().Add(ttl)
	return l, nil
}

func (s *scriptedLeaser) ReleaseLease(context.Context, checkpoint.Lease) error { return nil }

func (s *scriptedLeaser) renewals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.renewed)
}

// The keeper renews every TTL/3 while the run lasts; a renewal that finds
// the lease lost cancels the run at once; renewals that only fail cancel it
// when the lease runs out by the local clock (5/6 of the TTL after the last
// success), not later; after stop nothing is renewed, and stop waits for a
// renewal under way. Virtual time.
func TestLeaseKeeper(t *testing.T) {
	const ttl = 3 * time.Second
	keep := func(lr checkpoint.Leaser) (*leaseKeeper, context.Context) {
		ctx, cancel := context.WithCancelCause(context.Background())
		return keepLease(ctx, lr, checkpoint.Lease{Thread: "t", Owner: "me"}, ttl, cancel), ctx
	}
	t.Run("renews", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lr := &scriptedLeaser{}
			k, ctx := keep(lr)
			time.Sleep(10*ttl + ttl/6)
			if ctx.Err() != nil || lr.renewals() != 30 {
				t.Fatalf("after 10 TTLs: %d renewals, run %v; want 30 and the run going on", lr.renewals(), context.Cause(ctx))
			}
			k.stop()
			time.Sleep(3 * ttl)
			if lr.renewals() != 30 || ctx.Err() != nil {
				t.Fatalf("after stop: %d renewals, run %v; want none more and no cancel", lr.renewals(), context.Cause(ctx))
			}
		})
	})
	t.Run("lost", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lr := &scriptedLeaser{err: checkpoint.ErrLeaseLost}
			start := time.Now()
			_, ctx := keep(lr)
			<-ctx.Done()
			if took := time.Since(start); took != ttl/3 || !errors.Is(context.Cause(ctx), checkpoint.ErrLeaseLost) {
				t.Fatalf("canceled after %s with %v; want at the first renewal (%s) with ErrLeaseLost", took, context.Cause(ctx), ttl/3)
			}
			time.Sleep(2 * ttl)
			if lr.renewals() != 1 {
				t.Fatalf("%d renewals after the lease was lost; want 1", lr.renewals())
			}
		})
	})
	t.Run("unreachable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lr := &scriptedLeaser{}
			start := time.Now()
			_, ctx := keep(lr)
			time.Sleep(ttl / 2) // one renewal succeeds at TTL/3
			lr.mu.Lock()
			lr.err = errors.New("connection refused")
			lr.mu.Unlock()
			<-ctx.Done()
			want := ttl/3 + ttl - ttl/6
			var lost *checkpoint.LeaseLostError
			if took := time.Since(start); took != want || !errors.As(context.Cause(ctx), &lost) {
				t.Fatalf("canceled after %s with %v; want when the renewed lease runs out locally (%s) with a LeaseLostError", took, context.Cause(ctx), want)
			}
		})
	})
	t.Run("stop waits for a renewal under way", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			lr := &scriptedLeaser{slow: ttl / 6}
			k, _ := keep(lr)
			time.Sleep(ttl/3 + ttl/12) // the renewal is under way
			start := time.Now()
			k.stop()
			if took := time.Since(start); took != ttl/12 || lr.renewals() != 1 {
				t.Fatalf("stop returned after %s with %d renewals; want after the renewal under way (%s), 1", took, lr.renewals(), ttl/12)
			}
		})
	})
}
