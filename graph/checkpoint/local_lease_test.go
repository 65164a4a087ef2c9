package checkpoint_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// LocalLeases judges expiry by its injected clock: a table of steps, each at
// a moment of that clock, with the outcome it must have.
func TestLocalLeasesClock(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	now := t0
	m := &checkpoint.LocalLeases{Now: func() time.Time { return now }}
	ctx := context.Background()
	var held checkpoint.Lease
	for _, st := range []struct {
		at     time.Duration // clock offset from t0
		op     string        // acquire, renew, release, fence
		owner  string
		want   error         // nil, ErrLeaseHeld, ErrLeaseLost
		expiry time.Duration // for a granted lease: its expiry's offset
	}{
		{0, "acquire", "a", nil, 10 * time.Second},
		{5 * time.Second, "acquire", "b", checkpoint.ErrLeaseHeld, 0},
		{5 * time.Second, "fence", "a", nil, 0},
		{6 * time.Second, "renew", "a", nil, 16 * time.Second},
		{15 * time.Second, "acquire", "b", checkpoint.ErrLeaseHeld, 0}, // renewed: still a's
		{16 * time.Second, "fence", "a", checkpoint.ErrLeaseLost, 0},   // expiry is exclusive
		{16 * time.Second, "renew", "a", checkpoint.ErrLeaseLost, 0},
		{16 * time.Second, "acquire", "b", nil, 26 * time.Second},
		{17 * time.Second, "release", "a", nil, 0}, // a's stale release frees nothing
		{17 * time.Second, "acquire", "c", checkpoint.ErrLeaseHeld, 0},
		{18 * time.Second, "release", "b", nil, 0},
		{18 * time.Second, "acquire", "c", nil, 28 * time.Second},
	} {
		now = t0.Add(st.at)
		name := fmt.Sprintf("%s %s at +%s", st.op, st.owner, st.at)
		var (
			got checkpoint.Lease
			err error
		)
		switch st.op {
		case "acquire":
			got, err = m.AcquireLease(ctx, "t", st.owner, 10*time.Second)
		case "renew":
			got, err = m.RenewLease(ctx, checkpoint.Lease{Thread: "t", Owner: st.owner, Expires: held.Expires}, 10*time.Second)
		case "release":
			err = m.ReleaseLease(ctx, checkpoint.Lease{Thread: "t", Owner: st.owner})
		case "fence":
			err = m.Fence(checkpoint.WithLease(ctx, checkpoint.Lease{Thread: "t", Owner: st.owner}), "t")
		}
		if !errors.Is(err, st.want) || (st.want == nil && err != nil) {
			t.Fatalf("%s: err = %v, want %v", name, err, st.want)
		}
		if err == nil && st.expiry != 0 {
			if !got.Expires.Equal(t0.Add(st.expiry)) || got.Owner != st.owner {
				t.Fatalf("%s: lease %+v, want owner %s expiring at +%s", name, got, st.owner, st.expiry)
			}
			held = got
		}
	}
}

// Fence ignores a ctx without a lease, or with the lease of another thread.
func TestFenceOnlyItsThread(t *testing.T) {
	m := &checkpoint.LocalLeases{}
	ctx := context.Background()
	if err := m.Fence(ctx, "t"); err != nil {
		t.Errorf("Fence without a lease: %v", err)
	}
	other := checkpoint.WithLease(ctx, checkpoint.Lease{Thread: "u", Owner: "a"})
	if err := m.Fence(other, "t"); err != nil {
		t.Errorf("Fence of t under a lease of u: %v", err)
	}
	if err := m.Fence(other, "u"); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Errorf("Fence of u under a lease never granted: %v, want ErrLeaseLost", err)
	}
}

// A replica takes a thread's lease before running it; another owner finds
// it busy, learns who holds it and until when, and may take it over once it
// expired.
func ExampleLeaser() {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var leases checkpoint.Leaser = &checkpoint.LocalLeases{Now: func() time.Time { return now }}
	ctx := context.Background()

	l, _ := leases.AcquireLease(ctx, "thread-1", "replica-a", 30*time.Second)
	fmt.Println("a holds it until", l.Expires.Format(time.TimeOnly))

	_, err := leases.AcquireLease(ctx, "thread-1", "replica-b", 30*time.Second)
	var held *checkpoint.LeaseHeldError
	if errors.As(err, &held) {
		fmt.Println("b: busy, held by", held.Holder, "retry in", held.RetryAfter(now))
	}

	now = now.Add(31 * time.Second) // a died and stopped renewing
	l, _ = leases.AcquireLease(ctx, "thread-1", "replica-b", 30*time.Second)
	fmt.Println("b took it over:", l.Owner)
	_, err = leases.RenewLease(ctx, checkpoint.Lease{Thread: "thread-1", Owner: "replica-a"}, 30*time.Second)
	fmt.Println("a renews:", errors.Is(err, checkpoint.ErrLeaseLost))
	// Output:
	// a holds it until 09:00:30
	// b: busy, held by replica-a retry in 30s
	// b took it over: replica-b
	// a renews: true
}
