package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
	"github.com/capgraph/capgraph/runstore"
)

var (
	_ runstore.Queue   = (*Store)(nil)
	_ runstore.Events  = (*Store)(nil)
	_ runstore.Signals = (*Store)(nil)
)

// The runs queue is the runs table itself (migration 3): a ready run is a
// queued record past its not_before, or a running record whose lease
// expired; claims take one with SELECT … FOR UPDATE SKIP LOCKED, so
// replicas claiming at once each get another run and never wait for one
// another. Lease times are the database's clock (now()), so replicas'
// clocks need not agree. Wake-ups are LISTEN/NOTIFY on one channel per
// schema.

// provisionalLeaseSQL is the lease a record gets when it is made running
// without a TTL (CreateRun, UpdateRun with Start): long enough for its
// owner to start the run and renew with its own TTL.
const provisionalLeaseSQL = `interval '10 seconds'`

// ClaimRun takes one ready run (see runstore.Queue).
func (s *Store) ClaimRun(ctx context.Context, owner, id string, ttl time.Duration) (runstore.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, false, err
	}
	if owner == "" || ttl <= 0 {
		return runstore.Record{}, false, &runstore.InvalidError{Field: "owner", Reason: "claims need an owner and a positive TTL"}
	}
	if err := s.ensureRuns(ctx); err != nil {
		return runstore.Record{}, false, err
	}
	only := ""
	args := []any{owner, micros(ttl)}
	if id != "" {
		only = ` AND id = $3`
		args = append(args, id)
	}
	cols := strings.ReplaceAll(", "+runColumns, ", ", ", r.")[2:]
	r, err := scanRun(s.pool.QueryRow(ctx, s.runsSQL(`WITH ready AS (
			SELECT seq FROM {{runs}}
			WHERE ((status = 'queued' AND (not_before IS NULL OR not_before <= now()))
			    OR (status = 'running' AND (lease_expires IS NULL OR lease_expires < now())))`+only+`
			ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
		UPDATE {{runs}} r SET status = 'running', owner = $1, attempt = r.attempt + 1,
			lease_expires = now() + $2 * interval '1 microsecond', not_before = NULL,
			updated = greatest(r.updated, date_trunc('microseconds', now()))
		FROM ready WHERE r.seq = ready.seq RETURNING `+cols), args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return runstore.Record{}, false, nil
	}
	if err != nil {
		return runstore.Record{}, false, fmt.Errorf("postgres: claim run: %w", err)
	}
	return r, true, nil
}

// RenewRun extends owner's lease (see runstore.Queue).
func (s *Store) RenewRun(ctx context.Context, id, owner string, ttl time.Duration) (bool, error) {
	if err := s.ensureRuns(ctx); err != nil {
		return false, err
	}
	var canceled bool
	err := s.pool.QueryRow(ctx, s.runsSQL(`UPDATE {{runs}} SET lease_expires = now() + $3 * interval '1 microsecond',
			updated = greatest(updated, date_trunc('microseconds', now()))
		WHERE id = $1 AND owner = $2 AND status = 'running' RETURNING cancel_requested`), id, owner, micros(ttl)).Scan(&canceled)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, runstore.ErrConflict
	}
	if err != nil {
		return false, fmt.Errorf("postgres: renew run lease: %w", err)
	}
	return canceled, nil
}

