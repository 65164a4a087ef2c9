// Package graph is a generic state-graph engine. It knows nothing of agents.
//
// A graph has nodes, functions of (ctx, S) returning an update U, and edges:
// static ones and conditional ones whose route function returns one or several
// destinations. Several destinations run concurrently in one step, with a
// concurrency limit, and their updates are applied in the order the route named
// them, so a run is deterministic. Compile checks the definition and lists
// every problem in a *BuildError.
//
// After every step the engine writes a checkpoint (the encoded state and the
// next nodes) through a checkpoint.Store. A concurrent branch that finishes
// before its siblings records its update as a pending write, so a run resumed
// after a crash, a cancellation, a failure or an interrupt runs only the
// unfinished branches. Resume continues a thread from its last checkpoint with
// any engine instance sharing the store. Config.Durability says whether a
// step's checkpoint is durable before the next step starts (sync, the
// default) or is written while it runs, the run waiting for it only at
// Flush, an interrupt and its end (async). A route may also name a NotBefore
// time: the engine waits on its Clock, honouring cancellation and holding no
// goroutine, and since the time is in the checkpoint a resumed run waits only
// what is left.
//
// Time comes from Config.Clock (default SystemClock): event and checkpoint
// times, node durations and the NotBefore waits. To test a retry schedule
// without sleeping, run the graph inside a testing/synctest bubble, where the
// default clock is virtual (time.Since gives the exact schedule), or give it
// a graphtest.Clock, whose waits move its virtual time forward at once; see
// "Testing retry policies" in docs/error-handling.md.
//
// A route may carry metadata for the nodes it starts (Route.Meta: why they
// run, which part of the work is theirs), opaque to the engine, which keeps it
// with the next nodes until the step starts and hands it to each node through
// its context (RouteMeta), so a node need not evaluate the routing again.
// Metadata is not stored in checkpoints: a node started by Resume, in this
// process or another, gets none, and computes it from the state it is given,
// which is the state the route decided on (a route is a pure function of the
// state, so the result is the same). Carrying it costs no allocation.
//
// One run at a time per thread of a Compiled graph: a run takes its thread
// for its duration and another fails with ErrThreadBusy. This set of busy
// threads is the process's one record of who runs what; a caller that does
// several runs of a thread in a row without letting another in (the agent
// package: read the state, end a waiting run, start the turn) holds the
// thread with HoldThread and runs under the hold (WithThreadHold). Other
// processes sharing the store are the caller's to exclude, with leases
// (checkpoint.Leaser, checkpoint.WithLease).
//
// A node can interrupt the run with a payload (Interrupt); the run stops with
// a checkpoint and no goroutine waits. Resume with a value stores the answer
// in a checkpoint of its own, written with it in one transaction when the
// store is a checkpoint.TuplePutter (every store of this module), and
// re-enters the node, which reads it with ResumeValue.
//
// Runs are observed as an iter.Seq2[Event, error] (Stream) or as a Result with
// the full trace (Run; a Trace, recorded compactly and materialised on
// demand): failures are data, inspectable after the fact. Errors
// are typed (*NodeError, *PanicError, *InvalidTransitionError,
// *StepLimitError, *BuildError, each matching a sentinel with errors.Is), and
// no panic in a node, route, Apply, Codec or Store crosses Run.
//
// Compiled.Topology describes a compiled graph (entry, each node's edge kind
// and declared targets, terminal nodes) for drawings and checks; a route
// added with AddNamedConditionalEdges carries a name, so nodes sharing one
// routing decision can be drawn around it.
package graph
