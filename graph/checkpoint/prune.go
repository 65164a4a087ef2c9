package checkpoint

import (
	"context"
	"time"
)

// Pruner is a store that can delete the intermediate checkpoints of finished
// runs: every checkpoint of such a run but its last, with their pending
// writes. A run is finished when its last checkpoint has no next nodes (it
// ended), or when a later run has started on its thread (it can no longer
// be resumed: a resume continues the thread's latest run). So pruning
// keeps
//
//   - the thread's latest checkpoint, and every checkpoint of its latest run
//     while that run is unfinished (running, interrupted for an approval,
//     failed, canceled): what Resume and the approvals need;
//   - the last checkpoint of every finished run: the state each turn ended
//     with (its conversation, plan, report), the thread's history;
//   - the thread's summary (Threads: its first and latest ids and times;
//     the first id may then name a pruned checkpoint), records (RecordLog)
//     and leases.
//
// A kept checkpoint's ParentID may name a pruned one. Pruning is safe while
// runs are in progress, in this process or in replicas sharing the store:
// it never deletes a checkpoint of an unfinished latest run, and runs of a
// thread are serialised by its lease (Leaser).
type Pruner interface {
	// Prune deletes the intermediate checkpoints of the finished runs opts
	// selects and returns what it deleted.
	Prune(ctx context.Context, opts PruneOptions) (PruneResult, error)
}

// PruneOptions selects the finished runs whose intermediate checkpoints
// Prune deletes.
type PruneOptions struct {
	// Thread limits pruning to one thread; empty means every thread.
	Thread string
	// Metadata limits pruning to the threads whose latest checkpoint has
	// every key with the same value (as ThreadFilter.Metadata): an
	// application's own threads in a store several share.
	Metadata map[string]string
	// FinishedBefore, when not zero, keeps the runs whose last checkpoint
	// was created at or after this time (those that finished more recently).
	FinishedBefore time.Time
}

// PruneResult counts what Prune deleted.
type PruneResult struct {
	Checkpoints int64 `json:"checkpoints"`
	Writes      int64 `json:"writes"` // pending writes of those checkpoints
}

type pruneKey struct{}

// WithPruning returns a ctx under which a Pruner's Put of a checkpoint that
// ends its run (no Next) also prunes that checkpoint's thread, in the same
// transaction (no commit of its own): the finished runs whose last
// checkpoint is older than keep before the new one's Created, or, with
// keep 0, every finished run, the one just ending included. A negative keep
// prunes nothing. Stores that are not Pruners ignore it.
func WithPruning(ctx context.Context, keep time.Duration) context.Context {
	return context.WithValue(ctx, pruneKey{}, keep)
}

// PruningFrom returns the options a Put under ctx (see WithPruning) of cp
// prunes with, and false when it prunes nothing.
func PruningFrom(ctx context.Context, cp Checkpoint) (PruneOptions, bool) {
	keep, ok := ctx.Value(pruneKey{}).(time.Duration)
	if !ok || keep < 0 || len(cp.Next) > 0 {
		return PruneOptions{}, false
	}
	opts := PruneOptions{Thread: cp.ThreadID}
	if keep > 0 {
		opts.FinishedBefore = cp.Created.Add(-keep)
	}
	return opts, true
}

// Transient reports whether cp, Put under ctx, is an intermediate checkpoint
// that the Put ending its run will prune at once (WithPruning with keep 0 and
// cp has next nodes): a store may spend less on keeping it (SQLite does not
// compress it).
func Transient(ctx context.Context, cp Checkpoint) bool {
	keep, ok := ctx.Value(pruneKey{}).(time.Duration)
	return ok && keep == 0 && len(cp.Next) > 0
}
