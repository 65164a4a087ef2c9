package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease grants one owner (a process, a replica) the right to run a thread
// until Expires. Leases keep two replicas sharing one store from running
// the same thread at once; a holder that dies simply stops renewing, and
// its lease can be taken over once it expired.
type Lease struct {
	Thread  string    `json:"thread_id"`
	Owner   string    `json:"owner"`
	Expires time.Time `json:"expires"`
}

// Leaser is the optional interface of a Store that grants thread leases.
// Expiry is judged by the store's clock (the database's, for PostgreSQL),
// so replicas with skewed clocks still agree on who holds a lease.
type Leaser interface {
	// AcquireLease grants owner the lease of thread for ttl: when nobody
	// holds it, when the holder's lease expired, or when owner already holds
	// it (then it is extended). Held by another owner is a *LeaseHeldError.
	AcquireLease(ctx context.Context, thread, owner string, ttl time.Duration) (Lease, error)
	// RenewLease extends a lease the owner still holds by ttl from now. A
	// lease that expired or was taken over is ErrLeaseLost: the caller must
	// stop writing for the thread.
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// ReleaseLease ends a lease the owner holds. Releasing a lease that is
	// no longer held (expired, taken over, released) is not an error.
	ReleaseLease(ctx context.Context, l Lease) error
}

var (
	// ErrLeaseHeld: another owner holds the thread's lease. Errors of this
	// kind are *LeaseHeldError, naming the holder and the expiry.
	ErrLeaseHeld = errors.New("checkpoint: thread lease held by another owner")
	// ErrLeaseLost: the caller's lease expired or another owner took it over;
	// a Put or PutWrites made under it (see WithLease) was refused.
	ErrLeaseLost = errors.New("checkpoint: thread lease lost")
)

// LeaseHeldError says who holds a lease a caller asked for, and until when.
type LeaseHeldError struct {
	Thread  string
	Holder  string
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: thread %q is leased to %q until %s", ErrLeaseHeld, e.Thread, e.Holder,
		e.Expires.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// RetryAfter is how long from now until the lease expires (at least zero):
// the earliest time asking again can succeed if the holder stops renewing.
func (e *LeaseHeldError) RetryAfter(now time.Time) time.Duration {
	return max(0, e.Expires.Sub(now))
}

// LeaseLostError names the lease that was lost.
type LeaseLostError struct {
	Lease Lease
	// Holder is the owner now holding the lease, when known.
	Holder string
}

func (e *LeaseLostError) Error() string {
	msg := fmt.Sprintf("%v: %q no longer holds thread %q", ErrLeaseLost, e.Lease.Owner, e.Lease.Thread)
	if e.Holder != "" {
		msg += fmt.Sprintf(" (now held by %q)", e.Holder)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrLeaseLost) true.
func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// ValidateLeaseRequest reports what a Leaser cannot accept: an empty thread
// or owner, or a ttl that is not positive. Leasers call it first, so that all
// refuse the same input.
func ValidateLeaseRequest(thread, owner string, ttl time.Duration) error {
	switch {
	case thread == "":
		return &InvalidError{Field: "thread_id", Reason: "empty"}
	case owner == "":
		return &InvalidError{Field: "owner", Reason: "empty"}
	case ttl <= 0:
		return &InvalidError{Field: "ttl", Reason: fmt.Sprintf("%s is not positive", ttl)}
	}
	return nil
}