// RequeueRun gives owner's running record back to the queue.
func (s *Store) RequeueRun(ctx context.Context, id, owner string, notBefore time.Time) error {
	if err := s.ensureRuns(ctx); err != nil {
		return err
	}
	var nb any
	if !notBefore.IsZero() {
		nb = notBefore
	}
	tag, err := s.pool.Exec(ctx, s.runsSQL(`UPDATE {{runs}} SET status = 'queued', owner = '', lease_expires = NULL, not_before = $3,
			updated = greatest(updated, date_trunc('microseconds', now()))
		WHERE id = $1 AND owner = $2 AND status = 'running'`), id, owner, nb)
	if err != nil {
		return fmt.Errorf("postgres: requeue run: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return runstore.ErrConflict
	}
	return s.Signal(ctx, runstore.Signal{Kind: runstore.SignalQueued, Run: id})
}

// RequestCancel marks a run to be stopped; a queued run is canceled at once.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	if err := s.ensureRuns(ctx); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, s.runsSQL(`UPDATE {{runs}} SET cancel_requested = true,
			status = CASE WHEN status = 'queued' THEN 'canceled' ELSE status END,
			updated = greatest(updated, date_trunc('microseconds', now()))
		WHERE id = $1 AND status IN ('queued', 'running')`), id); err != nil {
		return fmt.Errorf("postgres: request cancel: %w", err)
	}
	return s.Signal(ctx, runstore.Signal{Kind: runstore.SignalCancel, Run: id})
}

// CountRunning counts running records with live leases and the labels.
func (s *Store) CountRunning(ctx context.Context, labels map[string]string) (int, error) {
	if err := s.ensureRuns(ctx); err != nil {
		return 0, err
	}
	m, err := sqlrow.MapArg(labels)
	if err != nil {
		return 0, fmt.Errorf("postgres: encode labels: %w", err)
	}
	var n int
	if err := s.pool.QueryRow(ctx, s.runsSQL(`SELECT count(*) FROM {{runs}}
		WHERE status = 'running' AND lease_expires > now() AND labels @> coalesce($1::jsonb, '{}'::jsonb)`), m).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count running runs: %w", err)
	}
	return n, nil
}

// AppendRunEvents stores a run's events (see runstore.Events).
func (s *Store) AppendRunEvents(ctx context.Context, run string, events []runstore.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := s.ensureRuns(ctx); err != nil {
		return err
	}
	seqs := make([]int32, len(events))
	data := make([][]byte, len(events))
	for i, ev := range events {
		seqs[i], data[i] = int32(ev.Seq), ev.Data
	}
	if _, err := s.pool.Exec(ctx, s.runsSQL(`INSERT INTO {{run_events}} (run_id, seq, data)
		SELECT $1, seq, data FROM unnest($2::integer[], $3::bytea[]) AS e(seq, data) ON CONFLICT DO NOTHING`), run, seqs, data); err != nil {
		return fmt.Errorf("postgres: append run events: %w", err)
	}
	return nil
}

// ListRunEvents returns the run's events after a seq.
func (s *Store) ListRunEvents(ctx context.Context, run string, after int) ([]runstore.Event, error) {
	if err := s.ensureRuns(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.runsSQL(`SELECT seq, data FROM {{run_events}} WHERE run_id = $1 AND seq > $2 ORDER BY seq`), run, after)
	if err != nil {
		return nil, fmt.Errorf("postgres: list run events: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (runstore.Event, error) {
		var ev runstore.Event
		err := rows.Scan(&ev.Seq, &ev.Data)
		return ev, err
	}, func(err error) error { return fmt.Errorf("postgres: list run events: %w", err) })
}

// channel is the NOTIFY channel of the store's schema.
func (s *Store) channel() string {
	h := fnv.New32a()
	h.Write([]byte(s.cfg.Schema))
	return fmt.Sprintf("capgraph_runs_%08x", h.Sum32())
}

// Signal sends a wake-up to every process listening on the store.
func (s *Store) Signal(ctx context.Context, sig runstore.Signal) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel(), string(sig.Kind)+":"+sig.Run); err != nil {
		return fmt.Errorf("postgres: notify: %w", err)
	}
	return nil
}

// ListenRuns holds one connection of its own in LISTEN.
func (s *Store) ListenRuns(ctx context.Context) (<-chan runstore.Signal, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	conn := pc.Hijack() // out of the pool: it stays in LISTEN
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel()}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: listen: %w", err)
	}
	out := make(chan runstore.Signal, 256)
	go func() {
		defer close(out)
		defer conn.Close(context.Background())
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			kind, run, _ := strings.Cut(n.Payload, ":")
			select {
			case out <- runstore.Signal{Kind: runstore.SignalKind(kind), Run: run}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}
