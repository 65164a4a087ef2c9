// Package tour is the error-tour example: scripted capabilities that fail
// in each way capgraph knows — a transient failure that recovers, retries
// that run out, a failure that needs a new plan, one that needs a new
// capability selection, a critical failure, a fatal one, resource
// exhaustion, and a failure a fallback capability absorbs — so a user can
// watch every severity and the error report. A keyword in the question
// selects the scenario (see Scenarios).
package tour
