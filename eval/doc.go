// Package eval scores an application's agent against a set of cases kept
// beside its code: scripted conversations with expectations of the
// capabilities selected, planned and run (the trajectory), of the route
// (the severities met and where each went, retries, plans, the error
// report), of safety (no side effect planned, the exact action a human is
// asked to approve, forbidden capabilities), of the answer (text, a
// pattern, a number with its unit, a rubric for a judge model) and of
// limits (model calls, tokens, wall time).
//
// A case may inject failures into a capability (a severity, a timeout, a
// 429 with Retry-After, a panic, a hung call) without changing the
// application: every case run gets its own agent over a copy of the
// registry whose faulted capabilities are wrapped, and a fresh in-memory
// store. What a turn did is read from the agent's event stream (the
// events of agent.Run and the observer-only failure and route events),
// never from its text, and from the state it ended with.
//
// Run returns a Report: per-case results with the reason of every failed
// expectation, the pass rate of every metric against the file's
// thresholds, JSON and JUnit output, and Compare for two configurations.
// An application's go test calls Load, Run and Report.Err; the command
// line (capgraph eval, package cli) does the same. See docs/evaluation.md.
package eval
