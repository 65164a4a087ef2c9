// Package runstoretest is the conformance suite of runstore.Store: every
// store that keeps run records (memory, SQLite, PostgreSQL) runs it from
// its tests (Run), as it runs checkpointtest for its checkpoints.
package runstoretest
