package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

var _ checkpoint.Pruner = (*Store)(nil)

// pruneSQL deletes the checkpoints of the finished runs of the threads $1
// (those whose last checkpoint has no next nodes, or is not the thread's
// latest) but each run's last, of runs whose last checkpoint is older than
// $2 when $2 is not NULL, and returns how many checkpoints and pending
// writes it deleted (the writes go by the foreign key's cascade). guard is
// a condition the statement runs under (a Put's own checkpoint existing).
// One statement, one snapshot: a run in progress is never finished in it.
// PostgreSQL 15 has no max(uuid), hence DISTINCT ON for each run's last.
func pruneSQL(guard string) string {
	return `WITH last AS (
			SELECT DISTINCT ON (thread_id, run_id) thread_id, run_id, id, next, created
			FROM {{checkpoints}} WHERE thread_id = ANY($1::text[]) ` + guard + `
			ORDER BY thread_id, run_id, id DESC),
		done AS (
			SELECT l.thread_id, l.run_id, l.id FROM last l JOIN {{threads}} t ON t.thread_id = l.thread_id
			WHERE (l.next IS NULL OR l.id <> t.latest_id) AND ($2::timestamptz IS NULL OR l.created < $2::timestamptz)),
		doomed AS (
			SELECT c.thread_id, c.id FROM {{checkpoints}} c JOIN done d
			ON c.thread_id = d.thread_id AND c.run_id IS NOT DISTINCT FROM d.run_id AND c.id <> d.id),
		w AS (
			SELECT count(*) AS n FROM {{writes}} w JOIN doomed d ON w.thread_id = d.thread_id AND w.checkpoint_id = d.id),
		c AS (
			DELETE FROM {{checkpoints}} c USING doomed d WHERE c.thread_id = d.thread_id AND c.id = d.id RETURNING 1)
		SELECT (SELECT count(*) FROM c), (SELECT n FROM w)`
}

// pruneBatch is how many threads one statement of a whole-store Prune
// prunes, so that a large store is pruned in many short transactions.
const pruneBatch = 256

// Prune deletes the intermediate checkpoints of finished runs (see
// checkpoint.Pruner), one statement (one transaction) per 256 threads.
// Replicas may prune at the same time as each other and as runs. Freed
// space is reused by later rows once autovacuum (or Vacuum) has run.
func (s *Store) Prune(ctx context.Context, opts checkpoint.PruneOptions) (checkpoint.PruneResult, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.PruneResult{}, err
	}
	threads := []string{opts.Thread}
	if opts.Thread == "" || len(opts.Metadata) > 0 {
		q, args := s.expand(`SELECT thread_id FROM {{threads}} WHERE true`), []any{}
		if opts.Thread != "" {
			args = append(args, opts.Thread)
			q += ` AND thread_id = $` + strconv.Itoa(len(args))
		}
		if len(opts.Metadata) > 0 {
			m, err := sqlrow.MapArg(opts.Metadata)
			if err != nil {
				return checkpoint.PruneResult{}, fmt.Errorf("postgres: prune: encode filter: %w", err)
			}
			args = append(args, m)
			q += ` AND metadata @> $` + strconv.Itoa(len(args)) + `::jsonb`
		}
		rows, err := s.pool.Query(ctx, q+` ORDER BY thread_id`, args...)
		if err != nil {
			return checkpoint.PruneResult{}, fmt.Errorf("postgres: prune: list threads: %w", err)
		}
		threads = threads[:0]
		for rows.Next() {
			var th string
			if err := rows.Scan(&th); err != nil {
				rows.Close()
				return checkpoint.PruneResult{}, fmt.Errorf("postgres: prune: list threads: %w", err)
			}
			threads = append(threads, th)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return checkpoint.PruneResult{}, fmt.Errorf("postgres: prune: list threads: %w", err)
		}
	}
	var total checkpoint.PruneResult
	for len(threads) > 0 {
		batch := threads[:min(pruneBatch, len(threads))]
		threads = threads[len(batch):]
		var res checkpoint.PruneResult
		if err := s.pool.QueryRow(ctx, s.q.prune, batch, timeArg(opts.FinishedBefore)).Scan(&res.Checkpoints, &res.Writes); err != nil {
			return total, fmt.Errorf("postgres: prune: %w", err)
		}
		total.Checkpoints += res.Checkpoints
		total.Writes += res.Writes
	}
	return total, nil
}

// Vacuum runs VACUUM (ANALYZE) on the checkpoint and write tables: the
// space pruning freed is reused by later rows (the files do not shrink;
// VACUUM FULL, which locks the tables, would do that). Autovacuum does the
// same in time.
func (s *Store) Vacuum(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, s.expand(`VACUUM (ANALYZE) {{checkpoints}}, {{writes}}`)); err != nil {
		return fmt.Errorf("postgres: vacuum: %w", err)
	}
	return nil
}
