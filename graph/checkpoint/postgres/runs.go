package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
	"github.com/capgraph/capgraph/runstore"
)

var _ runstore.Store = (*Store)(nil)

// Run records (runstore.Store) have a table of their own, created on
// first use under the migration lock, like the record log's. input and
// result are bytea so their bytes come back unchanged; labels is jsonb for
// containment filters; key is NULL when the record has none.
var runsSchema = []string{
	`CREATE TABLE IF NOT EXISTS {{runs}} (
		seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id        text        NOT NULL UNIQUE,
		thread_id text        NOT NULL,
		status    text        NOT NULL,
		key       text        UNIQUE,
		input     bytea,
		result    bytea,
		error     text        NOT NULL DEFAULT '',
		labels    jsonb,
		owner     text        NOT NULL DEFAULT '',
		attempt   integer     NOT NULL DEFAULT 0,
		created   timestamptz NOT NULL,
		updated   timestamptz NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS {{runs_by_thread}} ON {{runs}} (thread_id, seq)`,
	`CREATE INDEX IF NOT EXISTS {{runs_by_status}} ON {{runs}} (status, seq)`,
}

const runColumns = `seq, id, thread_id, status, key, input, result, error, labels, owner, attempt, created, updated`

func (s *Store) runsSQL(stmt string) string {
	for _, name := range []string{"runs_by_thread", "runs_by_status", "runs_ready", "run_events", "runs"} {
		v := s.cfg.table(name)
		if name != "runs" && name != "run_events" {
			v = pgx.Identifier{name}.Sanitize() // an index name is never schema-qualified
		}
		stmt = strings.ReplaceAll(stmt, "{{"+name+"}}", v)
	}
	return stmt
}

func (s *Store) ensureRuns(ctx context.Context) error {
	if s.runsReady.Load() {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(s.cfg.Schema)); err != nil {
			return err
		}
		for _, stmt := range runsSchema {
			if _, err := tx.Exec(ctx, s.runsSQL(stmt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: create the runs table: %w", err)
	}
	s.runsReady.Store(true)
	return nil
}

func scanRun(row pgx.Row) (runstore.Record, error) {
	var (
		r                runstore.Record
		key              *string
		input, result    []byte
		labels           []byte
		created, updated time.Time
		status           string
	)
	if err := row.Scan(&r.Seq, &r.ID, &r.Thread, &status, &key, &input, &result, &r.Error, &labels, &r.Owner, &r.Attempt, &created, &updated); err != nil {
		return r, err
	}
	r.Status = runstore.Status(status)
	if key != nil {
		r.Key = *key
	}
	if len(input) > 0 {
		r.Input = input
	}
	if len(result) > 0 {
		r.Result = result
	}
	var err error
	if r.Labels, err = scanMetadata(labels); err != nil {
		return r, err
	}
	r.Created, r.Updated = created.UTC(), updated.UTC()
	return r, nil
}

// CreateRun stores rec (see runstore.Store).
func (s *Store) CreateRun(ctx context.Context, rec runstore.Record) (runstore.Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, false, err
	}
	if err := runstore.Validate(rec); err != nil {
		return runstore.Record{}, false, err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return runstore.Record{}, false, err
	}
	if rec.Status == "" {
		rec.Status = runstore.Queued
	}
	labels, err := sqlrow.MapArg(rec.Labels)
	if err != nil {
		return runstore.Record{}, false, fmt.Errorf("postgres: encode run labels: %w", err)
	}
	byKey := s.runsSQL(`SELECT ` + runColumns + ` FROM {{runs}} WHERE key = $1`)
	if rec.Key != "" {
		if r, err := scanRun(s.pool.QueryRow(ctx, byKey, rec.Key)); err == nil {
			return r, false, nil
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return runstore.Record{}, false, fmt.Errorf("postgres: create run: %w", err)
		}
	}
	now := time.UnixMicro(time.Now().UnixMicro()).UTC()
	// A record made running gets a provisional lease (provisionalLease)
	// that its owner renews with its own TTL once the run starts.
	out, err := scanRun(s.pool.QueryRow(ctx, s.runsSQL(`INSERT INTO {{runs}} (id, thread_id, status, key, input, result, error, labels, owner, attempt, created, updated, lease_expires)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, CASE WHEN $3 = 'running' THEN now() + `+provisionalLeaseSQL+` END) ON CONFLICT DO NOTHING RETURNING `+runColumns),
		rec.ID, rec.Thread, string(rec.Status), sqlrow.OptionalString(rec.Key), blobArg(rec.Input), blobArg(rec.Result), rec.Error, labels, rec.Owner, rec.Attempt, now))
	if err == nil {
		return out, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return runstore.Record{}, false, fmt.Errorf("postgres: create run: %w", err)
	}
	// Nothing inserted: a concurrent request took the key, or the id is in use.
	if rec.Key != "" {
		if r, err := scanRun(s.pool.QueryRow(ctx, byKey, rec.Key)); err == nil {
			return r, false, nil
		}
	}
	return runstore.Record{}, false, &runstore.InvalidError{Field: "id", Reason: fmt.Sprintf("run %q exists", rec.ID)}
}

// UpdateRun applies u in one transaction, the record locked.
func (s *Store) UpdateRun(ctx context.Context, id string, u runstore.Update) (runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, err
	}
	if err := runstore.ValidateUpdate(u); err != nil {
		return runstore.Record{}, err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return runstore.Record{}, err
	}
	var out runstore.Record
	var conflict bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		r, err := scanRun(tx.QueryRow(ctx, s.runsSQL(`SELECT `+runColumns+` FROM {{runs}} WHERE id = $1 FOR UPDATE`), id))
		if err != nil {
			return err
		}
		now := time.UnixMicro(max(time.Now().UnixMicro(), r.Updated.UnixMicro())).UTC()
		nr, err := runstore.Apply(r, u, now)
		if err != nil {
			out, conflict = r, true
			return nil
		}
		// A start takes a provisional lease; an ending drops the lease.
		if _, err := tx.Exec(ctx, s.runsSQL(`UPDATE {{runs}} SET status = $1, key = $2, result = $3, error = $4, owner = $5, attempt = $6, updated = $7,
			lease_expires = CASE WHEN $1 <> 'running' THEN NULL WHEN $9 THEN now() + `+provisionalLeaseSQL+` ELSE lease_expires END
			WHERE seq = $8`),
			string(nr.Status), sqlrow.OptionalString(nr.Key), blobArg(nr.Result), nr.Error, nr.Owner, nr.Attempt, now, nr.Seq, u.Start); err != nil {
			return err
		}
		out = nr
		return nil
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return runstore.Record{}, fmt.Errorf("%w: run %q", runstore.ErrNotFound, id)
	case err != nil:
		return runstore.Record{}, fmt.Errorf("postgres: update run: %w", err)
	case conflict:
		return out, runstore.ErrConflict
	}
	return out, nil
}

