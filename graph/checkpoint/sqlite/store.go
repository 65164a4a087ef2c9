package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

// Store is a checkpoint.Store in one SQLite file. It is safe for concurrent use.
type Store struct {
	// LocalLeases makes the store a checkpoint.Leaser within this process:
	// agents sharing this Store exclude each other per thread, and Put and
	// PutWrites refuse writes under a lost lease. Leases are not shared with
	// other processes opening the same file (see docs/persistence.md).
	checkpoint.LocalLeases

	w *sql.DB // the one writer connection
	r *sql.DB // read pool

	maxBatch int
	group    group       // Puts and PutWrites waiting for a commit
	stmts    *writeStmts // their statements, prepared once
	reads    *readStmts  // the reads of every step, prepared once
	ck       *checkpointer

	runsMu   sync.Mutex               // creating the runs table
	runStmts atomic.Pointer[runStmts] // set once the runs table exists
	// recordsReady is set once the records table exists (records.go):
	// state of this store, so nothing outside it refers to the store.
	recordsReady atomic.Bool

	commits, writes atomic.Int64 // see Stats
}

// Stats counts what the store has committed since it was opened.
type Stats struct {
	// Commits counts the write transactions committed, each one fsync of
	// the write-ahead log: group commits (of checkpoints and run records),
	// DeleteThread, AppendRecords and prunes (migrations not included).
	Commits int64
	// Writes counts the Puts, PutWrites, CreateRuns and UpdateRuns those
	// commits held; Writes ÷ Commits is the mean size of a group.
	Writes int64
}

// Stats returns the store's commit counters.
func (s *Store) Stats() Stats { return Stats{Commits: s.commits.Load(), Writes: s.writes.Load()} }

var (
	_ checkpoint.Store       = (*Store)(nil)
	_ checkpoint.Leaser      = (*Store)(nil)
	_ checkpoint.TuplePutter = (*Store)(nil)
	_ checkpoint.FirstPutter = (*Store)(nil)
)

// New opens (creating if needed) the database at cfg.Path and migrates its schema.
func New(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Checkpoints hold conversations: create the file readable by its owner
	// only. SQLite gives the -wal and -shm files the same mode.
	f, err := os.OpenFile(cfg.Path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	f.Close()
	w, err := sql.Open("sqlite", cfg.writerDSN())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	// One writer: SQLite admits one writer at a time anyway, and queueing in
	// database/sql is cheaper and fairer than spinning on the file lock.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Migrations run before the reader opens, so the WAL journal mode (a
	// property of the file) is in place for it.
	if err := migrate(context.Background(), w); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", cfg.readerDSN())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", cfg.Path, err)
	}
	r.SetMaxOpenConns(cfg.ReadConns)
	r.SetMaxIdleConns(cfg.ReadConns)
	if err := r.Ping(); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", cfg.Path, err)
	}
	stmts, err := prepareWrites(w)
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	reads, err := prepareReads(r)
	if err != nil {
		stmts.close() //nolint:errcheck // the prepare error says more
		w.Close()
		r.Close()
		return nil, err
	}
	ck, err := sql.Open("sqlite", cfg.checkpointerDSN())
	if err != nil {
		reads.close() //nolint:errcheck // the open error says more
		stmts.close() //nolint:errcheck
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %s for checkpoints: %w", cfg.Path, err)
	}
	ck.SetMaxOpenConns(1)
	s := &Store{w: w, r: r, maxBatch: cfg.MaxBatch, stmts: stmts, reads: reads}
	s.startCheckpointer(ck)
	return s, nil
}

// Close refuses new writes, waits for those in progress or queued to be
// committed, then closes both connection pools.
func (s *Store) Close() error {
	s.group.close()
	return errors.Join(s.ck.close(), s.stmts.close(), s.reads.close(), s.runStmts.Load().close(), s.r.Close(), s.w.Close())
}

const cpColumns = `thread_id, id, parent_id, run_id, step, state, next, not_before, metadata, created, state_deflate`

// Put stores a checkpoint (replacing one with the same thread and id) and
// updates the thread summary, durably: it returns once the transaction
// holding it has committed (see group commit in the package doc).
func (s *Store) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return err
	}
	apply, err := s.putCheckpoint(ctx, cp)
	if err != nil {
		return err
	}
	return s.write(ctx, cp.ThreadID, apply)
}

// errThreadExists is PutFirst's refusal: the thread has a checkpoint.
var errThreadExists = errors.New("sqlite: the thread has a checkpoint")

