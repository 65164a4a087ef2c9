// Package sqlite is the embedded, default checkpoint.Store: one SQLite file
// through modernc.org/sqlite (pure Go, no cgo).
//
// Durability: the database runs in WAL mode with synchronous=FULL, so Put and
// PutWrites have fsynced the write-ahead log when they return; a process
// crash (kill -9) or power loss after that cannot lose the checkpoint.
//
// Concurrency: all writes go through one connection whose transactions begin
// IMMEDIATE, so they never fail with SQLITE_BUSY on a read-to-write upgrade
// (deferred transactions do, measured); reads use a separate pool and see the
// last committed state without blocking the writer. Several processes may
// open the same file: they queue on SQLite's file lock for up to
// Config.BusyTimeout.
//
// Group commit: a write (Put, PutWrites) that finds the writer idle commits
// at once; writes arriving while a commit is in flight are then committed
// together, in one transaction and one fsync (up to Config.MaxBatch), and
// each returns only once that commit has. A write whose ctx ended while it
// was queued, or whose lease was lost, or a PutWrites on a missing
// checkpoint, fails alone and stores nothing; any other database error rolls
// the group back and its writes are retried one per transaction. A write
// under runstore.Deferrable (a server's run record: its end, written after
// the answer went out, or a new thread's first, which the thread's write
// follows) does not commit alone: it waits, up to 5 ms, for another commit
// to take it along.
//
// The schema is versioned in a schema_migrations table and upgraded by New.
package sqlite
