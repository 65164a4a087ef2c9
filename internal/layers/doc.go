// Package layers holds the test that keeps capgraph's package layers honest
// (docs/architecture.md, "Package layers"): the rules the code used to state
// only in comments, checked with `go list` on every test run.
package layers
