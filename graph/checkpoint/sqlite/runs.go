package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
	"github.com/capgraph/capgraph/runstore"
)

var _ runstore.Store = (*Store)(nil)

// Run records (runstore.Store) have a table of their own, created on
// first use like the record log's, outside the checkpoint schema's
// migrations. key is NULL when the record has none (UNIQUE allows many
// NULLs); input and result are BLOBs so their bytes come back unchanged.
var runsSchema = []string{
	`CREATE TABLE IF NOT EXISTS runs (
		seq       INTEGER PRIMARY KEY AUTOINCREMENT,
		id        TEXT    NOT NULL UNIQUE,
		thread_id TEXT    NOT NULL,
		status    TEXT    NOT NULL,
		key       TEXT    UNIQUE,
		input     BLOB,
		result    BLOB,
		error     TEXT    NOT NULL DEFAULT '',
		labels    TEXT,
		owner     TEXT    NOT NULL DEFAULT '',
		attempt   INTEGER NOT NULL DEFAULT 0,
		created   INTEGER NOT NULL,
		updated   INTEGER NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS runs_by_thread ON runs (thread_id, seq)`,
	`CREATE INDEX IF NOT EXISTS runs_by_status ON runs (status, seq)`,
}

const runColumns = `seq, id, thread_id, status, key, input, result, error, labels, owner, attempt, created, updated`

// runStmts are the statements of CreateRun and UpdateRun, prepared on
// the writer connection once the table exists: a run record is written
// two or three times per turn, and parsing a statement cost more than
// running it.
type runStmts struct {
	byID, byKey, insert, update *sql.Stmt // on the writer connection
	readByID, readByKey         *sql.Stmt // on the read pool (GetRun, GetRunByKey)
}

func (rs *runStmts) close() error {
	if rs == nil {
		return nil
	}
	return closeAll(rs.byID, rs.byKey, rs.insert, rs.update, rs.readByID, rs.readByKey)
}

// ensureRuns creates the runs table on first use and prepares its
// statements.
func (s *Store) ensureRuns(ctx context.Context) error {
	if s.runStmts.Load() != nil {
		return nil
	}
	s.runsMu.Lock()
	defer s.runsMu.Unlock()
	if s.runStmts.Load() != nil {
		return nil
	}
	for _, stmt := range runsSchema {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlite: create the runs table: %w", err)
		}
	}
	rs := &runStmts{}
	err := prepareAll(ctx, "the runs statements",
		stmtSpec{&rs.readByID, s.r, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		stmtSpec{&rs.readByKey, s.r, `SELECT ` + runColumns + ` FROM runs WHERE key = ?`},
		stmtSpec{&rs.byID, s.w, `SELECT ` + runColumns + ` FROM runs WHERE id = ?`},
		stmtSpec{&rs.byKey, s.w, `SELECT ` + runColumns + ` FROM runs WHERE key = ?`},
		// A key in use stores nothing and returns no row; an id in use
		// fails the statement (not the transaction).
		stmtSpec{&rs.insert, s.w, `INSERT INTO runs (id, thread_id, status, key, input, result, error, labels, owner, attempt, created, updated)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING ` + runColumns},
		stmtSpec{&rs.update, s.w, `UPDATE runs SET status = ?, key = ?, result = ?, error = ?, owner = ?, attempt = ?, updated = ? WHERE seq = ?`})
	if err != nil {
		return err
	}
	s.runStmts.Store(rs)
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(row rowScanner) (runstore.Record, error) {
	var (
		r                runstore.Record
		key              *string
		input, result    []byte
		labels           []byte
		created, updated int64
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
	r.Created, r.Updated = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return r, nil
}

// CreateRun stores rec in one durable transaction (see runstore.Store).
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
		return runstore.Record{}, false, fmt.Errorf("sqlite: encode run labels: %w", err)
	}
	var (
		out     runstore.Record
		created bool
	)
	// Written with the checkpoints' group commit (durable on return, like
	// a Put); an error that wrote nothing is a refusal, so the writes
	// grouped with it stand.
	err = s.write(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
		rs := s.runStmts.Load()
		out, created = runstore.Record{}, false
		// Inserted at once, in one statement: a key or an id in use is
		// looked up only when the insert did not store the record.
		now := time.Now().UnixMicro()
		r, ierr := scanRun(tx.StmtContext(ctx, rs.insert).QueryRowContext(ctx,
			rec.ID, rec.Thread, string(rec.Status), sqlrow.OptionalString(rec.Key), blobArg(rec.Input), blobArg(rec.Result), rec.Error, labels, rec.Owner, rec.Attempt, now, now))
		if ierr == nil {
			out, created = r, true
			return nil
		}
		// The record holding the key is the answer, even when the id is
		// in use too (a repeated CreateRun); then an id in use.
		if rec.Key != "" {
			r, err := scanRun(tx.StmtContext(ctx, rs.byKey).QueryRowContext(ctx, rec.Key))
			if err == nil {
				out = r
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: create run: %w", err)
			}
		}
		if _, err := scanRun(tx.StmtContext(ctx, rs.byID).QueryRowContext(ctx, rec.ID)); err == nil {
			return refusal{&runstore.InvalidError{Field: "id", Reason: fmt.Sprintf("run %q exists", rec.ID)}}
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: create run: %w", err)
		}
		return fmt.Errorf("sqlite: create run: %w", ierr)
	})
	if err != nil {
		return runstore.Record{}, false, err
	}
	return out, created, nil
}

