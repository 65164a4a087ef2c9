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
// The schema is versioned in a schema_migrations table and upgraded by New.
package sqlite
