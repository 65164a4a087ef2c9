// Package agui is the AG-UI protocol (docs/frontends.md): the request a
// client POSTs (Input), the events it reads (Event), Mapper, which turns
// one run's agent events into those events, keeping the bookkeeping the
// client's verifier checks (steps and messages closed before RUN_FINISHED,
// every tool call given a result, the shared state's plan in step with the
// checkpointed one), and the route's Handler, which opens the run and
// follows it through the server's turns.Turns (Deps).
package agui