// PutFirst stores cp as Put does when its thread has no checkpoint, the
// check inside the write transaction.
func (s *Store) PutFirst(ctx context.Context, cp checkpoint.Checkpoint) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkpoint.ValidateCheckpoint(cp); err != nil {
		return false, err
	}
	put, err := s.putCheckpoint(ctx, cp)
	if err != nil {
		return false, err
	}
	err = s.write(ctx, cp.ThreadID, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := tx.StmtContext(ctx, s.stmts.hasThread).QueryRowContext(ctx, cp.ThreadID).Scan(&one)
		switch {
		case err == nil:
			return refusal{errThreadExists}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("sqlite: read thread %s: %w", cp.ThreadID, err)
		}
		return put(ctx, tx)
	})
	if errors.Is(err, errThreadExists) {
		return false, nil
	}
	return err == nil, err
}

// PutTuple stores a checkpoint and its pending writes in one transaction:
// after a crash both are there or neither is.
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
	put, err := s.putCheckpoint(ctx, cp)
	if err != nil {
		return err
	}
	return s.write(ctx, cp.ThreadID, func(ctx context.Context, tx *sql.Tx) error {
		if err := put(ctx, tx); err != nil {
			return err
		}
		return s.putWrites(ctx, tx, cp.ThreadID, cp.ID, t.Writes)
	})
}

// putCheckpoint encodes cp and returns what writes it in a transaction.
func (s *Store) putCheckpoint(ctx context.Context, cp checkpoint.Checkpoint) (func(context.Context, *sql.Tx) error, error) {
	next, err := sqlrow.JSONArg(cp.Next)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode next of %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	md, err := sqlrow.MapArg(cp.Metadata)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode metadata of %s/%s: %w", cp.ThreadID, cp.ID, err)
	}
	pruneOpts, prune := checkpoint.PruningFrom(ctx, cp)
	state, deflated := cp.State, false
	if !checkpoint.Transient(ctx, cp) {
		// Compressing costs tens of microseconds: spent only on what is
		// kept, not on a step's checkpoint the run's end will prune.
		state, deflated = deflateState(cp.State)
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.StmtContext(ctx, s.stmts.putCheckpoint).ExecContext(ctx,
			cp.ThreadID, cp.ID[:], idArg(cp.ParentID), idArg(cp.RunID), cp.Step, blobArg(state),
			next, timeArg(cp.NotBefore), md, timeArg(cp.Created), deflated)
		if err != nil {
			return fmt.Errorf("sqlite: put %s/%s: %w", cp.ThreadID, cp.ID, err)
		}
		_, err = tx.StmtContext(ctx, s.stmts.putThread).ExecContext(ctx, cp.ThreadID, cp.ID[:], md, timeArg(cp.Created))
		if err != nil {
			return fmt.Errorf("sqlite: update thread %s: %w", cp.ThreadID, err)
		}
		if prune {
			// In the same transaction: the run's end and its pruning
			// commit together, with one fsync.
			return s.pruneThread(ctx, tx, cp.ThreadID, pruneOpts, nil)
		}
		return nil
	}, nil
}

// PutWrites stores pending writes against an existing checkpoint; a write
// whose (task, kind) is already stored replaces the value in place. Like Put,
// it returns once the transaction holding it has committed.
func (s *Store) PutWrites(ctx context.Context, threadID string, id uuid.UUID, writes []checkpoint.Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkpoint.ValidateWrites(threadID, id, writes); err != nil {
		return err
	}
	return s.write(ctx, threadID, func(ctx context.Context, tx *sql.Tx) error {
		// Checked inside the write transaction: no other writer can delete the
		// checkpoint between the check and the inserts.
		var one int
		err := tx.StmtContext(ctx, s.stmts.hasCheckpoint).QueryRowContext(ctx, threadID, id[:]).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return refusal{fmt.Errorf("%w: checkpoint %s of thread %q", checkpoint.ErrNotFound, id, threadID)}
		}
		if err != nil {
			return fmt.Errorf("sqlite: put writes %s/%s: %w", threadID, id, err)
		}
		return s.putWrites(ctx, tx, threadID, id, writes)
	})
}

// putWrites inserts pending writes of a checkpoint in tx.
func (s *Store) putWrites(ctx context.Context, tx *sql.Tx, threadID string, id uuid.UUID, writes []checkpoint.Write) error {
	for _, w := range writes {
		_, err := tx.StmtContext(ctx, s.stmts.putWrite).ExecContext(ctx, threadID, id[:], w.Task, string(w.Kind), blobArg(w.Value))
		if err != nil {
			return fmt.Errorf("sqlite: put write %s/%s of %s/%s: %w", w.Task, w.Kind, threadID, id, err)
		}
	}
	return nil
}

