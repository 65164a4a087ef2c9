// Package runstore defines the run records a server keeps beside an
// agent's checkpoints, and what several server processes sharing one store
// need of it: the runs queue, the runs' events, wake-up signals and request
// counters. The checkpoint stores implement it beside checkpoint.Store
// (memory, SQLite and PostgreSQL keep records; PostgreSQL is the queue,
// the events, the signals and the counters too); the conformance suite is
// runstoretest. The server is its only user, so the graph engine's
// contracts (package graph/checkpoint) carry none of it.
//
// # Records
//
// A run record is a unit of work a caller acknowledged to someone (a
// client's "202 Accepted", the first byte of a stream): it is written
// durably before the acknowledgement, with what starts the run, and moves
// through
//
//	queued → running → done | failed | interrupted | canceled
//
// so that after a crash every acknowledged run can be found again and
// either carried out or marked failed with a reason. The store knows
// nothing of what a run does: Input and Result are the caller's JSON.
// Records are kept beside the checkpoints, in the same database, and a
// conditional update (Update.From) lets exactly one of several processes
// take a queued run.
//
// # Replicas
//
// Several processes sharing one store share its run records as a queue
// (Queue): a process claims a ready run under a lease it renews while the
// run goes on; a run whose owner stopped renewing is ready again and
// another process resumes it from its last checkpoint. The run's events
// are kept beside it (Events), so a process that does not run it streams
// it, and processes wake each other (Signals) instead of polling; request
// rates are counted for all of them (RateCounter). A store for one process
// needs none of these. See docs/deployment.md.
package runstore
