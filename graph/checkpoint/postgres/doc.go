// Package postgres is a checkpoint.Store in PostgreSQL through jackc/pgx v5
// (pgxpool), for deployments with several replicas sharing one database.
//
// Correctness needs no in-process state: every method is one statement or one
// transaction, checkpoints and writes are upserted with INSERT … ON CONFLICT,
// a thread's summary row follows its greatest checkpoint id whatever order
// replicas write in, Put and DeleteThread of one thread exclude each other
// through a per-thread advisory lock (Puts share it), and schema migrations run
// under a transaction-scoped advisory lock so replicas starting together
// migrate once.
//
// Leases (checkpoint.Leaser): a leases table, one row per leased thread, taken
// with one INSERT … ON CONFLICT DO UPDATE … WHERE expired OR same owner, expiry
// judged by the database clock. Put and PutWrites under a ctx carrying a lease
// (checkpoint.WithLease) read the lease row FOR SHARE in the same transaction
// as the write, so a write of a replica that lost its lease is refused
// (checkpoint.ErrLeaseLost) and a takeover waits for a write in flight.
//
// Durability: Put and PutWrites return after the server committed; with the
// default synchronous_commit=on that is after the WAL was flushed.
//
// Tables live in Config.Schema when set (created if missing), otherwise in the
// connection's search_path (normally public).
package postgres