// GetRun returns the record with the id.
func (s *Store) GetRun(ctx context.Context, id string) (runstore.Record, error) {
	return s.getRun(ctx, `id = $1`, id, "run "+strconv.Quote(id))
}

// GetRunByKey returns the record holding key.
func (s *Store) GetRunByKey(ctx context.Context, key string) (runstore.Record, error) {
	if key == "" {
		return runstore.Record{}, fmt.Errorf("%w: run key", runstore.ErrNotFound)
	}
	return s.getRun(ctx, `key = $1`, key, "run key")
}

func (s *Store) getRun(ctx context.Context, where string, arg any, what string) (runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return runstore.Record{}, err
	}
	r, err := scanRun(s.pool.QueryRow(ctx, s.runsSQL(`SELECT `+runColumns+` FROM {{runs}} WHERE `+where), arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return runstore.Record{}, fmt.Errorf("%w: %s", runstore.ErrNotFound, what)
	}
	if err != nil {
		return runstore.Record{}, fmt.Errorf("postgres: get run: %w", err)
	}
	return r, nil
}

// ListRuns returns the records f keeps, newest first.
func (s *Store) ListRuns(ctx context.Context, f runstore.Filter) ([]runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return nil, err
	}
	var (
		q    strings.Builder
		args []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	q.WriteString(`SELECT ` + runColumns + ` FROM {{runs}} WHERE true`)
	if f.Thread != "" {
		q.WriteString(` AND thread_id = ` + arg(f.Thread))
	}
	if len(f.Status) > 0 {
		st := make([]string, len(f.Status))
		for i, v := range f.Status {
			st[i] = string(v)
		}
		q.WriteString(` AND status = ANY(` + arg(st) + `)`)
	}
	if f.Before > 0 {
		q.WriteString(` AND seq < ` + arg(f.Before))
	}
	if !f.UpdatedBefore.IsZero() {
		q.WriteString(` AND updated < ` + arg(f.UpdatedBefore))
	}
	if len(f.Labels) > 0 {
		m, err := sqlrow.MapArg(f.Labels)
		if err != nil {
			return nil, fmt.Errorf("postgres: encode filter: %w", err)
		}
		q.WriteString(` AND labels @> ` + arg(m) + `::jsonb`)
	}
	q.WriteString(` ORDER BY seq DESC`)
	if f.Limit > 0 {
		q.WriteString(` LIMIT ` + arg(f.Limit))
	}
	rows, err := s.pool.Query(ctx, s.runsSQL(q.String()), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list runs: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (runstore.Record, error) {
		r, err := scanRun(rows)
		if err != nil {
			return r, fmt.Errorf("postgres: scan run: %w", err)
		}
		return r, nil
	}, func(err error) error { return fmt.Errorf("postgres: list runs: %w", err) })
}

// DeleteRuns removes the thread's records.
func (s *Store) DeleteRuns(ctx context.Context, thread string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, s.runsSQL(`DELETE FROM {{runs}} WHERE thread_id = $1`), thread); err != nil {
		return fmt.Errorf("postgres: delete runs: %w", err)
	}
	return nil
}

// PruneRuns removes terminal records last updated before the time.
func (s *Store) PruneRuns(ctx context.Context, before time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, s.runsSQL(`DELETE FROM {{runs}} WHERE status = ANY($1) AND updated < $2`),
		[]string{string(runstore.Done), string(runstore.Failed), string(runstore.Interrupted), string(runstore.Canceled)}, before)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune runs: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
