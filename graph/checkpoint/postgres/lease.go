package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

var _ checkpoint.Leaser = (*Store)(nil)

type leaseQueries struct {
	acquire, renew, release, holder, fence, claim string
}

// Expiry is judged by the database clock (now()), never by a replica's, so
// replicas with skewed clocks agree on who holds a lease.
func (s *Store) prepareLeases() {
	s.lq = leaseQueries{
		// One round trip: the upsert takes the lease when it is free, expired
		// or already ours; otherwise the second branch names the holder. A
		// lease row committed by another replica after this statement's
		// snapshot can make both branches empty; AcquireLease then asks again.
		acquire: s.expand(`WITH up AS (
			INSERT INTO {{leases}} AS l (thread_id, owner, expires, acquired)
			VALUES ($1, $2, now() + $3 * interval '1 microsecond', now())
			ON CONFLICT (thread_id) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires,
				acquired = CASE WHEN l.owner = EXCLUDED.owner THEN l.acquired ELSE EXCLUDED.acquired END
			WHERE l.owner = EXCLUDED.owner OR l.expires <= now()
			RETURNING owner, expires)
		SELECT owner, expires, true FROM up
		UNION ALL
		SELECT owner, expires, false FROM {{leases}} WHERE thread_id = $1 AND NOT EXISTS (SELECT 1 FROM up)`),
		// An expired lease is not renewed even if nobody took it yet: its
		// holder may have stalled past the TTL, and another replica may be
		// about to take it; the holder must treat it as lost.
		renew: s.expand(`UPDATE {{leases}} SET expires = now() + $3 * interval '1 microsecond'
			WHERE thread_id = $1 AND owner = $2 AND expires > now() RETURNING expires`),
		release: s.expand(`DELETE FROM {{leases}} WHERE thread_id = $1 AND owner = $2`),
		holder:  s.expand(`SELECT owner FROM {{leases}} WHERE thread_id = $1`),
		// FOR SHARE: a takeover (an UPDATE of the row) waits until the
		// fenced write committed, and a write after a committed takeover
		// re-reads the row and finds another owner. Writes of the holder do
		// not block each other (shared locks).
		fence: s.expand(`SELECT 1 FROM {{leases}} WHERE thread_id = $1 AND owner = $2 AND expires > now() FOR SHARE`),
		claim: s.expand(claimSQL),
	}
}

func micros(ttl time.Duration) int64 { return max(1, ttl.Microseconds()) }

// AcquireLease implements checkpoint.Leaser in one statement.
func (s *Store) AcquireLease(ctx context.Context, thread, owner string, ttl time.Duration) (checkpoint.Lease, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Lease{}, err
	}
	if err := checkpoint.ValidateLeaseRequest(thread, owner, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	for range 5 {
		var (
			holder  string
			expires time.Time
			granted bool
		)
		err := s.pool.QueryRow(ctx, s.lq.acquire, thread, owner, micros(ttl)).Scan(&holder, &expires, &granted)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the holder's row appeared or vanished meanwhile: ask again
		}
		if err != nil {
			return checkpoint.Lease{}, fmt.Errorf("postgres: acquire lease of %s: %w", thread, err)
		}
		if !granted {
			return checkpoint.Lease{}, &checkpoint.LeaseHeldError{Thread: thread, Holder: holder, Expires: expires.UTC()}
		}
		return checkpoint.Lease{Thread: thread, Owner: owner, Expires: expires.UTC()}, nil
	}
	return checkpoint.Lease{}, fmt.Errorf("postgres: acquire lease of %s: the lease changed hands 5 times during the request", thread)
}

// RenewLease implements checkpoint.Leaser.
func (s *Store) RenewLease(ctx context.Context, l checkpoint.Lease, ttl time.Duration) (checkpoint.Lease, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Lease{}, err
	}
	if err := checkpoint.ValidateLeaseRequest(l.Thread, l.Owner, ttl); err != nil {
		return checkpoint.Lease{}, err
	}
	var expires time.Time
	err := s.pool.QueryRow(ctx, s.lq.renew, l.Thread, l.Owner, micros(ttl)).Scan(&expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return checkpoint.Lease{}, s.lost(ctx, l)
	}
	if err != nil {
		return checkpoint.Lease{}, fmt.Errorf("postgres: renew lease of %s: %w", l.Thread, err)
	}
	l.Expires = expires.UTC()
	return l, nil
}

// ReleaseLease implements checkpoint.Leaser.
func (s *Store) ReleaseLease(ctx context.Context, l checkpoint.Lease) error {
	if _, err := s.pool.Exec(ctx, s.lq.release, l.Thread, l.Owner); err != nil {
		return fmt.Errorf("postgres: release lease of %s: %w", l.Thread, err)
	}
	return nil
}

// lost builds the error for a lease that is no longer held, naming the new
// holder when there is one (best effort: the error is the same without it).
func (s *Store) lost(ctx context.Context, l checkpoint.Lease) error {
	e := &checkpoint.LeaseLostError{Lease: l}
	var holder string
	if s.pool.QueryRow(ctx, s.lq.holder, l.Thread).Scan(&holder) == nil && holder != l.Owner {
		e.Holder = holder
	}
	return e
}
