package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

var _ checkpoint.RecordLog = (*Store)(nil)

// The record log (checkpoint.RecordLog) has a table of its own, created on
// first use under the migration lock, outside the checkpoint schema's
// migrations. data is bytea so its bytes come back unchanged; labels is
// jsonb for containment filters. Thread deletion does not touch it.
var recordsSchema = []string{
	`CREATE TABLE IF NOT EXISTS {{records}} (
		seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		kind      text        NOT NULL,
		thread_id text        NOT NULL DEFAULT '',
		time      timestamptz NOT NULL,
		labels    jsonb,
		data      bytea       NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS {{records_by_time}} ON {{records}} (time)`,
	`CREATE INDEX IF NOT EXISTS {{records_by_thread}} ON {{records}} (thread_id, seq)`,
}

// recordsLockKey is the advisory lock appends to schema's record log take.
func recordsLockKey(schema string) int64 { return lockKey(schema + " records") }

func (s *Store) recordsSQL(stmt string) string {
	for _, name := range []string{"records_by_time", "records_by_thread", "records"} {
		v := s.cfg.table(name)
		if name != "records" {
			v = pgx.Identifier{name}.Sanitize() // an index name is never schema-qualified
		}
		stmt = strings.ReplaceAll(stmt, "{{"+name+"}}", v)
	}
	return stmt
}

func (s *Store) ensureRecords(ctx context.Context) error {
	if s.recordsReady.Load() {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Replicas starting together would race on CREATE TABLE IF NOT
		// EXISTS; the migration lock serialises them.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(s.cfg.Schema)); err != nil {
			return err
		}
		for _, stmt := range recordsSchema {
			if _, err := tx.Exec(ctx, s.recordsSQL(stmt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: create the records table: %w", err)
	}
	s.recordsReady.Store(true)
	return nil
}

// AppendRecords stores recs in one transaction.
func (s *Store) AppendRecords(ctx context.Context, recs ...checkpoint.Record) ([]checkpoint.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.ValidateRecords(recs); err != nil {
		return nil, err
	}
	if err := s.ensureRecords(ctx); err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]checkpoint.Record, len(recs))
	insert := s.recordsSQL(`INSERT INTO {{records}} (kind, thread_id, time, labels, data) VALUES ($1, $2, $3, $4, $5) RETURNING seq`)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Appends take turns, across replicas: a Seq is taken at the
		// insert and becomes visible at the commit, so two appends at once
		// could commit out of Seq order, and a reader paging with After
		// would skip the lower one for good. Under the lock the order of
		// Seqs is the order of commits. Appends are audit records of
		// side-effecting steps: rare beside checkpoints.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, recordsLockKey(s.cfg.Schema)); err != nil {
			return err
		}
		for i, r := range recs {
			if r.Time.IsZero() {
				r.Time = now
			}
			r.Time = time.UnixMicro(r.Time.UnixMicro()).UTC()
			labels, err := sqlrow.MapArg(r.Labels)
			if err != nil {
				return fmt.Errorf("encode record labels: %w", err)
			}
			if err := tx.QueryRow(ctx, insert, r.Kind, r.Thread, r.Time, labels, []byte(r.Data)).Scan(&r.Seq); err != nil {
				return err
			}
			r.Data = append([]byte(nil), r.Data...)
			if len(r.Labels) == 0 {
				r.Labels = nil
			}
			out[i] = r
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: append records: %w", err)
	}
	return out, nil
}

// Records lists the records f keeps.
func (s *Store) Records(ctx context.Context, f checkpoint.RecordFilter) ([]checkpoint.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.ensureRecords(ctx); err != nil {
		return nil, err
	}
	var q strings.Builder
	args := []any{f.After}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	q.WriteString(s.recordsSQL(`SELECT seq, kind, thread_id, time, labels, data FROM {{records}} WHERE seq > $1`))
	if f.Kind != "" {
		q.WriteString(` AND kind = ` + arg(f.Kind))
	}
	if f.Thread != "" {
		q.WriteString(` AND thread_id = ` + arg(f.Thread))
	}
	if !f.Since.IsZero() {
		q.WriteString(` AND time >= ` + arg(f.Since))
	}
	if !f.Until.IsZero() {
		q.WriteString(` AND time < ` + arg(f.Until))
	}
	if len(f.Labels) > 0 {
		m, err := sqlrow.MapArg(f.Labels)
		if err != nil {
			return nil, fmt.Errorf("postgres: encode filter: %w", err)
		}
		q.WriteString(` AND labels @> ` + arg(m) + `::jsonb`)
	}
	if f.Newest {
		q.WriteString(` ORDER BY seq DESC`)
	} else {
		q.WriteString(` ORDER BY seq`)
	}
	if f.Limit > 0 {
		q.WriteString(` LIMIT ` + arg(f.Limit))
	}
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list records: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (checkpoint.Record, error) {
		var (
			r      checkpoint.Record
			t      time.Time
			labels []byte
		)
		if err := rows.Scan(&r.Seq, &r.Kind, &r.Thread, &t, &labels, &r.Data); err != nil {
			return r, fmt.Errorf("postgres: scan record: %w", err)
		}
		r.Time = t.UTC()
		var err error
		if r.Labels, err = scanMetadata(labels); err != nil {
			return r, err
		}
		return r, nil
	}, func(err error) error { return fmt.Errorf("postgres: list records: %w", err) })
}