// UpdateRun applies u in one durable transaction.
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
	var (
		out     runstore.Record
		refused error // ApplyRunUpdate's: out is then the record as it is
	)
	err := s.write(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
		rs := s.runStmts.Load()
		r, err := scanRun(tx.StmtContext(ctx, rs.byID).QueryRowContext(ctx, id))
		out, refused = r, nil
		if errors.Is(err, sql.ErrNoRows) {
			return refusal{fmt.Errorf("%w: run %q", runstore.ErrNotFound, id)}
		}
		if err != nil {
			return fmt.Errorf("sqlite: update run: %w", err)
		}
		// Microseconds, as stored; never before the last update.
		now := time.UnixMicro(max(time.Now().UnixMicro(), r.Updated.UnixMicro())).UTC()
		nr, err := runstore.Apply(r, u, now)
		if err != nil {
			refused = err
			return refusal{err}
		}
		if _, err := tx.StmtContext(ctx, rs.update).ExecContext(ctx,
			string(nr.Status), sqlrow.OptionalString(nr.Key), blobArg(nr.Result), nr.Error, nr.Owner, nr.Attempt, now.UnixMicro(), nr.Seq); err != nil {
			return fmt.Errorf("sqlite: update run: %w", err)
		}
		out = nr
		return nil
	})
	switch {
	case refused != nil:
		return out, refused
	case err != nil:
		return runstore.Record{}, err
	}
	return out, nil
}

// GetRun returns the record with the id.
func (s *Store) GetRun(ctx context.Context, id string) (runstore.Record, error) {
	return s.getRun(ctx, func(rs *runStmts) *sql.Stmt { return rs.readByID }, id, "run "+fmt.Sprintf("%q", id))
}

// GetRunByKey returns the record holding key.
func (s *Store) GetRunByKey(ctx context.Context, key string) (runstore.Record, error) {
	if key == "" {
		return runstore.Record{}, fmt.Errorf("%w: run key", runstore.ErrNotFound)
	}
	return s.getRun(ctx, func(rs *runStmts) *sql.Stmt { return rs.readByKey }, key, "run key")
}

func (s *Store) getRun(ctx context.Context, stmt func(*runStmts) *sql.Stmt, arg any, what string) (runstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return runstore.Record{}, err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return runstore.Record{}, err
	}
	r, err := scanRun(stmt(s.runStmts.Load()).QueryRowContext(ctx, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return runstore.Record{}, fmt.Errorf("%w: %s", runstore.ErrNotFound, what)
	}
	if err != nil {
		return runstore.Record{}, fmt.Errorf("sqlite: get run: %w", err)
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
	q.WriteString(`SELECT ` + runColumns + ` FROM runs WHERE 1 = 1`)
	if f.Thread != "" {
		q.WriteString(` AND thread_id = ?`)
		args = append(args, f.Thread)
	}
	if len(f.Status) > 0 {
		q.WriteString(` AND status IN (?` + strings.Repeat(`, ?`, len(f.Status)-1) + `)`)
		for _, st := range f.Status {
			args = append(args, string(st))
		}
	}
	if f.Before > 0 {
		q.WriteString(` AND seq < ?`)
		args = append(args, f.Before)
	}
	if !f.UpdatedBefore.IsZero() {
		q.WriteString(` AND updated < ?`)
		args = append(args, f.UpdatedBefore.UnixMicro())
	}
	if len(f.Labels) > 0 {
		m, err := sqlrow.MapArg(f.Labels)
		if err != nil {
			return nil, fmt.Errorf("sqlite: encode filter: %w", err)
		}
		q.WriteString(matchSQL("labels"))
		args = append(args, m)
	}
	q.WriteString(` ORDER BY seq DESC`)
	if f.Limit > 0 {
		q.WriteString(` LIMIT ?`)
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list runs: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (runstore.Record, error) {
		r, err := scanRun(rows)
		if err != nil {
			return r, fmt.Errorf("sqlite: scan run: %w", err)
		}
		return r, nil
	}, func(err error) error { return fmt.Errorf("sqlite: list runs: %w", err) })
}

// DeleteRuns removes the thread's records.
func (s *Store) DeleteRuns(ctx context.Context, thread string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.ensureRuns(ctx); err != nil {
		return err
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM runs WHERE thread_id = ?`, thread); err != nil {
		return fmt.Errorf("sqlite: delete runs: %w", err)
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
	res, err := s.w.ExecContext(ctx, `DELETE FROM runs WHERE status IN (?, ?, ?, ?) AND updated < ?`,
		string(runstore.Done), string(runstore.Failed), string(runstore.Interrupted), string(runstore.Canceled), before.UnixMicro())
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune runs: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
