// Package effectcrash holds the kill -9 test of side effects: a change
// runs at most once, whatever point of its attempt a crash cuts, and an
// attempt whose outcome nobody can establish is reported to the user as
// such (issue 25).
//
// The machine is a journal file: every real effect appends one line (its
// idempotency key, target and value; O_APPEND, fsync) before the process
// goes on, and every call of a capability appends to a calls file, so the
// parent counts effects and calls per attempt after any kill. The
// capabilities that act on it set QN to 2 A, one per way of settling an
// attempt in doubt: set_readback (reads the target's last journal value
// back), set_reconcile (looks its key up in the journal), set_blind
// (neither: unconfirmed), set_idempotent (deduplicates by key: runs again),
// and the two tools of a stdio MCP server — the test binary itself, over
// the MCP Go SDK — append_entry (no annotations: not idempotent) and
// set_value (idempotentHint; setting a value it already holds changes
// nothing).
//
// The test binary re-executes itself as a child (internal/killtest). Each
// child first claims the turns the previous one left unfinished, as every
// replica's recovery does (agent.ClaimUnfinished: on SQLite at once, on
// PostgreSQL once the killed replica's 2 s leases have expired), then
// starts one turn per kill point and capability, answers its approval with
// the human's "yes", and stops dead — the goroutine blocks for good — at
// the turn's point: before the started record is appended (an audit log
// wrapper), in the capability or MCP tool before its effect and after it,
// or after the ended record is appended (the wrapper again, before the
// step's checkpoint). Once every turn said it stopped, the parent sends
// SIGKILL, so each kill cuts one attempt at each point for each
// capability. The turns whose attempt runs again after the restart (found
// not applied, or idempotent) are cut a second time while it runs, at each
// point in turn, round after round.
//
// After the next child recovered a turn, the parent checks it against what
// the store, the journal and the audit log hold: the journal never has two
// effects for one key or one turn; every attempt's ended outcome is
// confirmed (replayed, or reconciled as applied), failed as not applied
// and then run exactly once more, or unconfirmed — and then never called
// again, with the turn ending in an error report saying the change may or
// may not have been carried out; the approval is recorded once; every turn
// ends with one message.
//
// TestKill9DuringEffects runs on SQLite (one process, restarted),
// TestKill9DuringEffectsReplicaTakeover on PostgreSQL replicas
// (CAPGRAPH_TEST_POSTGRES, from scripts/setup/postgres.sh). Each makes 20
// kills by default, shared by two independent deployments (an SQLite file
// or a schema each: 10 kills in each) that run at once, so that one works
// while the other waits for the disk or a lease. CAPGRAPH_EFFECTCRASH_ROUNDS=N
// makes N kills per test, CAPGRAPH_EFFECTCRASH_LEASE_TTL sets the
// replicas' lease. TestCutIdempotentAttemptHasItsEnd and
// TestUnconfirmedReportDoesNotSayNothingWasDone keep two defects the crash
// test found fixed. The package has no non-test
// code.
package effectcrash