// Get returns a checkpoint and its pending writes from one read snapshot.
func (s *Store) Get(ctx context.Context, threadID string, id uuid.UUID) (checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Tuple{}, err
	}
	// One statement reads one snapshot: a checkpoint without pending writes,
	// as most are, needs no transaction (whose begin and end cost as much
	// as the read).
	cp, hasWrites, err := s.getCheckpoint(ctx, nil, threadID, id)
	if err != nil {
		return checkpoint.Tuple{}, err
	}
	if !hasWrites {
		return checkpoint.Tuple{Checkpoint: cp}, nil
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return checkpoint.Tuple{}, fmt.Errorf("sqlite: get %s: %w", threadID, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	// Read again with its writes, in the snapshot they are read from (the
	// latest may be a newer one by now).
	if cp, _, err = s.getCheckpoint(ctx, tx, threadID, id); err != nil {
		return checkpoint.Tuple{}, err
	}
	rows, err := tx.StmtContext(ctx, s.reads.writes).QueryContext(ctx, threadID, cp.ID[:])
	if err != nil {
		return checkpoint.Tuple{}, fmt.Errorf("sqlite: get writes of %s/%s: %w", threadID, cp.ID, err)
	}
	defer rows.Close()
	var ws []checkpoint.Write
	for rows.Next() {
		var (
			w     checkpoint.Write
			kind  string
			value []byte
		)
		if err := rows.Scan(&w.Task, &kind, &value); err != nil {
			return checkpoint.Tuple{}, fmt.Errorf("sqlite: scan write of %s/%s: %w", threadID, cp.ID, err)
		}
		w.Kind, w.Value = checkpoint.WriteKind(kind), value
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return checkpoint.Tuple{}, fmt.Errorf("sqlite: read writes of %s/%s: %w", threadID, cp.ID, err)
	}
	return checkpoint.Tuple{Checkpoint: cp, Writes: ws}, nil
}

// getCheckpoint reads a checkpoint (the latest when id is Nil), in tx if
// not nil, and whether it has pending writes.
func (s *Store) getCheckpoint(ctx context.Context, tx *sql.Tx, threadID string, id uuid.UUID) (cp checkpoint.Checkpoint, hasWrites bool, err error) {
	stmt, args := s.reads.latest, []any{threadID}
	if id != uuid.Nil {
		stmt, args = s.reads.checkpoint, []any{threadID, id[:]}
	}
	if tx != nil {
		stmt = tx.StmtContext(ctx, stmt)
	}
	cp, err = scanCheckpoint(stmt.QueryRowContext(ctx, args...), &hasWrites)
	switch {
	case errors.Is(err, sql.ErrNoRows) && id == uuid.Nil:
		return cp, false, fmt.Errorf("%w: thread %q", checkpoint.ErrNotFound, threadID)
	case errors.Is(err, sql.ErrNoRows):
		return cp, false, fmt.Errorf("%w: checkpoint %s of thread %q", checkpoint.ErrNotFound, id, threadID)
	case err != nil:
		return cp, false, fmt.Errorf("sqlite: get %s/%s: %w", threadID, id, err)
	}
	return cp, hasWrites, nil
}

// matchSQL keeps rows whose JSON metadata column col holds every key/value of
// the JSON object bound to the placeholder. json_each avoids building JSON
// paths from keys, which would need quoting.
func matchSQL(col string) string {
	return ` AND NOT EXISTS (SELECT 1 FROM json_each(?) f WHERE NOT EXISTS (
		SELECT 1 FROM json_each(` + col + `) m WHERE m.key = f.key AND m.value = f.value))`
}

// List returns a thread's checkpoints newest first.
func (s *Store) List(ctx context.Context, threadID string, opts checkpoint.ListOptions) ([]checkpoint.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var (
		q    strings.Builder
		args = []any{threadID}
	)
	q.WriteString(`SELECT ` + cpColumns + ` FROM checkpoints WHERE thread_id = ?`)
	if opts.Before != uuid.Nil {
		q.WriteString(` AND id < ?`)
		args = append(args, opts.Before[:])
	}
	if len(opts.Filter) > 0 {
		f, err := sqlrow.MapArg(opts.Filter)
		if err != nil {
			return nil, fmt.Errorf("sqlite: encode filter: %w", err)
		}
		q.WriteString(matchSQL("metadata"))
		args = append(args, f)
	}
	q.WriteString(` ORDER BY id DESC`)
	if opts.Limit > 0 {
		q.WriteString(` LIMIT ?`)
		args = append(args, opts.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list %s: %w", threadID, err)
	}
	defer rows.Close()
	wrap := func(err error) error { return fmt.Errorf("sqlite: list %s: %w", threadID, err) }
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
	m, err := sqlrow.MapArg(f.Metadata)
	if err != nil {
		return nil, fmt.Errorf("sqlite: encode filter: %w", err)
	}
	var rows *sql.Rows
	if f.ThreadID != "" && f.Before == uuid.Nil {
		// One thread by its key, as a server asks for every request: the
		// statement is prepared.
		if m == nil {
			m = "{}"
		}
		rows, err = s.reads.thread.QueryContext(ctx, f.ThreadID, m)
	} else {
		var (
			q    strings.Builder
			args []any
		)
		q.WriteString(`SELECT thread_id, latest_id, metadata, created, updated FROM threads WHERE 1 = 1`)
		if f.ThreadID != "" {
			q.WriteString(` AND thread_id = ?`)
			args = append(args, f.ThreadID)
		}
		if m != nil {
			q.WriteString(matchSQL("metadata"))
			args = append(args, m)
		}
		if f.Before != uuid.Nil {
			q.WriteString(` AND latest_id < ?`)
			args = append(args, f.Before[:])
		}
		q.WriteString(` ORDER BY latest_id DESC`)
		if f.Limit > 0 {
			q.WriteString(` LIMIT ?`)
			args = append(args, f.Limit)
		}
		rows, err = s.r.QueryContext(ctx, q.String(), args...)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: list threads: %w", err)
	}
	defer rows.Close()
	return sqlrow.Collect(rows, func() (checkpoint.ThreadInfo, error) {
		var (
			ti               checkpoint.ThreadInfo
			latest           []byte
			md               []byte
			created, updated *int64
			err              error
		)
		if err := rows.Scan(&ti.ThreadID, &latest, &md, &created, &updated); err != nil {
			return ti, fmt.Errorf("sqlite: scan thread: %w", err)
		}
		if ti.Latest, err = scanID(latest); err != nil {
			return ti, err
		}
		if ti.Metadata, err = scanMetadata(md); err != nil {
			return ti, err
		}
		ti.Created, ti.Updated = scanTime(created), scanTime(updated)
		return ti, nil
	}, func(err error) error { return fmt.Errorf("sqlite: list threads: %w", err) })
}

// DeleteThread removes a thread's checkpoints, writes and summary.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: delete thread %s: %w", threadID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	for _, stmt := range []string{
		`DELETE FROM writes WHERE thread_id = ?`,
		`DELETE FROM checkpoints WHERE thread_id = ?`,
		`DELETE FROM threads WHERE thread_id = ?`,
	} {
		if _, err := tx.ExecContext(ctx, stmt, threadID); err != nil {
			return fmt.Errorf("sqlite: delete thread %s: %w", threadID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: delete thread %s: %w", threadID, err)
	}
	s.commits.Add(1)
	return nil
}

type scanner interface{ Scan(dest ...any) error }

// scanCheckpoint scans the cpColumns, then into extra (columns selected
// after them).
func scanCheckpoint(sc scanner, extra ...any) (checkpoint.Checkpoint, error) {
	var (
		cp                checkpoint.Checkpoint
		id, parent, run   []byte
		state             []byte
		next, md          []byte
		notBefore, create *int64
		deflated          bool
		err               error
	)
	if err := sc.Scan(append([]any{&cp.ThreadID, &id, &parent, &run, &cp.Step, &state, &next, &notBefore, &md, &create, &deflated}, extra...)...); err != nil {
		return cp, err
	}
	if deflated {
		if state, err = inflateState(state); err != nil {
			return cp, err
		}
	}
	if cp.ID, err = scanID(id); err != nil {
		return cp, err
	}
	if cp.ParentID, err = scanID(parent); err != nil {
		return cp, err
	}
	if cp.RunID, err = scanID(run); err != nil {
		return cp, err
	}
	if cp.Next, err = scanNext(next); err != nil {
		return cp, err
	}
	if cp.Metadata, err = scanMetadata(md); err != nil {
		return cp, err
	}
	cp.State = state
	cp.NotBefore, cp.Created = scanTime(notBefore), scanTime(create)
	return cp, nil
}
