// Package router is the whole story of where an agent turn goes and of what
// happens when a step fails. It has two sides, both pure functions: they
// never sleep, never mutate, never call a model and read no clock (time and
// randomness are inputs), so a run resumed from any checkpoint routes, and
// records, exactly as the original did.
//
// Reading (router.go): Decide returns the next node(s) from the state and a
// Config. Every counter it relies on (attempts, plans made,
// reclassifications, node steps, tokens, the wall-clock limit) is written into
// the state by the node wrappers. Priority order (see docs/error-handling.md):
//
//  1. the turn is done → End; a step rejected by a human → respond (the
//     rest of the plan is cancelled; steps that ran beside it have finished)
//  2. a limit was exceeded (wall clock, node steps, tokens) → error node
//  3. a current error → by severity: RETRIABLE → the failed node at its
//     not-before time while attempts remain; REPLANNING → orchestrator within
//     max_planning_attempts; RECLASSIFICATION → classifier within
//     max_reclassifications; CRITICAL, FATAL or exhausted → error node
//  4. no task → task_extraction
//  5. no active capabilities → classifier
//  6. no plan → orchestrator (within max_planning_attempts)
//  7. plan approval on (Options.PlanApproval) and the plan not approved →
//     plan_approval
//  8. ready steps (dependencies done) → their capabilities, together
//  9. plan finished → respond
//
// Writing (failure.go): Record writes one failed attempt (a Failure, filled
// by the node's wrapper) into a state update and says what the wrapper must
// do (an Outcome). Severity → recovery:
//
//	severity                     Record                              then Decide
//	RETRIABLE, attempts left     a retry at its not-before time      the same node at that time
//	RETRIABLE, none left         a declared fallback, else failed    the fallback, else error node
//	REPLANNING                   a declared fallback, else recorded  orchestrator (budget), else error node
//	RECLASSIFICATION             recorded                            classifier (budget), else error node
//	CRITICAL                     a declared fallback, else failed    error node
//	FATAL                        Abort: nothing recorded             the run ends with a typed error
//	kind resource_exhausted      Escalate: nothing recorded          a human answers: retry or give up
//	out of time (Failure.Limit)  recorded, max_execution_time        error node
//
// A failure whose recovery the wrapper does not allow (a refusal, a human who
// gave up) is recorded as it is. An orchestrator failure classified
// REPLANNING uses up a planning attempt.
//
// Carrying (carry.go): Route is the route function of every node of the agent
// graph; the engine carries its decision to the nodes it starts, which read
// it with Carried (a capability node its plan step, the error node its
// cause), so a step's decision is taken once.
package router
