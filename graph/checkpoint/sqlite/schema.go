package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrSchemaTooNew: the database was migrated by a newer build than this one.
// Opening it could misread data, so New refuses.
var ErrSchemaTooNew = errors.New("sqlite: database schema is newer than this build")

// migrations[i] brings the schema from version i to i+1. Append only: a
// released migration is never edited.
var migrations = [][]string{
	// 1: checkpoints, pending writes and a per-thread summary.
	{
		// Times are Unix microseconds (NULL = the zero time); ids are the 16
		// UUID bytes, whose byte order is UUIDv7 creation order.
		`CREATE TABLE checkpoints (
			thread_id  TEXT    NOT NULL,
			id         BLOB    NOT NULL,
			parent_id  BLOB,
			run_id     BLOB,
			step       INTEGER NOT NULL,
			state      BLOB,
			next       TEXT,
			not_before INTEGER,
			metadata   TEXT,
			created    INTEGER,
			PRIMARY KEY (thread_id, id)
		)`,
		// seq (the rowid) keeps the order in which keys were first written; an
		// upsert keeps the row, hence the order.
		`CREATE TABLE writes (
			seq           INTEGER PRIMARY KEY,
			thread_id     TEXT NOT NULL,
			checkpoint_id BLOB NOT NULL,
			task          TEXT NOT NULL,
			kind          TEXT NOT NULL,
			value         BLOB,
			UNIQUE (thread_id, checkpoint_id, task, kind),
			FOREIGN KEY (thread_id, checkpoint_id) REFERENCES checkpoints (thread_id, id) ON DELETE CASCADE
		)`,
		// threads is maintained by Put so that listing a user's threads does
		// not scan every checkpoint.
		`CREATE TABLE threads (
			thread_id TEXT PRIMARY KEY,
			first_id  BLOB NOT NULL,
			latest_id BLOB NOT NULL,
			metadata  TEXT,
			created   INTEGER,
			updated   INTEGER
		)`,
		`CREATE INDEX threads_by_latest ON threads (latest_id)`,
	},
	// 2: a state may be stored compressed (state_deflate = 1: raw DEFLATE,
	// RFC 1951, of the state's bytes); rows written before are not.
	{
		`ALTER TABLE checkpoints ADD COLUMN state_deflate INTEGER NOT NULL DEFAULT 0`,
	},
}

// migrate brings the database to the latest schema version in one IMMEDIATE
// transaction, so concurrent processes opening the same file migrate once.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("sqlite: create schema_migrations: %w", err)
	}
	var have int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("sqlite: read schema version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("%w: database is at version %d, this build knows up to %d", ErrSchemaTooNew, have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		for _, stmt := range migrations[v-1] {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqlite: migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
			v, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("sqlite: record migration %d: %w", v, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit migrations: %w", err)
	}
	return nil
}

// SchemaVersion returns the schema version of the open database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("sqlite: read schema version: %w", err)
	}
	return v, nil
}
