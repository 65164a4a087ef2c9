package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/capgraph/capgraph/runstore"
)

// Group commit. SQLite has one writer, and a commit's cost is mostly its
// fsync, so writes from different threads arriving together are written in
// one transaction and made durable by one fsync. A write that finds the
// writer idle commits at once, on its own goroutine, exactly as without
// grouping; writes arriving while a commit is in flight queue up, and the
// next commit takes all of them (up to Config.MaxBatch). Every caller returns
// only once the commit holding its write has returned: the durability of
// each write is that of a lone commit (WAL, synchronous=FULL).
//
// A deferrable write (runstore.Deferrable: a run's record, written after
// its answer was sent or just before its thread's) that finds the writer idle does not commit alone: it
// waits in the queue for the next commit, which takes it along, or for
// deferLimit, whichever comes first. Under load another commit comes within
// a millisecond or two, so such writes cost no commit (and no fsync) of
// their own.

// group is the queue of writes waiting for a commit.
type group struct {
	mu     sync.Mutex
	busy   bool // a commit is in progress or about to start
	closed bool // Close was called: no new writes
	queue  []*pending
	wg     sync.WaitGroup // writes in progress, the goroutine committing queued ones, the deferred commit's timer
	// deferred is set while only deferrable writes wait, the writer idle:
	// its timer commits them at deferLimit unless a commit takes them first.
	deferred *time.Timer
}

// deferLimit is the longest a deferrable write waits for another commit.
const deferLimit = 5 * time.Millisecond

// pending is one Put or PutWrites waiting for its commit.
type pending struct {
	ctx    context.Context // the caller's: checked when the write is taken, and for the fence
	thread string
	apply  func(ctx context.Context, tx *sql.Tx) error
	err    error
	done   chan struct{} // closed once err is final
	taken  bool          // taken into a commit; guarded by group.mu
}

// errClosed is the error of a write after Close.
var errClosed = errors.New("sqlite: the store is closed")

// close refuses new writes and waits for those in progress or queued.
func (g *group) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// refusal marks an error of apply that wrote nothing (a missing checkpoint):
// the rest of the transaction stands.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// write runs apply in a write transaction, alone or grouped with others, and
// returns when that transaction has committed (or failed).
func (s *Store) write(ctx context.Context, thread string, apply func(context.Context, *sql.Tx) error) error {
	p := &pending{ctx: ctx, thread: thread, apply: apply}
	g := &s.group
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return errClosed
	}
	if !g.busy && !runstore.IsDeferrable(ctx) {
		g.busy = true
		g.wg.Add(1)
		if len(g.queue) > 0 {
			// Deferrable writes wait: this commit takes them along, as a
			// group (no caller's ctx is the transaction's); any beyond
			// MaxBatch follow it.
			g.stopDeferred()
			p.taken = true
			batch := append(s.takeLocked(1), p)
			g.mu.Unlock()
			func() {
				defer g.wg.Done()
				defer s.handOff()
				s.commitGroup(batch)
				for _, q := range batch[:len(batch)-1] {
					close(q.done)
				}
			}()
			return unwrapRefusal(p.err)
		}
		// The writer is idle: commit this write now, on this goroutine, with
		// the caller's ctx, as a lone transaction would.
		g.mu.Unlock()
		func() {
			// Deferred, so that a panic (which reaches the caller, as it
			// would without grouping) does not leave the writer busy.
			defer g.wg.Done()
			defer s.handOff()
			s.commit(ctx, []*pending{p})
		}()
		return unwrapRefusal(p.err)
	}
	p.done = make(chan struct{})
	g.queue = append(g.queue, p)
	if !g.busy && g.deferred == nil {
		// A deferrable write, the writer idle: the next commit takes it,
		// or this timer's at the latest.
		g.wg.Add(1)
		g.deferred = time.AfterFunc(deferLimit, s.commitDeferred)
	}
	g.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		g.mu.Lock()
		if !p.taken {
			// Still queued: leave the queue, nothing was written.
			if i := slices.Index(g.queue, p); i >= 0 {
				g.queue = slices.Delete(g.queue, i, i+1)
			}
			g.mu.Unlock()
			return ctx.Err()
		}
		g.mu.Unlock()
		<-p.done // in a commit already: its outcome is the answer
	}
	return unwrapRefusal(p.err)
}

