// Package router decides where an agent turn goes next. Decide is a pure
// function of the state and a Config: it never sleeps, never mutates, never
// calls a model, and reads no clock. Every counter it relies on (attempts,
// plans made, reclassifications, node steps, tokens, the wall-clock limit) is
// written into the state by the node wrappers, so a run resumed from any
// checkpoint routes exactly as the original did.
//
// Priority order (see docs/error-handling.md):
//
//  1. the turn is done → End
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
package router
