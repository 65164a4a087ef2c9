// Package crashtest holds the kill -9 test of durable runs: the test binary
// re-executes itself as a child that runs multi-step graphs on a SQLite
// checkpoint store, the parent SIGKILLs it at random moments and restarts it
// with Resume, and then checks that every run finished, that no checkpoint the
// child acknowledged (printed after Put returned) was lost, and that no step
// whose checkpoint was acknowledged ran again. The package has no non-test code.
package crashtest
