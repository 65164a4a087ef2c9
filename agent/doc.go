// Package agent assembles the capgraph agent: it compiles the state graph from
// the capability registry, the infrastructure nodes, the router and the error
// node over a checkpoint store, and runs turns on threads. A turn is observed
// as an iter.Seq2[Event, error]; it ends with exactly one assistant message
// (an answer, clarifying questions, an approval request or an error report),
// or with a *FatalError.
package agent
