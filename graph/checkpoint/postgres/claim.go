package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

var _ checkpoint.Claimer = (*Store)(nil)

// claimSQL picks resumable threads (latest checkpoint with next nodes and no
// interrupt or error write) without a live lease, matching the metadata
// filter, oldest first, and leases
// them in the same statement. FOR UPDATE OF t SKIP LOCKED: a replica
// claiming at the same time skips the thread rows this one has picked
// instead of waiting for them, so concurrent claims are disjoint and never
// block; the ON CONFLICT guard keeps a lease taken in between.
const claimSQL = `WITH cand AS (
	SELECT t.thread_id FROM {{threads}} t
	JOIN {{checkpoints}} c ON c.thread_id = t.thread_id AND c.id = t.latest_id
	WHERE cardinality(c.next) > 0
		AND NOT EXISTS (SELECT 1 FROM {{writes}} w
			WHERE w.thread_id = c.thread_id AND w.checkpoint_id = c.id AND w.kind IN ('interrupt', 'error'))
		AND NOT EXISTS (SELECT 1 FROM {{leases}} l WHERE l.thread_id = t.thread_id AND l.expires > now())
		AND t.thread_id <> ALL($4::text[])
		AND ($5::jsonb IS NULL OR t.metadata @> $5::jsonb)
	ORDER BY t.latest_id
	LIMIT $3
	FOR UPDATE OF t SKIP LOCKED)
INSERT INTO {{leases}} AS l (thread_id, owner, expires, acquired)
SELECT thread_id, $1, now() + $2 * interval '1 microsecond', now() FROM cand
ON CONFLICT (thread_id) DO UPDATE SET owner = EXCLUDED.owner, expires = EXCLUDED.expires, acquired = EXCLUDED.acquired
WHERE l.expires <= now() OR l.owner = EXCLUDED.owner
RETURNING thread_id, expires`

// ClaimResumable implements checkpoint.Claimer in one statement.
func (s *Store) ClaimResumable(ctx context.Context, owner string, ttl time.Duration, opts checkpoint.ClaimOptions) ([]checkpoint.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateLeaseRequest("-", owner, ttl); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, &checkpoint.InvalidError{Field: "limit", Reason: fmt.Sprintf("%d is negative", opts.Limit)}
	}
	limit := max(1, opts.Limit)
	skip := opts.Skip
	if skip == nil {
		skip = []string{}
	}
	md, err := sqlrow.MapArg(opts.Metadata)
	if err != nil {
		return nil, fmt.Errorf("postgres: encode metadata filter: %w", err)
	}
	rows, err := s.pool.Query(ctx, s.lq.claim, owner, micros(ttl), limit, skip, md)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim resumable threads: %w", err)
	}
	defer rows.Close()
	var out []checkpoint.Lease
	for rows.Next() {
		l := checkpoint.Lease{Owner: owner}
		if err := rows.Scan(&l.Thread, &l.Expires); err != nil {
			return nil, fmt.Errorf("postgres: claim resumable threads: %w", err)
		}
		l.Expires = l.Expires.UTC()
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim resumable threads: %w", err)
	}
	return out, nil
}