// stopDeferred stops the deferred commit's timer, if set, as a commit is
// about to take its writes (g.mu held).
func (g *group) stopDeferred() {
	if g.deferred != nil && g.deferred.Stop() {
		g.wg.Done() // its function will not run
	}
	g.deferred = nil
}

// commitDeferred commits the deferrable writes no commit took along within
// deferLimit.
func (s *Store) commitDeferred() {
	g := &s.group
	defer g.wg.Done()
	g.mu.Lock()
	g.deferred = nil
	if g.busy || len(g.queue) == 0 {
		// A commit started meanwhile: it takes them.
		g.mu.Unlock()
		return
	}
	g.busy = true
	g.mu.Unlock()
	s.drain()
}

// handOff ends a commit: writes queued meanwhile go to a goroutine that
// commits them in groups until the queue is empty.
func (s *Store) handOff() {
	g := &s.group
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.busy = false
		return
	}
	g.stopDeferred()
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		s.drain()
	}()
}

// takeLocked takes the queue's first writes into a group, leaving room
// for reserved more within MaxBatch (g.mu held).
func (s *Store) takeLocked(reserved int) []*pending {
	g := &s.group
	n := len(g.queue)
	if s.maxBatch > 0 {
		n = max(0, min(n, s.maxBatch-reserved))
	}
	batch := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	for _, p := range batch {
		p.taken = true
	}
	return batch
}

// drain commits the queue in groups until it is empty, then marks the
// writer idle (g.busy set by the caller).
func (s *Store) drain() {
	g := &s.group
	for {
		g.mu.Lock()
		batch := s.takeLocked(0)
		if len(batch) == 0 {
			g.busy = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		// The group's transaction is nobody's in particular: a caller giving
		// up must not roll back the others' writes. Each caller's ctx is
		// checked when its write is applied.
		s.commitGroup(batch)
		for _, p := range batch {
			close(p.done)
		}
	}
}

// commitGroup commits a group on the draining goroutine. A panic there (in
// the driver) would end the process, where a lone write's panic reaches its
// caller, whom the graph engine recovers: it becomes each write's error.
func (s *Store) commitGroup(batch []*pending) {
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("sqlite: panic while committing a group of writes: %v", v)
			for _, p := range batch {
				if p.err == nil {
					p.err = err
				}
			}
		}
	}()
	s.commit(context.Background(), batch)
}

// commit writes batch in one transaction and sets each write's outcome. A
// write whose ctx is done, or whose lease is lost, is skipped and gets that
// error; a refusal (a missing checkpoint) fails only its own write. Any other
// failure rolls the transaction back, and a group is then retried one write
// per transaction, so each caller gets its own write's outcome.
func (s *Store) commit(ctx context.Context, batch []*pending) {
	fail := func(err error) {
		for _, p := range batch {
			if p.err == nil {
				p.err = err
			}
		}
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("sqlite: begin write of %s: %w", batch[0].thread, err))
		return
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			continue
		}
		// Fenced inside the write transaction, so writes of one process are
		// ordered after the check.
		if err := s.Fence(p.ctx, p.thread); err != nil {
			p.err = err
			continue
		}
		err := p.apply(ctx, tx)
		var r refusal
		switch {
		case err == nil:
		case errors.As(err, &r):
			p.err = err
		case len(batch) == 1:
			p.err = err
			return
		default:
			tx.Rollback() //nolint:errcheck // retried one by one below
			for _, q := range batch {
				q.err = nil
				s.commit(ctx, []*pending{q})
			}
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("sqlite: commit write of %s: %w", batch[0].thread, err))
		return
	}
	s.commits.Add(1)
	for _, p := range batch {
		if p.err == nil {
			s.writes.Add(1)
		}
	}
	if afterCommit != nil {
		afterCommit(len(batch))
	}
}

// afterCommit, set by tests only, sees the size of every committed group.
var afterCommit func(writes int)

func unwrapRefusal(err error) error {
	var r refusal
	if errors.As(err, &r) {
		return r.error
	}
	return err
}

