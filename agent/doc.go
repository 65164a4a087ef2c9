// Package agent assembles the capgraph agent: it compiles the state graph from
// the capability registry, the infrastructure nodes, the router and the error
// node over a checkpoint store, and runs turns on threads. A turn is observed
// as an iter.Seq2[Event, error]; it ends with exactly one assistant message
// (an answer, clarifying questions, an approval request or an error report),
// or with a *FatalError.
//
// Safety is enforced here, in code: the configured Options are the ceiling
// of every turn (a request may only tighten them, options.go), and a step of
// a capability with side effects runs only after the execution gate in the
// step wrapper (gate.go) — this process's write switch, a human's approval
// bound to the step's exact action, the user's intent and the caller's
// allowed capabilities — with every attempt recorded in the store's audit
// log (audit.go). See docs/safety.md.
package agent
