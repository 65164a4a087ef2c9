// Package memory is an in-process checkpoint.Store. It keeps nothing across
// restarts; use it for tests and for `--store memory`. New keeps every
// checkpoint and passes the same conformance suite as the durable stores; it
// normalises what it stores the same way (copies, UTC microsecond times), so
// tests written against it hold for SQLite and PostgreSQL too. NewLatestOnly
// keeps only each thread's latest checkpoint, for purely in-process runs
// that need no history.
package memory
