// Package checkpoint defines the Store that the graph engine writes after every
// step, and the records it stores: checkpoints (state + next nodes) and pending
// writes (results of concurrent branches that finished before their step did,
// errors, interrupts and resume values).
//
// Implementations live in sub-packages: memory (in-process; New keeps every
// checkpoint, NewLatestOnly each thread's latest), sqlite (the embedded
// default) and postgres (several replicas). Every implementation runs the
// conformance suite in checkpointtest (RunLatestOnly for a store without
// history).
//
// Leases: a Store may also be a Leaser, granting one owner at a time the
// right to run a thread for a TTL it renews while the run lasts. Replicas
// sharing a PostgreSQL store use the database's lease table; memory and
// SQLite embed LocalLeases, which excludes owners within one process only.
// A Put or PutWrites under a ctx carrying a lease (WithLease) is refused with
// ErrLeaseLost once that lease is no longer held (fencing), so a replica that
// lost its lease cannot overwrite the new holder's checkpoints.
package checkpoint