// The statements of Put and PutWrites. A group commit runs them once per
// write, and parsing them each time cost more than running them.
const (
	sqlPutCheckpoint = `INSERT INTO checkpoints (` + cpColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, id) DO UPDATE SET
			parent_id = excluded.parent_id, run_id = excluded.run_id, step = excluded.step,
			state = excluded.state, next = excluded.next, not_before = excluded.not_before,
			metadata = excluded.metadata, created = excluded.created, state_deflate = excluded.state_deflate`
	// The summary follows the greatest id, whatever order Puts arrive in. SET
	// expressions see the row's old values.
	sqlPutThread = `INSERT INTO threads (thread_id, first_id, latest_id, metadata, created, updated)
		VALUES (?1, ?2, ?2, ?3, ?4, ?4)
		ON CONFLICT (thread_id) DO UPDATE SET
			first_id  = CASE WHEN excluded.first_id <= first_id THEN excluded.first_id ELSE first_id END,
			created   = CASE WHEN excluded.first_id <= first_id THEN excluded.created ELSE created END,
			latest_id = CASE WHEN excluded.latest_id >= latest_id THEN excluded.latest_id ELSE latest_id END,
			metadata  = CASE WHEN excluded.latest_id >= latest_id THEN excluded.metadata ELSE metadata END,
			updated   = CASE WHEN excluded.latest_id >= latest_id THEN excluded.updated ELSE updated END`
	sqlHasCheckpoint = `SELECT 1 FROM checkpoints WHERE thread_id = ? AND id = ?`
	sqlHasThread     = `SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1`
	sqlPutWrite      = `INSERT INTO writes (thread_id, checkpoint_id, task, kind, value) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (thread_id, checkpoint_id, task, kind) DO UPDATE SET value = excluded.value`
)

// writeStmts are those statements prepared on the writer connection; a
// transaction uses them through Tx.StmtContext, which reuses the
// connection's prepared statement.
type writeStmts struct {
	putCheckpoint, putThread, hasCheckpoint, hasThread, putWrite *sql.Stmt
	prunePick, pruneWrites, pruneCheckpoint, pruneRun            *sql.Stmt
}

func prepareWrites(w *sql.DB) (*writeStmts, error) {
	ws := &writeStmts{}
	err := prepareAll(context.Background(), "statements",
		stmtSpec{&ws.putCheckpoint, w, sqlPutCheckpoint}, stmtSpec{&ws.putThread, w, sqlPutThread},
		stmtSpec{&ws.hasCheckpoint, w, sqlHasCheckpoint}, stmtSpec{&ws.hasThread, w, sqlHasThread}, stmtSpec{&ws.putWrite, w, sqlPutWrite},
		stmtSpec{&ws.prunePick, w, sqlPrunePick}, stmtSpec{&ws.pruneWrites, w, sqlPruneWrites}, stmtSpec{&ws.pruneCheckpoint, w, sqlPruneCheckpoint},
		stmtSpec{&ws.pruneRun, w, sqlPruneRun})
	if err != nil {
		return nil, err
	}
	return ws, nil
}

func (ws *writeStmts) close() error {
	return closeAll(ws.putCheckpoint, ws.putThread, ws.hasCheckpoint, ws.hasThread, ws.putWrite, ws.prunePick, ws.pruneWrites, ws.pruneCheckpoint, ws.pruneRun)
}

// readStmts are the reads every step or request makes, prepared on the
// read pool (database/sql prepares them on each connection as it is used).
type readStmts struct {
	latest, checkpoint, writes, thread *sql.Stmt
}

// hasWritesSQL is whether the checkpoint c has pending writes (Get reads
// them in a transaction of their own only then).
const hasWritesSQL = `EXISTS (SELECT 1 FROM writes w WHERE w.thread_id = c.thread_id AND w.checkpoint_id = c.id)`

func prepareReads(r *sql.DB) (*readStmts, error) {
	rs := &readStmts{}
	err := prepareAll(context.Background(), "statements",
		stmtSpec{&rs.latest, r, `SELECT ` + cpColumns + `, ` + hasWritesSQL + ` FROM checkpoints c WHERE thread_id = ? ORDER BY id DESC LIMIT 1`},
		stmtSpec{&rs.checkpoint, r, `SELECT ` + cpColumns + `, ` + hasWritesSQL + ` FROM checkpoints c WHERE thread_id = ? AND id = ?`},
		stmtSpec{&rs.writes, r, `SELECT task, kind, value FROM writes WHERE thread_id = ? AND checkpoint_id = ? ORDER BY seq`},
		stmtSpec{&rs.thread, r, `SELECT thread_id, latest_id, metadata, created, updated FROM threads WHERE thread_id = ?` + matchSQL("metadata")})
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func (rs *readStmts) close() error {
	return closeAll(rs.latest, rs.checkpoint, rs.writes, rs.thread)
}
