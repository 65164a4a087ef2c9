package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

var _ checkpoint.RecordLog = (*Store)(nil)

// The record log (checkpoint.RecordLog) has a table of its own, created on
// first use, outside the checkpoint schema's migrations: seq is
// AUTOINCREMENT, so a number is never given twice; thread deletion does not
// touch it.
var recordsSchema = []string{
	`CREATE TABLE IF NOT EXISTS records (
		seq       INTEGER PRIMARY KEY AUTOINCREMENT,
		kind      TEXT    NOT NULL,
		thread_id TEXT,
		time      INTEGER NOT NULL,
		labels    TEXT,
		data      BLOB    NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS records_by_time ON records (time)`,
	`CREATE INDEX IF NOT EXISTS records_by_thread ON records (thread_id, seq)`,
}

// ensureRecords creates the records table on the store's first use of it.
// Creating it twice at once is harmless (IF NOT EXISTS); a failure is
// tried again by the next call.
func (s *Store) ensureRecords(ctx context.Context) error {
	if s.recordsReady.Load() {
		return nil
	}
	for _, stmt := range recordsSchema {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlite: create the records table: %w", err)
		}
	}
	s.recordsReady.Store(true)
	return nil
}

// AppendRecords stores recs in one durable transaction.
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
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: append records: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	now := time.Now()
	out := make([]checkpoint.Record, len(recs))
	for i, r := range recs {
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Time = time.UnixMicro(r.Time.UnixMicro()).UTC()
		labels, err := sqlrow.MapArg(r.Labels)
		if err != nil {
			return nil, fmt.Errorf("sqlite: encode record labels: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `INSERT INTO records (kind, thread_id, time, labels, data) VALUES (?, ?, ?, ?, ?) RETURNING seq`,
			r.Kind, r.Thread, r.Time.UnixMicro(), labels, []byte(r.Data)).Scan(&r.Seq); err != nil {
			return nil, fmt.Errorf("sqlite: append record: %w", err)
		}
		r.Data = append([]byte(nil), r.Data...)
		if len(r.Labels) == 0 {
			r.Labels = nil
		}
		out[i] = r
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: commit records: %w", err)
	}
	s.commits.Add(1)
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
	var (
		q    strings.Builder
		args []any
	)
	q.WriteString(`SELECT seq, kind, thread_id, time, labels, data FROM records WHERE seq > ?`)
	args = append(args, f.After)
	if f.Kind != "" {
		q.WriteString(` AND kind = ?`)
		args = append(args, f.Kind)
	}
	if f.Thread != "" {
		q.WriteString(` AND thread_id = ?`)
		args = append(args, f.Thread)
	}
	if !f.Since.IsZero() {
		q.WriteString(` AND time >= ?`)
		args = append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		q.WriteString(` AND time < ?`)
		args = append(args, f.Until.UnixMicro())
	}
	if len(f.Labels) > 0 {
		m, err := sqlrow.MapArg(f.Labels)
		if err != nil {
			return nil, fmt.Errorf("sqlite: encode filter: %w", err)
		}
		q.WriteString(matchSQL("labels"))
		args = append(args, m)
	}
	if f.Newest {
		q.WriteString(` ORDER BY seq DESC`)
	} else {
		q.WriteString(` ORDER BY seq`)
	}
	if f.Limit > 0 {
		q.WriteString(` LIMIT ?`)
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list records: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (checkpoint.Record, error) {
		var (
			r      checkpoint.Record
			thread *string
			t      int64
			labels []byte
			data   []byte
		)
		if err := rows.Scan(&r.Seq, &r.Kind, &thread, &t, &labels, &data); err != nil {
			return r, fmt.Errorf("sqlite: scan record: %w", err)
		}
		if thread != nil {
			r.Thread = *thread
		}
		r.Time = time.UnixMicro(t).UTC()
		var err error
		if r.Labels, err = scanMetadata(labels); err != nil {
			return r, err
		}
		r.Data = data
		return r, nil
	}, func(err error) error { return fmt.Errorf("sqlite: list records: %w", err) })
}
