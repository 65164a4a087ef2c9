// Package memory is an in-process checkpoint.Store. It keeps nothing across
// restarts; use it for tests and for `--store memory`. It passes the same
// conformance suite as the durable stores and normalises what it stores the
// same way (copies, UTC microsecond times), so tests written against it hold
// for SQLite and PostgreSQL too.
package memory
