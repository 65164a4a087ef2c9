// Package graphtest helps test applications built on the graph engine.
//
// Clock is a virtual graph.Clock: a run's waits (retry delays, a route's
// NotBefore) move its time forward at once, so a test runs a whole retry
// schedule in microseconds and checks it to the nanosecond. Where a test can
// run inside a testing/synctest bubble, the default clock is already virtual
// there and no Clock is needed; graphtest.Clock is for tests that cannot (a
// real network listener, goroutines started outside the bubble).
package graphtest
