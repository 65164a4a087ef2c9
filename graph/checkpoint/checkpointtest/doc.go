// Package checkpointtest is the conformance suite every checkpoint.Store must
// pass, in the manner of testing/slogtest: a store package calls
//
//	checkpointtest.Run(t, func(t *testing.T) checkpoint.Store { ... })
//
// from its tests, returning a fresh, empty store for each subtest.
//
// Beyond the method docs of checkpoint.Store, the suite pins down behaviour the
// engine and the server rely on, so that switching stores changes nothing:
//
//   - Put of an existing id replaces it; a checkpoint put out of order never
//     becomes the thread's latest (ids order checkpoints, not arrival).
//   - Writes are keyed by (checkpoint, task, kind); writing a key again replaces
//     the value in place, and Get returns writes in the order keys were first written.
//   - PutWrites on a checkpoint that does not exist is ErrNotFound; refused input
//     is an *InvalidError (ErrInvalid) and stores nothing.
//   - States, write values and metadata come back byte-equal; the store keeps
//     copies, never the caller's buffers.
//   - Empty State, Next and Metadata come back nil.
//   - Times come back in UTC truncated to whole microseconds (Precision); the
//     zero time stays zero.
//   - Threads are ordered by their latest checkpoint id, newest first, and
//     filtered on the latest checkpoint's metadata.
//   - A canceled or expired context makes every method fail with the context's
//     error and change nothing.
//   - For a checkpoint.Leaser: one owner at a time; the holder may re-acquire
//     and renew; an expired lease is taken over and can no longer be renewed;
//     releasing a lease no longer held frees nothing; a Put or PutWrites under
//     a lease that is no longer held (checkpoint.WithLease) stores nothing and
//     fails with ErrLeaseLost, also while racing the takeover.
//   - For a checkpoint.Claimer: only cut runs without a live lease are
//     claimed, and concurrent claims are disjoint.
//   - For a checkpoint.Pruner: Prune deletes every checkpoint of a finished
//     run (ended, or followed by a later run) but its last, with their
//     writes, and nothing else (not the latest run while unfinished, not the
//     thread summary, not records); Thread and FinishedBefore narrow it; a
//     Put ending a run under checkpoint.WithPruning prunes its thread; and
//     pruning beside a run in progress never fails or loses its writes.
package checkpointtest
