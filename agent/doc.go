// Package agent assembles the capgraph agent: it compiles the state graph from
// the capability registry, the infrastructure nodes, the router and the error
// node over a checkpoint store, and runs turns on threads. A turn is observed
// as an iter.Seq2[Event, error]; it ends with exactly one assistant message
// (an answer, clarifying questions, an approval request or an error report),
// or with a *FatalError.
//
// Every node of the graph is wrapped: the wrapper counts the step, bounds it
// by the turn's wall clock and, when the node fails, describes the failure
// to router.Record, which decides what it means (retry, fallback,
// escalation to a human, FATAL abort, the error the router routes); the
// router's decision that started a node is carried to it by the engine
// (router.Carried). See docs/error-handling.md.
//
// Safety is enforced here, in code: the configured Options are the ceiling
// of every turn (a request may only tighten them), and a step of a
// capability with side effects runs only after the execution gate in the
// step wrapper — this process's write switch, a human's approval bound to
// the step's exact action, the user's intent and the caller's allowed
// capabilities — with every attempt recorded in the store's audit log. See
// docs/safety.md. A write acts on the turn's named target (the machine, a
// simulator), whose posture is this process's configuration (target.go).
//
// A thread's kept checkpoints are its history (History); any of them can be
// forked into a new thread (Fork), replayed under another configuration
// (Replay, ReplayConversation) and compared with the original (Compare); a
// fork writes to the simulated target unless a human names another. See
// docs/time-travel.md.
//
// A run owns its thread for as long as it lasts: the graph's hold in this
// process and the store's lease across replicas (LeaseConfig). See
// docs/architecture.md, "Thread ownership".
//
// Whoever creates an Agent closes it (Agent.Close) before closing its
// store: Close stops the runs in progress and joins every goroutine the
// agent started. See docs/architecture.md, "Who owns which goroutine".
package agent
