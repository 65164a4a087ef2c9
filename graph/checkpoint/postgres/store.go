package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

// Store is a checkpoint.Store in PostgreSQL. It is safe for concurrent use,
// and any number of Stores (replicas) may share one database.
type Store struct {
	cfg      Config
	pool     *pgxpool.Pool
	q        queries
	lq       leaseQueries
	lockSeed int64 // mixes the schema into per-thread lock keys
	// recordsReady and runsReady: the records and runs tables exist
	// (created on first use, records.go and runs.go).
	recordsReady, runsReady atomic.Bool
}

var (
	_ checkpoint.Store       = (*Store)(nil)
	_ checkpoint.TuplePutter = (*Store)(nil)
	_ checkpoint.FirstPutter = (*Store)(nil)
)

type queries struct {
	threadLockShared, threadLock                                                                              string
	put, fencedPut, checkWrite, putWrite, getLatest, getByID, deleteThreads, deleteCheckpoints, list, threads string
	prune, prunePut, hasThread                                                                                string
}

// New connects to cfg.DSN and migrates the schema.
func New(ctx context.Context, cfg Config) (*Store, error) {
	pc, err := cfg.poolConfig()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := &Store{cfg: cfg, pool: pool, lockSeed: lockKey(cfg.Schema)}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	s.prepare()
	return s, nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

const cpColumns = `thread_id, id, parent_id, run_id, step, state, next, not_before, metadata, created`

func (s *Store) prepare() {
	s.prepareLeases()
	s.q = queries{
		// Per-thread advisory locks: Puts share one, DeleteThread takes it
		// alone, so a delete sees every Put that started before it and no Put
		// lands between its statements (which would leave a checkpoint without
		// its thread row, or the reverse). The key mixes the schema in, so
		// stores in different schemas never wait for each other; a hash
		// collision only serialises two threads briefly.
		threadLockShared: `SELECT pg_advisory_xact_lock_shared(hashtextextended($1, $2))`,
		threadLock:       `SELECT pg_advisory_xact_lock(hashtextextended($1, $2))`,
		hasThread:        s.expand(`SELECT EXISTS (SELECT 1 FROM {{checkpoints}} WHERE thread_id = $1)`),
		// One statement, hence one round trip and one implicit transaction:
		// the checkpoint and the thread summary commit together. The summary
		// follows the greatest id whatever order replicas write in; SET
		// expressions see the row's old values.
		put: s.expand(`WITH c AS (
			INSERT INTO {{checkpoints}} (` + cpColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (thread_id, id) DO UPDATE SET
				parent_id = EXCLUDED.parent_id, run_id = EXCLUDED.run_id, step = EXCLUDED.step,
				state = EXCLUDED.state, next = EXCLUDED.next, not_before = EXCLUDED.not_before,
				metadata = EXCLUDED.metadata, created = EXCLUDED.created
			RETURNING 1)
		INSERT INTO {{threads}} AS t (thread_id, first_id, latest_id, metadata, created, updated)
		VALUES ($1, $2, $2, $9, $10, $10)
		ON CONFLICT (thread_id) DO UPDATE SET
			first_id  = CASE WHEN EXCLUDED.first_id <= t.first_id THEN EXCLUDED.first_id ELSE t.first_id END,
			created   = CASE WHEN EXCLUDED.first_id <= t.first_id THEN EXCLUDED.created ELSE t.created END,
			latest_id = CASE WHEN EXCLUDED.latest_id >= t.latest_id THEN EXCLUDED.latest_id ELSE t.latest_id END,
			metadata  = CASE WHEN EXCLUDED.latest_id >= t.latest_id THEN EXCLUDED.metadata ELSE t.metadata END,
			updated   = CASE WHEN EXCLUDED.latest_id >= t.latest_id THEN EXCLUDED.updated ELSE t.updated END`),
		// put, written only while the caller holds the thread's lease
		// (checkpoint.WithLease): $11 is the owner. The lease row is read FOR
		// SHARE (see leaseQueries.fence); without it no checkpoint and no
		// summary are written, and the statement reports 0 rows.
		fencedPut: s.expand(`WITH l AS (
			SELECT 1 FROM {{leases}} WHERE thread_id = $1 AND owner = $11 AND expires > now() FOR SHARE),
		c AS (
			INSERT INTO {{checkpoints}} (` + cpColumns + `)
			SELECT $1::text, $2::uuid, $3::uuid, $4::uuid, $5::integer, $6::bytea, $7::text[], $8::timestamptz, $9::jsonb, $10::timestamptz
			WHERE EXISTS (SELECT 1 FROM l)
			ON CONFLICT (thread_id, id) DO UPDATE SET
				parent_id = EXCLUDED.parent_id, run_id = EXCLUDED.run_id, step = EXCLUDED.step,
				state = EXCLUDED.state, next = EXCLUDED.next, not_before = EXCLUDED.not_before,
				metadata = EXCLUDED.metadata, created = EXCLUDED.created
			RETURNING 1)
		INSERT INTO {{threads}} AS t (thread_id, first_id, latest_id, metadata, created, updated)
		SELECT $1, $2, $2, $9, $10, $10 FROM c
		ON CONFLICT (thread_id) DO UPDATE SET
			first_id  = CASE WHEN EXCLUDED.first_id <= t.first_id THEN EXCLUDED.first_id ELSE t.first_id END,
			created   = CASE WHEN EXCLUDED.first_id <= t.first_id THEN EXCLUDED.created ELSE t.created END,
			latest_id = CASE WHEN EXCLUDED.latest_id >= t.latest_id THEN EXCLUDED.latest_id ELSE t.latest_id END,
			metadata  = CASE WHEN EXCLUDED.latest_id >= t.latest_id THEN EXCLUDED.metadata ELSE t.metadata END,
			updated   = CASE WHEN EXCLUDED.latest_id >= t.latest_id THEN EXCLUDED.updated ELSE t.updated END`),
		// FOR KEY SHARE keeps a concurrent DeleteThread from removing the
		// checkpoint until the writes are committed.
		checkWrite: s.expand(`SELECT 1 FROM {{checkpoints}} WHERE thread_id = $1 AND id = $2 FOR KEY SHARE`),
		putWrite: s.expand(`INSERT INTO {{writes}} (thread_id, checkpoint_id, task, kind, value) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (thread_id, checkpoint_id, task, kind) DO UPDATE SET value = EXCLUDED.value`),
		// The checkpoint and its writes in one statement, so one snapshot.
		getLatest:         s.expand(getSQL(`WHERE thread_id = $1 ORDER BY id DESC LIMIT 1`)),
		getByID:           s.expand(getSQL(`WHERE thread_id = $1 AND id = $2`)),
		deleteThreads:     s.expand(`DELETE FROM {{threads}} WHERE thread_id = $1`),
		deleteCheckpoints: s.expand(`DELETE FROM {{checkpoints}} WHERE thread_id = $1`), // writes cascade
		list:              s.expand(`SELECT ` + cpColumns + ` FROM {{checkpoints}} WHERE thread_id = $1`),
		threads:           s.expand(`SELECT thread_id, latest_id, metadata, created, updated FROM {{threads}} WHERE true`),
		prune:             s.expand(pruneSQL("")),
		// A Put's pruning, in its transaction: only once its checkpoint
		// ($3) is written (a fenced Put may have written nothing).
		prunePut: s.expand(pruneSQL(`AND EXISTS (SELECT 1 FROM {{checkpoints}} WHERE thread_id = ($1::text[])[1] AND id = $3)`)),
	}
}

func getSQL(where string) string {
	return `SELECT ` + cpColumns + `,
		ARRAY(SELECT w.task  FROM {{writes}} w WHERE w.thread_id = c.thread_id AND w.checkpoint_id = c.id ORDER BY w.seq),
		ARRAY(SELECT w.kind  FROM {{writes}} w WHERE w.thread_id = c.thread_id AND w.checkpoint_id = c.id ORDER BY w.seq),
		ARRAY(SELECT w.value FROM {{writes}} w WHERE w.thread_id = c.thread_id AND w.checkpoint_id = c.id ORDER BY w.seq)
		FROM (SELECT ` + cpColumns + ` FROM {{checkpoints}} ` + where + `) c`
}

// Put stores a checkpoint (replacing one with the same thread and id) and
// updates the thread summary, in one round trip and one transaction.
func (s *Store) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return err
	}
	args, err := checkpointArgs(cp)
	if err != nil {
		return err
	}
	// A batch outside a transaction runs in one implicit transaction: the
	// shared thread lock is held until the checkpoint is committed, and it
	// costs no extra round trip.
	b := &pgx.Batch{}
	b.Queue(s.q.threadLockShared, cp.ThreadID, s.lockSeed)
	lease, fenced := checkpoint.LeaseFrom(ctx, cp.ThreadID)
	pruneOpts, prune := checkpoint.PruningFrom(ctx, cp)
	queuePrune := func() {
		if prune {
			// The run's end and its pruning commit together.
			b.Queue(s.q.prunePut, []string{cp.ThreadID}, timeArg(pruneOpts.FinishedBefore), cp.ID)
		}
	}
	if !fenced {
		b.Queue(s.q.put, args...)
		queuePrune()
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("postgres: put %s/%s: %w", cp.ThreadID, cp.ID, err)
		}
		return nil
	}
	b.Queue(s.q.fencedPut, append(args, lease.Owner)...)
	queuePrune()
	br := s.pool.SendBatch(ctx, b)
	_, err = br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("postgres: put %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return s.lost(ctx, lease)
	}
	return nil
}

// PutWrites stores pending writes against an existing checkpoint in one
// transaction; a write whose (task, kind) is stored replaces the value in place.
func (s *Store) PutWrites(ctx context.Context, threadID string, id uuid.UUID, writes []checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrites(threadID, id, writes); err != nil {
		return err
	}
	lease, fenced := checkpoint.LeaseFrom(ctx, threadID)
	var lost bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if fenced {
			err := tx.QueryRow(ctx, s.lq.fence, threadID, lease.Owner).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				lost = true
			}
			if err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, s.q.checkWrite, threadID, id).Scan(&one); err != nil {
			return err
		}
		if len(writes) == 0 {
			return nil
		}
		// One round trip for all writes; statements run in order, so a key
		// repeated in the batch ends with its last value.
		b := &pgx.Batch{}
		for _, w := range writes {
			b.Queue(s.q.putWrite, threadID, id, w.Task, string(w.Kind), blobArg(w.Value))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	var pe *pgconn.PgError
	switch {
	case lost:
		return s.lost(ctx, lease)
	case errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pe) && pe.Code == "23503": // foreign_key_violation
		return fmt.Errorf("%w: checkpoint %s of thread %q", checkpoint.ErrNotFound, id, threadID)
	case err != nil:
		return fmt.Errorf("postgres: put writes %s/%s: %w", threadID, id, err)
	}
	return nil
}

// PutTuple stores a checkpoint and its pending writes in one transaction:
// after a crash both are there or neither is. Fenced (checkpoint.WithLease)
// like Put: a lost lease writes nothing.
func (s *Store) PutTuple(ctx context.Context, t checkpoint.Tuple) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := t.Checkpoint
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrites(cp.ThreadID, cp.ID, t.Writes); err != nil {
		return err
	}
	args, err := checkpointArgs(cp)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.threadLockShared, cp.ThreadID, s.lockSeed); err != nil {
			return err
		}
		return s.putIn(ctx, tx, cp, args, t.Writes)
	})
	switch {
	case errors.Is(err, errLeaseLost):
		lease, _ := checkpoint.LeaseFrom(ctx, cp.ThreadID)
		return s.lost(ctx, lease)
	case err != nil:
		return fmt.Errorf("postgres: put %s/%s with its writes: %w", cp.ThreadID, cp.ID, err)
	}
	return nil
}

// PutFirst stores cp as Put does when its thread has no checkpoint: the
// check and the write in one transaction under the thread's lock taken
// alone (as DeleteThread takes it), so replicas initializing one thread at
// the same moment store one first checkpoint between them.
func (s *Store) PutFirst(ctx context.Context, cp checkpoint.Checkpoint) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return false, err
	}
	args, err := checkpointArgs(cp)
	if err != nil {
		return false, err
	}
	var exists bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.threadLock, cp.ThreadID, s.lockSeed); err != nil {
			return err
		}
		// Read after the lock: a first checkpoint committed by whoever held
		// it before is seen (each statement reads the latest commits).
		if err := tx.QueryRow(ctx, s.q.hasThread, cp.ThreadID).Scan(&exists); err != nil || exists {
			return err
		}
		return s.putIn(ctx, tx, cp, args, nil)
	})
	switch {
	case errors.Is(err, errLeaseLost):
		lease, _ := checkpoint.LeaseFrom(ctx, cp.ThreadID)
		return false, s.lost(ctx, lease)
	case err != nil:
		return false, fmt.Errorf("postgres: put the first checkpoint %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	return !exists, nil
}

// checkpointArgs are the put statements' arguments for cp ($1–$10).
func checkpointArgs(cp checkpoint.Checkpoint) ([]any, error) {
	md, err := sqlrow.MapArg(cp.Metadata)
	if err != nil {
		return nil, fmt.Errorf("postgres: encode metadata of %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	return []any{cp.ThreadID, cp.ID, idArg(cp.ParentID), idArg(cp.RunID), cp.Step,
		blobArg(cp.State), sliceArg(cp.Next), timeArg(cp.NotBefore), md, timeArg(cp.Created)}, nil
}

// putIn writes cp (fenced by ctx's lease, if any), writes against it and,
// when ctx asks, the pruning of its thread, in tx. Under a lease that was
// lost it writes nothing and returns errLeaseLost, which rolls tx back.
func (s *Store) putIn(ctx context.Context, tx pgx.Tx, cp checkpoint.Checkpoint, args []any, writes []checkpoint.Write) error {
	if lease, fenced := checkpoint.LeaseFrom(ctx, cp.ThreadID); fenced {
		tag, err := tx.Exec(ctx, s.q.fencedPut, append(args, lease.Owner)...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errLeaseLost
		}
	} else if _, err := tx.Exec(ctx, s.q.put, args...); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, w := range writes {
		b.Queue(s.q.putWrite, cp.ThreadID, cp.ID, w.Task, string(w.Kind), blobArg(w.Value))
	}
	if pruneOpts, prune := checkpoint.PruningFrom(ctx, cp); prune {
		// The run's end and its pruning commit together.
		b.Queue(s.q.prunePut, []string{cp.ThreadID}, timeArg(pruneOpts.FinishedBefore), cp.ID)
	}
	if b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// errLeaseLost rolls back a PutTuple or PutFirst whose fenced put wrote
// nothing.
var errLeaseLost = errors.New("postgres: lease lost")

// Get returns a checkpoint and its pending writes; uuid.Nil means the latest.
func (s *Store) Get(ctx context.Context, threadID string, id uuid.UUID) (checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Tuple{}, err
	}
	var row pgx.Row
	if id == uuid.Nil {
		row = s.pool.QueryRow(ctx, s.q.getLatest, threadID)
	} else {
		row = s.pool.QueryRow(ctx, s.q.getByID, threadID, id)
	}
	var (
		tasks, kinds []string
		values       [][]byte
	)
	cp, err := scanCheckpoint(row, &tasks, &kinds, &values)
	if errors.Is(err, pgx.ErrNoRows) {
		if id == uuid.Nil {
			return checkpoint.Tuple{}, fmt.Errorf("%w: thread %q", checkpoint.ErrNotFound, threadID)
		}
		return checkpoint.Tuple{}, fmt.Errorf("%w: checkpoint %s of thread %q", checkpoint.ErrNotFound, id, threadID)
	}
	if err != nil {
		return checkpoint.Tuple{}, fmt.Errorf("postgres: get %s/%s: %w", threadID, id, err)
	}
	if len(kinds) != len(tasks) || len(values) != len(tasks) {
		return checkpoint.Tuple{}, fmt.Errorf("postgres: get %s/%s: writes changed between columns", threadID, id)
	}
	var ws []checkpoint.Write
	for i := range tasks {
		ws = append(ws, checkpoint.Write{Task: tasks[i], Kind: checkpoint.WriteKind(kinds[i]), Value: nilIfEmpty(values[i])})
	}
	return checkpoint.Tuple{Checkpoint: cp, Writes: ws}, nil
}

// List returns a thread's checkpoints newest first.
func (s *Store) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := strings.Builder{}
	q.WriteString(s.q.list)
	args := []any{threadID}
	if opts.Before != uuid.Nil {
		args = append(args, opts.Before)
		q.WriteString(` AND id < $` + strconv.Itoa(len(args)))
	}
	if len(opts.Filter) > 0 {
		f, err := sqlrow.MapArg(opts.Filter)
		if err != nil {
			return nil, fmt.Errorf("postgres: encode filter: %w", err)
		}
		args = append(args, f)
		q.WriteString(` AND metadata @> $` + strconv.Itoa(len(args)) + `::jsonb`)
	}
	q.WriteString(` ORDER BY id DESC`)
	if opts.Limit > 0 {
		args = append(args, opts.Limit)
		q.WriteString(` LIMIT $` + strconv.Itoa(len(args)))
	}
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list %s: %w", threadID, err)
	}
	defer rows.Close()
	wrap := func(err error) error { return fmt.Errorf("postgres: list %s: %w", threadID, err) }
	return sqlrow.Collect(rows, func() (checkpoint.Checkpoint, error) {
		cp, err := scanCheckpoint(rows)
		if err != nil {
			return cp, wrap(err)
		}
		return cp, nil
	}, wrap)
}

// Threads lists threads by latest checkpoint id, newest first.
func (s *Store) Threads(ctx context.Context, f checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := strings.Builder{}
	q.WriteString(s.q.threads)
	var args []any
	if len(f.Metadata) > 0 {
		m, err := sqlrow.MapArg(f.Metadata)
		if err != nil {
			return nil, fmt.Errorf("postgres: encode filter: %w", err)
		}
		args = append(args, m)
		q.WriteString(` AND metadata @> $1::jsonb`)
	}
	if f.ThreadID != "" {
		args = append(args, f.ThreadID)
		q.WriteString(` AND thread_id = $` + strconv.Itoa(len(args)))
	}
	if f.Before != uuid.Nil {
		args = append(args, f.Before)
		q.WriteString(` AND latest_id < $` + strconv.Itoa(len(args)))
	}
	q.WriteString(` ORDER BY latest_id DESC`)
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q.WriteString(` LIMIT $` + strconv.Itoa(len(args)))
	}
	rows, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list threads: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (checkpoint.ThreadInfo, error) {
		var (
			ti               checkpoint.ThreadInfo
			md               []byte
			created, updated *time.Time
			err              error
		)
		if err := rows.Scan(&ti.ThreadID, &ti.Latest, &md, &created, &updated); err != nil {
			return ti, fmt.Errorf("postgres: scan thread: %w", err)
		}
		if ti.Metadata, err = scanMetadata(md); err != nil {
			return ti, err
		}
		ti.Created, ti.Updated = scanTime(created), scanTime(updated)
		return ti, nil
	}, func(err error) error { return fmt.Errorf("postgres: list threads: %w", err) })
}

// DeleteThread removes a thread's summary, checkpoints and writes in one transaction.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.q.threadLock, threadID, s.lockSeed); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.deleteThreads, threadID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.q.deleteCheckpoints, threadID)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: delete thread %s: %w", threadID, err)
	}
	return nil
}

func scanCheckpoint(row pgx.Row, extra ...any) (checkpoint.Checkpoint, error) {
	var (
		cp                 checkpoint.Checkpoint
		parent, run        *uuid.UUID
		state, md          []byte
		next               []string
		notBefore, created *time.Time
	)
	dest := append([]any{&cp.ThreadID, &cp.ID, &parent, &run, &cp.Step, &state, &next, &notBefore, &md, &created}, extra...)
	if err := row.Scan(dest...); err != nil {
		return cp, err
	}
	if parent != nil {
		cp.ParentID = *parent
	}
	if run != nil {
		cp.RunID = *run
	}
	var err error
	if cp.Metadata, err = scanMetadata(md); err != nil {
		return cp, err
	}
	cp.State, cp.Next = nilIfEmpty(state), nilIfEmpty(next)
	cp.NotBefore, cp.Created = scanTime(notBefore), scanTime(created)
	return cp, nil
}

// Column encodings: empty collections and zero values are NULL.

func idArg(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return id
}

func blobArg(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func sliceArg(v []string) any {
	if len(v) == 0 {
		return nil
	}
	return v
}

// timeArg is the zero time as NULL; pgx sends microseconds, truncating.
func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func scanTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// scanMetadata decodes the metadata column (sqlrow), naming the store in its
// error.
func scanMetadata(b []byte) (map[string]string, error) {
	out, err := sqlrow.Metadata(b)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return out, nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
