package checkpoint

import (
	"context"
	"sync"
	"time"
)

// LocalLeases is a Leaser kept in process memory. Stores whose data lives in
// one process (memory), or whose writers are expected to be one process
// (SQLite), embed it; an agent on a store that is no Leaser uses one of its
// own. It cannot exclude other processes.
type LocalLeases struct {
	// Now is the clock judging expiry; nil means time.Now. Tests inject one.
	Now func() time.Time

	mu     sync.Mutex
	leases map[string]Lease
}

var _ Leaser = (*LocalLeases)(nil)

func (m *LocalLeases) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// AcquireLease implements Leaser.
func (m *LocalLeases) AcquireLease(ctx context.Context, thread, owner string, ttl time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	if err := ValidateLeaseRequest(thread, owner, ttl); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if cur, ok := m.leases[thread]; ok && cur.Owner != owner && now.Before(cur.Expires) {
		return Lease{}, &LeaseHeldError{Thread: thread, Holder: cur.Owner, Expires: cur.Expires}
	}
	if m.leases == nil {
		m.leases = map[string]Lease{}
	}
	l := Lease{Thread: thread, Owner: owner, Expires: now.Add(ttl)}
	m.leases[thread] = l
	return l, nil
}

// RenewLease implements Leaser.
func (m *LocalLeases) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, err
	}
	if err := ValidateLeaseRequest(l.Thread, l.Owner, ttl); err != nil {
		return Lease{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if err := m.checkLocked(l, now); err != nil {
		return Lease{}, err
	}
	l.Expires = now.Add(ttl)
	m.leases[l.Thread] = l
	return l, nil
}

// ReleaseLease implements Leaser.
func (m *LocalLeases) ReleaseLease(ctx context.Context, l Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.leases[l.Thread]; ok && cur.Owner == l.Owner {
		delete(m.leases, l.Thread)
	}
	return nil
}

// Fence returns ErrLeaseLost (a *LeaseLostError) when ctx carries a lease for
// thread (see WithLease) that is no longer held. Stores call it in Put and
// PutWrites while holding the lock that orders their writes, so no takeover
// can slip in between the check and the write.
func (m *LocalLeases) Fence(ctx context.Context, thread string) error {
	l, ok := LeaseFrom(ctx, thread)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkLocked(l, m.now())
}

func (m *LocalLeases) checkLocked(l Lease, now time.Time) error {
	cur, ok := m.leases[l.Thread]
	switch {
	case !ok:
		return &LeaseLostError{Lease: l}
	case cur.Owner != l.Owner:
		return &LeaseLostError{Lease: l, Holder: cur.Owner}
	case !now.Before(cur.Expires):
		return &LeaseLostError{Lease: l}
	}
	return nil
}
