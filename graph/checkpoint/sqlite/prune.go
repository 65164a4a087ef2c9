package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

var _ checkpoint.Pruner = (*Store)(nil)

// The statements of pruning one thread. sqlPrunePick selects the
// checkpoints to delete: those of the thread's finished runs (whose last
// checkpoint has no next nodes, or is not the thread's latest) but each
// run's last, of runs whose last checkpoint is older than ?2 when ?2 is not
// NULL. It reads the thread's rows through the primary key.
const (
	sqlPrunePick = `SELECT c.id FROM checkpoints c JOIN (
			SELECT l.run_id, l.id FROM (
				SELECT run_id, MAX(id) AS id FROM checkpoints WHERE thread_id = ?1 GROUP BY run_id) l
			JOIN checkpoints e ON e.thread_id = ?1 AND e.id = l.id
			JOIN threads t ON t.thread_id = ?1
			WHERE (e.next IS NULL OR l.id <> t.latest_id) AND (?2 IS NULL OR e.created < ?2)
		) d ON c.run_id IS d.run_id AND c.id <> d.id
		WHERE c.thread_id = ?1`
	sqlPruneWrites     = `DELETE FROM writes WHERE thread_id = ? AND checkpoint_id = ?`
	sqlPruneCheckpoint = `DELETE FROM checkpoints WHERE thread_id = ? AND id = ?`
	// sqlPruneRun is the pruning that rides on a run's last checkpoint, in
	// one statement: the writes go with their checkpoints (ON DELETE
	// CASCADE), uncounted — nobody reads that count.
	sqlPruneRun = `DELETE FROM checkpoints WHERE thread_id = ?1 AND id IN (` + sqlPrunePick + `)`
)

// pruneBatch is how many threads one transaction of a whole-store Prune
// prunes, so that a large store is pruned in many short write transactions
// between the runs' commits rather than in one long one.
const pruneBatch = 64

// Prune deletes the intermediate checkpoints of finished runs (see
// checkpoint.Pruner), one write transaction per 64 threads. Freed pages are
// reused by later writes; Vacuum gives them back to the file system.
func (s *Store) Prune(ctx context.Context, opts checkpoint.PruneOptions) (checkpoint.PruneResult, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.PruneResult{}, err
	}
	threads := []string{opts.Thread}
	if opts.Thread == "" || len(opts.Metadata) > 0 {
		q, args := `SELECT thread_id FROM threads WHERE 1 = 1`, []any{}
		if opts.Thread != "" {
			q += ` AND thread_id = ?`
			args = append(args, opts.Thread)
		}
		if len(opts.Metadata) > 0 {
			m, err := sqlrow.MapArg(opts.Metadata)
			if err != nil {
				return checkpoint.PruneResult{}, fmt.Errorf("sqlite: prune: encode filter: %w", err)
			}
			q += matchSQL("metadata")
			args = append(args, m)
		}
		rows, err := s.r.QueryContext(ctx, q+` ORDER BY thread_id`, args...)
		if err != nil {
			return checkpoint.PruneResult{}, fmt.Errorf("sqlite: prune: list threads: %w", err)
		}
		wrap := func(err error) error { return fmt.Errorf("sqlite: prune: list threads: %w", err) }
		if threads, err = collectStrings(rows, wrap); err != nil {
			return checkpoint.PruneResult{}, err
		}
	}
	var total checkpoint.PruneResult
	for len(threads) > 0 {
		batch := threads[:min(pruneBatch, len(threads))]
		threads = threads[len(batch):]
		var res checkpoint.PruneResult
		err := s.write(ctx, "", func(ctx context.Context, tx *sql.Tx) error {
			res = checkpoint.PruneResult{} // a group that failed is retried alone
			for _, th := range batch {
				if err := s.pruneThread(ctx, tx, th, opts, &res); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total.Checkpoints += res.Checkpoints
		total.Writes += res.Writes
	}
	return total, nil
}

// pruneThread prunes one thread in tx, adding what it deleted to res;
// with res nil (the pruning a run's end does, checkpoint.WithPruning) in
// one statement, counting nothing.
func (s *Store) pruneThread(ctx context.Context, tx *sql.Tx, thread string, opts checkpoint.PruneOptions, res *checkpoint.PruneResult) error {
	if res == nil {
		if _, err := tx.StmtContext(ctx, s.stmts.pruneRun).ExecContext(ctx, thread, timeArg(opts.FinishedBefore)); err != nil {
			return fmt.Errorf("sqlite: prune %s: %w", thread, err)
		}
		return nil
	}
	rows, err := tx.StmtContext(ctx, s.stmts.prunePick).QueryContext(ctx, thread, timeArg(opts.FinishedBefore))
	if err != nil {
		return fmt.Errorf("sqlite: prune %s: %w", thread, err)
	}
	var ids [][]byte
	for rows.Next() {
		var id []byte
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: prune %s: %w", thread, err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: prune %s: %w", thread, err)
	}
	for _, id := range ids {
		r, err := tx.StmtContext(ctx, s.stmts.pruneWrites).ExecContext(ctx, thread, id)
		if err != nil {
			return fmt.Errorf("sqlite: prune %s: %w", thread, err)
		}
		n, _ := r.RowsAffected()
		res.Writes += n
		if r, err = tx.StmtContext(ctx, s.stmts.pruneCheckpoint).ExecContext(ctx, thread, id); err != nil {
			return fmt.Errorf("sqlite: prune %s: %w", thread, err)
		}
		n, _ = r.RowsAffected()
		res.Checkpoints += n
	}
	return nil
}

func collectStrings(rows *sql.Rows, wrap func(error) error) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, wrap(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
	}
	return out, nil
}

// Vacuum rebuilds the database file without the pages pruning and deleted
// threads freed, and truncates the write-ahead log, so that the file
// shrinks. It takes the writer for as long as that lasts (seconds for a
// file of hundreds of megabytes): run it when the store is quiet (see
// `capgraph store prune --vacuum`).
func (s *Store) Vacuum(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("sqlite: vacuum: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("sqlite: vacuum: truncate the log: %w", err)
	}
	return nil
}
