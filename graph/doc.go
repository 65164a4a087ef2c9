// Package graph is a generic state-graph engine. It knows nothing of agents.
//
// A graph has nodes, functions of (ctx, S) returning an update U, and edges:
// static ones and conditional ones whose route function returns one or several
// destinations. Several destinations run concurrently in one step, with a
// concurrency limit, and their updates are applied in the order the route named
// them, so a run is deterministic. After every step the engine writes a
// checkpoint through a checkpoint.Store; a run can be continued from its last
// checkpoint by any engine instance sharing the store. A node can interrupt the
// run with a payload; Resume re-enters it with the answer, and no goroutine
// waits in between.
//
// Runs are observed as an iter.Seq2[Event, error] (Stream) or as a Result with
// the full trace (Run): failures are data, inspectable after the fact.
package graph
