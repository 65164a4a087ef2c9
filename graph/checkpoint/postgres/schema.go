package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrSchemaTooNew: the database was migrated by a newer build than this one.
var ErrSchemaTooNew = errors.New("postgres: database schema is newer than this build")

// migrations[i] brings the schema from version i to i+1. {{name}} is replaced
// by the qualified table name. Append only.
var migrations = [][]string{
	// 1: checkpoints, pending writes and a per-thread summary.
	{
		// state is bytea, not jsonb: the engine's bytes must come back
		// unchanged (jsonb reorders keys and drops whitespace).
		`CREATE TABLE {{checkpoints}} (
			thread_id  text        NOT NULL,
			id         uuid        NOT NULL,
			parent_id  uuid,
			run_id     uuid,
			step       integer     NOT NULL,
			state      bytea,
			next       text[],
			not_before timestamptz,
			metadata   jsonb,
			created    timestamptz,
			PRIMARY KEY (thread_id, id)
		)`,
		// seq keeps the order keys were first written in; an upsert keeps the
		// row and so its seq.
		`CREATE TABLE {{writes}} (
			seq           bigint GENERATED ALWAYS AS IDENTITY,
			thread_id     text NOT NULL,
			checkpoint_id uuid NOT NULL,
			task          text NOT NULL,
			kind          text NOT NULL,
			value         bytea,
			PRIMARY KEY (thread_id, checkpoint_id, task, kind),
			FOREIGN KEY (thread_id, checkpoint_id) REFERENCES {{checkpoints}} (thread_id, id) ON DELETE CASCADE
		)`,
		`CREATE TABLE {{threads}} (
			thread_id text PRIMARY KEY,
			first_id  uuid NOT NULL,
			latest_id uuid NOT NULL,
			metadata  jsonb,
			created   timestamptz,
			updated   timestamptz
		)`,
		`CREATE INDEX ON {{threads}} (latest_id DESC)`,
		`CREATE INDEX ON {{threads}} USING gin (metadata jsonb_path_ops)`,
	},
	// 2: thread leases (see lease.go). One row per thread ever leased; a
	// released lease deletes its row.
	{
		`CREATE TABLE {{leases}} (
			thread_id text        PRIMARY KEY,
			owner     text        NOT NULL,
			expires   timestamptz NOT NULL,
			acquired  timestamptz NOT NULL
		)`,
	},
	// 3: the run records become the runs queue shared by replicas (see
	// queue.go): a lease and its expiry, a not-before time, a cancel
	// request; and the runs' events, so any replica streams any run. The
	// records' table was created on first use before; it is made here when
	// it does not exist yet.
	append(append([]string{}, runsSchema...),
		`ALTER TABLE {{runs}}
			ADD COLUMN IF NOT EXISTS lease_expires    timestamptz,
			ADD COLUMN IF NOT EXISTS not_before       timestamptz,
			ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL DEFAULT false`,
		`CREATE INDEX IF NOT EXISTS {{runs_ready}} ON {{runs}} (seq) WHERE status IN ('queued', 'running')`,
		`CREATE TABLE IF NOT EXISTS {{run_events}} (
			run_id text    NOT NULL REFERENCES {{runs}} (id) ON DELETE CASCADE,
			seq    integer NOT NULL,
			data   bytea   NOT NULL,
			PRIMARY KEY (run_id, seq)
		)`,
	),
	// 4: request-rate buckets shared by replicas (see rate.go): one row per
	// key, its tokens as of at.
	{
		`CREATE TABLE {{rate_buckets}} (
			key    text             PRIMARY KEY,
			tokens double precision NOT NULL,
			at     timestamptz      NOT NULL
		)`,
	},
}

func (s *Store) expand(stmt string) string {
	for _, name := range []string{"checkpoints", "writes", "threads", "leases", "rate_buckets", "schema_migrations"} {
		stmt = strings.ReplaceAll(stmt, "{{"+name+"}}", s.cfg.table(name))
	}
	return stmt
}

// lockKey derives the advisory lock for migrating one schema, so replicas
// serialise on it while stores in other schemas do not wait.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("capgraph/checkpoint/postgres migrate " + schema))
	return int64(h.Sum64())
}

func (s *Store) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(s.cfg.Schema)); err != nil {
			return fmt.Errorf("postgres: take migration lock: %w", err)
		}
		if s.cfg.Schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.cfg.Schema}.Sanitize()); err != nil {
				return fmt.Errorf("postgres: create schema %q: %w", s.cfg.Schema, err)
			}
		}
		if _, err := tx.Exec(ctx, s.expand(`CREATE TABLE IF NOT EXISTS {{schema_migrations}} (
			version    integer PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`)); err != nil {
			return fmt.Errorf("postgres: create schema_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, s.expand(`SELECT COALESCE(MAX(version), 0) FROM {{schema_migrations}}`)).Scan(&have); err != nil {
			return fmt.Errorf("postgres: read schema version: %w", err)
		}
		if have > len(migrations) {
			return fmt.Errorf("%w: database is at version %d, this build knows up to %d", ErrSchemaTooNew, have, len(migrations))
		}
		for v := have + 1; v <= len(migrations); v++ {
			for _, stmt := range migrations[v-1] {
				if _, err := tx.Exec(ctx, s.runsSQL(s.expand(stmt))); err != nil {
					return fmt.Errorf("postgres: migration %d: %w", v, err)
				}
			}
			if _, err := tx.Exec(ctx, s.expand(`INSERT INTO {{schema_migrations}} (version) VALUES ($1)`), v); err != nil {
				return fmt.Errorf("postgres: record migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// SchemaVersion returns the schema version of the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, s.expand(`SELECT COALESCE(MAX(version), 0) FROM {{schema_migrations}}`)).Scan(&v); err != nil {
		return 0, fmt.Errorf("postgres: read schema version: %w", err)
	}
	return v, nil
}
